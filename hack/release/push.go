package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/lohisoft/crawl-operator/hack/release/helmchart"
)

// Pushed says where a release landed.
type Pushed struct {
	Image     string            // REGISTRY/crawl-operator@sha256:… (the index)
	Platforms map[string]string // the platform images, by arch, the same way
	Chart     string            // REGISTRY/charts/crawl-operator@sha256:…
	ChartURL  string            // oci://REGISTRY/charts/crawl-operator, for helm pull --version
	PlainHTTP bool
}

// Push publishes the release in o.Out (made by Build) to registry: the
// image index as REGISTRY/crawl-operator:VERSION, the chart under
// oci://REGISTRY/charts, a cosign signature of each, and each platform
// image's SBOM as a signed CycloneDX attestation.
func Push(ctx context.Context, o Options, registry string, insecure bool) (Pushed, error) {
	start := time.Now()
	var p Pushed
	chart, err := chartVersion(o.Version)
	if err != nil {
		return p, err
	}
	if registry == "" {
		return p, fmt.Errorf("no registry: set REGISTRY=HOST:PORT (bin/devcluster registry up serves one on 127.0.0.1:5000)")
	}
	f := files(o.Out, o.Version)
	for _, file := range []string{f.Layout, f.Chart, f.PublicKey, f.SBOMs[Arches[0]]} {
		if _, err := os.Stat(file); err != nil {
			return p, fmt.Errorf("%w: run make release VERSION=%s first", err, o.Version)
		}
	}
	t, err := tools(o.Root)
	if err != nil {
		return p, err
	}
	if o.Key == "" {
		if _, err := os.Stat(f.PublicKey[:len(f.PublicKey)-len(".pub")] + ".key"); err != nil {
			return p, fmt.Errorf("no COSIGN_KEY and no development key in %s: push with the key the release was built with", o.Out)
		}
	}
	tmp, err := os.MkdirTemp("", "crawl-operator-push")
	if err != nil {
		return p, err
	}
	defer os.RemoveAll(tmp)
	signer, _, err := releaseKey(ctx, t.Cosign, o.Key, o.Out, tmp)
	if err != nil {
		return p, err
	}
	idx, err := layoutIndex(f.Layout, o.Version)
	if err != nil {
		return p, err
	}
	p.PlainHTTP = plainHTTP(registry, insecure)
	var nameOpts []name.Option
	if p.PlainHTTP {
		nameOpts = append(nameOpts, name.Insecure)
	}
	repo := registry + "/crawl-operator"
	tag, err := name.NewTag(repo+":"+o.Version, nameOpts...)
	if err != nil {
		return p, err
	}
	fmt.Fprintf(o.Log, "pushing the image index to %s\n", tag)
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx)); err != nil {
		return p, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return p, err
	}
	p.Image = repo + "@" + digest.String()
	p.Platforms = map[string]string{}
	im, err := idx.IndexManifest()
	if err != nil {
		return p, err
	}
	for _, d := range im.Manifests {
		if d.Platform != nil {
			p.Platforms[d.Platform.Architecture] = repo + "@" + d.Digest.String()
		}
	}

	fmt.Fprintf(o.Log, "pushing the chart to oci://%s/charts\n", registry)
	chartDigest, err := helmchart.Helm{Bin: t.Helm, Home: filepath.Join(tmp, "helm")}.Push(ctx, f.Chart, "oci://"+registry+"/charts", p.PlainHTTP)
	if err != nil {
		return p, err
	}
	p.ChartURL = "oci://" + registry + "/charts/crawl-operator"
	p.Chart = registry + "/charts/crawl-operator@" + chartDigest

	fmt.Fprintln(o.Log, "signing the index and the chart, attaching the SBOMs")
	reg := registryFlags(p.PlainHTTP)
	for _, ref := range []string{p.Image, p.Chart} {
		if err := signer.Sign(ctx, ref, reg); err != nil {
			return p, err
		}
	}
	for _, a := range Arches {
		if err := signer.AttestSBOM(ctx, p.Platforms[a], f.SBOMs[a], reg); err != nil {
			return p, err
		}
	}
	fmt.Fprintf(o.Log, "pushed %s in %.0fs:\n  image %s\n  chart %s (helm pull %s --version %s)\n", o.Version, time.Since(start).Seconds(), p.Image, p.Chart, p.ChartURL, chart)
	fmt.Fprintf(o.Log, "verify: bin/cosign/cosign verify --key %s --insecure-ignore-tlog %s%s\n", f.PublicKey, flagsText(reg), p.Image)
	return p, nil
}

// registryFlags let cosign reach a plain-HTTP registry.
func registryFlags(plain bool) []string {
	if !plain {
		return nil
	}
	return []string{"--allow-insecure-registry", "--allow-http-registry"}
}

func flagsText(flags []string) string {
	s := ""
	for _, f := range flags {
		s += f + " "
	}
	return s
}

// layoutIndex is the image index tagged version in an OCI image layout.
func layoutIndex(dir, version string) (v1.ImageIndex, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Annotations["org.opencontainers.image.ref.name"] == version {
			return top.ImageIndex(d.Digest)
		}
	}
	return nil, fmt.Errorf("%s has no image tagged %s: run make release VERSION=%s", dir, version, version)
}
