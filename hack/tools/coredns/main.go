// Command coredns is the dev cluster's DNS server: CoreDNS from its module
// at the version go.mod pins, with only the plugins the cluster's Corefile
// uses compiled in (the upstream binary carries every cloud provider's
// SDK, several minutes more of build on two cores for nothing used here).
// The same binary is the dev internet's authoritative server (file), to
// which the cluster's forwards every other name (forward).
// This is CoreDNS's documented way to choose plugins at compile time: a
// main that imports them and runs coremain.
package main

import (
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/file"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"

	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
