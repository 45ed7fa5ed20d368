//go:build tools

// Package tools pins Flux's controllers, which make demo-gitops and the Flux
// end-to-end test run against the dev cluster, so that go mod tidy records
// every dependency their commands need.
package tools

import (
	_ "github.com/fluxcd/helm-controller"
	_ "github.com/fluxcd/kustomize-controller"
	_ "github.com/fluxcd/source-controller"
)
