package main

// CA roots built into the binary: crypto/x509 uses them when the system has
// none, as in the project's base-less image (make image), so HTTPS
// certificates verify there too.
import _ "golang.org/x/crypto/x509roots/fallback"
