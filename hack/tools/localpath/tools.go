//go:build tools

// Package tools pins local-path-provisioner, the dev cluster's dynamic
// storage provisioner (kind's choice), so that `go mod tidy` records every
// dependency its command needs.
package tools

import _ "github.com/rancher/local-path-provisioner"
