//go:build tools

// Package tools pins the cosign CLI that hack/release runs, so that
// `go mod tidy` records its dependencies.
package tools

import _ "github.com/sigstore/cosign/v3/cmd/cosign"
