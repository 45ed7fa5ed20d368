//go:build tools

// Package tools pins the cyclonedx-gomod CLI that hack/release runs, so
// that `go mod tidy` records its dependencies.
package tools

import _ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
