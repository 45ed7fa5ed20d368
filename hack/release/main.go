// Command release makes a release of crawl-operator into dist/ and
// publishes it to an OCI registry (make release, make release-push):
//
//	go run ./hack/release build --version v0.2.0 [--out dist] [--key cosign.key] [--allow-dirty]
//	go run ./hack/release push --version v0.2.0 --registry HOST:PORT [--out dist] [--key cosign.key] [--insecure]
//
// build writes the operator image (hack/image's build of the Dockerfile,
// for linux/amd64 and linux/arm64) as one OCI image index in an OCI image
// layout (dist/image, tagged with the version), the Helm chart packaged
// with the version, a CycloneDX SBOM of each platform image taken from
// its binaries' build information, cosign signatures of the index and the
// chart, and the public key to verify them. Two builds of one commit give
// the same index digest: the binaries are built with -trimpath and the
// image's times are the commit's.
//
// push writes that index to REGISTRY/crawl-operator:VERSION, the chart to
// oci://REGISTRY/charts, signs both where they landed and attaches each
// SBOM to its platform image as a signed CycloneDX attestation; `cosign
// verify` and `helm pull` then work against the registry.
//
// Both sign with the cosign key --key names (COSIGN_PASSWORD unlocks it),
// or, without one, with a development key generated into dist/: fine for
// trying the release machinery, not for a real release.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/lohisoft/crawl-operator/internal/repo"
)

const usage = `usage: release build --version vX.Y.Z [--out dist] [--key FILE] [--allow-dirty]
       release push --version vX.Y.Z --registry HOST:PORT [--out dist] [--key FILE] [--insecure]`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "build" && args[0] != "push") {
		return errors.New(usage)
	}
	root, err := repo.RootOfWorkingDir()
	if err != nil {
		return err
	}
	o := Options{Root: root, Log: os.Stdout}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.StringVar(&o.Version, "version", "", "The release's version, vX.Y.Z (make: VERSION).")
	fs.StringVar(&o.Out, "out", "dist", "Directory of the release's files.")
	fs.StringVar(&o.Key, "key", "", "cosign private key (make: COSIGN_KEY); without one a development key is generated into --out.")
	fs.BoolVar(&o.AllowDirty, "allow-dirty", false, "build: make the release from a working tree with uncommitted changes (make: ALLOW_DIRTY=1).")
	registry := fs.String("registry", "", "push: the registry, HOST:PORT (make: REGISTRY).")
	insecure := fs.Bool("insecure", false, "push: the registry speaks plain HTTP (implied for loopback addresses; make: INSECURE=1).")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if !filepath.IsAbs(o.Out) {
		o.Out = filepath.Join(root, o.Out)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if args[0] == "build" {
		_, err := Build(ctx, o)
		return err
	}
	_, err = Push(ctx, o, *registry, *insecure)
	return err
}
