//go:build tools

// Package tools pins the helm CLI that `make demo-helm` and the Helm
// end-to-end tests run, so that `go mod tidy` records its dependencies.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
