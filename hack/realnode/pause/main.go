// Command pause is the sandbox ("pause") process of the dev cluster's real
// node: containerd starts it first in every Pod to hold the Pod's
// namespaces. The upstream pause image cannot be pulled here, so the image
// tool builds this one (go run ./hack/image --pause). It reaps children and
// exits on SIGINT or SIGTERM, like the upstream pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
