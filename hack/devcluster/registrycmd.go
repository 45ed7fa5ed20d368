package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/lohisoft/crawl-operator/hack/devcluster/registry"
)

// registryName is the registry's process in the state directory, where
// `devcluster down` stops it with the demos' other processes.
const registryName = "registry"

// registryCommand is `devcluster registry up [--addr A] [--root R]`,
// `registry down` and `registry serve --addr A --root R`: an OCI registry
// on this machine for `make release-push` and the dev cluster. up runs
// serve in the background through `proc start`, so the registry is kept,
// found and stopped like the demos' processes; its blobs stay in
// .dev/registry across restarts.
func registryCommand(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("registry wants up [--addr HOST:PORT] [--root DIR], down, or serve --addr HOST:PORT --root DIR")
	}
	fs := flag.NewFlagSet("registry "+args[0], flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:5000", "Address to serve on; loopback, since the registry has no TLS and no auth.")
	root := fs.String("root", defaultDevDir("registry"), "Directory of the registry's blobs and manifests.")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "up":
		self, err := os.Executable()
		if err != nil {
			return err
		}
		if err := procCommand([]string{"start", registryName, "--listen", *addr, "--", self, "registry", "serve", "--addr", *addr, "--root", abs(*root)}); err != nil {
			return err
		}
		fmt.Printf("registry on %s (make release-push REGISTRY=%s); storage %s\n", *addr, *addr, abs(*root))
		return nil
	case "down":
		return procCommand([]string{"stop", registryName})
	case "serve":
		if err := os.MkdirAll(*root, 0o755); err != nil {
			return err
		}
		s, err := registry.Start(filepath.Clean(*root), *addr)
		if err != nil {
			return err
		}
		fmt.Println("registry serving", *root, "on", s.Addr)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		<-ctx.Done()
		return s.Close()
	}
	return fmt.Errorf("registry %s: want up, down or serve", args[0])
}
