//go:build tools

// Package tools pins Flux's kustomize-controller, which `make demo-gitops` and the Flux
// end-to-end test run against the dev cluster, so that `go mod tidy`
// records every dependency its command needs.
package tools

import _ "github.com/fluxcd/kustomize-controller"
