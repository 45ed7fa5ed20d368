package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/lohisoft/crawl-operator/hack/release/changelog"
	"github.com/lohisoft/crawl-operator/hack/release/helmchart"
)

// Options say which release to make or push, and where.
type Options struct {
	Root    string // the checkout
	Version string // vX.Y.Z
	Out     string // dist/
	// Key is the cosign private key; "" means a development key in Out.
	Key        string
	AllowDirty bool
	Log        io.Writer
}

// Repository is where the release's image lives; the chart's default
// image (values.yaml) names it, and tags it with the chart's appVersion.
const Repository = "ghcr.io/lohisoft/crawl-operator"

// Arches are the platforms of the image index, all linux.
var Arches = []string{"amd64", "arm64"}

// Tools are the programs a release runs, built by make targets into bin/.
type Tools struct{ Cosign, Helm, CycloneDX string }

func tools(root string) (Tools, error) {
	t := Tools{
		Cosign:    filepath.Join(root, "bin", "cosign", "cosign"),
		Helm:      filepath.Join(root, "bin", "helm"),
		CycloneDX: filepath.Join(root, "bin", "cyclonedx", "cyclonedx-gomod"),
	}
	for p, target := range map[string]string{t.Cosign: "cosign-bin", t.Helm: "helm-bin", t.CycloneDX: "cyclonedx-bin"} {
		if _, err := os.Stat(p); err != nil {
			return t, fmt.Errorf("no %s: run make %s", p, target)
		}
	}
	return t, nil
}

// Files are where a release's files are in Out.
type Files struct {
	Layout    string            // the OCI image layout
	Index     string            // the image index manifest, as signed
	Chart     string            // the packaged chart
	PublicKey string            // verifies every signature
	SBOMs     map[string]string // by arch
}

func files(out, version string) Files {
	chart, _ := chartVersion(version)
	f := Files{
		Layout:    filepath.Join(out, "image"),
		Index:     filepath.Join(out, "image-index.json"),
		Chart:     filepath.Join(out, "crawl-operator-"+chart+".tgz"),
		PublicKey: filepath.Join(out, "cosign.pub"),
		SBOMs:     map[string]string{},
	}
	for _, a := range Arches {
		f.SBOMs[a] = filepath.Join(out, "sbom-linux-"+a+".cdx.json")
	}
	return f
}

// bundleSuffix names a file's signature: file.sigstore.json, the
// Sigstore bundle cosign writes.
const bundleSuffix = ".sigstore.json"

// Result is what a build made.
type Result struct {
	Files
	IndexDigest v1.Hash
	Platforms   map[string]v1.Hash // image digests by arch
	DevKey      bool
}

// Build makes the release: see the package comment.
func Build(ctx context.Context, o Options) (Result, error) {
	start := time.Now()
	res := Result{Files: files(o.Out, o.Version), Platforms: map[string]v1.Hash{}}
	chart, err := chartVersion(o.Version)
	if err != nil {
		return res, err
	}
	text, err := os.ReadFile(filepath.Join(o.Root, "CHANGELOG.md"))
	if err != nil {
		return res, fmt.Errorf("%w: a release needs CHANGELOG.md with an entry for %s", err, o.Version)
	}
	entry, err := changelog.Find(string(text), o.Version)
	if err != nil {
		return res, err
	}
	t, err := tools(o.Root)
	if err != nil {
		return res, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return res, err
	}
	tmp, err := os.MkdirTemp("", "crawl-operator-release")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	src, err := source(ctx, o, entry, tmp)
	if err != nil {
		return res, err
	}
	commit, epoch, dirty, err := gitState(ctx, src)
	if err != nil {
		return res, err
	}
	if dirty {
		if !o.AllowDirty {
			return res, errors.New("the working tree has uncommitted changes (git status): a release is the build of one commit; commit or stash them, or set ALLOW_DIRTY=1 to build anyway for a try")
		}
		fmt.Fprintln(o.Log, "WARNING: the working tree has uncommitted changes: this build is not the commit's (its binaries say vcs.modified=true); never publish it")
	}
	signer, dev, err := releaseKey(ctx, t.Cosign, o.Key, o.Out, tmp)
	if err != nil {
		return res, err
	}
	res.DevKey = dev

	images := map[string]v1.Image{}
	for _, arch := range Arches {
		fmt.Fprintf(o.Log, "building the linux/%s image\n", arch)
		img, err := platformImage(ctx, o.Root, src, tmp, arch, Repository+":"+o.Version, epoch)
		if err != nil {
			return res, err
		}
		images[arch] = img
		if res.Platforms[arch], err = img.Digest(); err != nil {
			return res, err
		}
		if err := writePlatformSBOM(ctx, t.CycloneDX, img, filepath.Join(tmp, arch), o.Version, arch, res.SBOMs[arch]); err != nil {
			return res, err
		}
	}
	idx, err := imageIndex(images, Arches, map[string]string{
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": commit,
		"org.opencontainers.image.created":  time.Unix(epoch, 0).UTC().Format(time.RFC3339),
		"org.opencontainers.image.title":    "crawl-operator",
	})
	if err != nil {
		return res, err
	}
	if res.IndexDigest, err = idx.Digest(); err != nil {
		return res, err
	}
	if err := writeLayout(res.Layout, idx, o.Version); err != nil {
		return res, err
	}
	raw, err := idx.RawManifest()
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(res.Index, raw, 0o644); err != nil {
		return res, err
	}

	fmt.Fprintln(o.Log, "packaging the chart")
	if err := packageChart(ctx, t.Helm, src, tmp, chart, o.Version, res.IndexDigest, o.Out); err != nil {
		return res, err
	}
	fmt.Fprintln(o.Log, "signing")
	if err := signer.PublicKey(ctx, res.PublicKey); err != nil {
		return res, err
	}
	for _, f := range []string{res.Index, res.Chart} {
		if err := signer.SignBlob(ctx, f, f+bundleSuffix); err != nil {
			return res, err
		}
	}
	fmt.Fprintf(o.Log, "release %s (commit %s) in %s, %.0fs:\n", o.Version, commit[:12], o.Out, time.Since(start).Seconds())
	fmt.Fprintf(o.Log, "  image index %s (%s:%s)\n", res.IndexDigest, Repository, o.Version)
	for _, a := range Arches {
		fmt.Fprintf(o.Log, "  linux/%s    %s\n", a, res.Platforms[a])
	}
	if dev {
		fmt.Fprintf(o.Log, "\n  *** SIGNED WITH A DEVELOPMENT KEY (%s): a real release is signed with the project's key (COSIGN_KEY=…) ***\n", signer.Key)
	}
	return res, nil
}

// gitState is the commit being released, its time (the release's every
// timestamp) and whether the working tree differs from it.
func gitState(ctx context.Context, root string) (commit string, epoch int64, dirty bool, err error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, stderr(err))
		}
		return strings.TrimSpace(string(out)), nil
	}
	if commit, err = git("rev-parse", "HEAD"); err != nil {
		return
	}
	var ct string
	if ct, err = git("log", "-1", "--format=%ct", "HEAD"); err != nil {
		return
	}
	if epoch, err = strconv.ParseInt(ct, 10, 64); err != nil {
		return
	}
	var status string
	status, err = git("status", "--porcelain")
	return commit, epoch, status != "", err
}

// writePlatformSBOM writes the CycloneDX SBOM of one platform image.
func writePlatformSBOM(ctx context.Context, tool string, img v1.Image, dir, version, arch, file string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bins, err := extractExecutables(img, dir)
	if err != nil {
		return err
	}
	var boms []map[string]any
	for _, b := range bins {
		bom, err := binarySBOM(ctx, tool, b, version)
		if err != nil {
			return err
		}
		boms = append(boms, bom)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	image := map[string]any{
		"bom-ref": "pkg:oci/crawl-operator@" + digest.String() + "?arch=" + arch,
		"type":    "container",
		"name":    Repository,
		"version": version,
		"purl":    "pkg:oci/crawl-operator@" + digest.String() + "?arch=" + arch + "&repository_url=" + Repository,
	}
	bom, err := imageSBOM(image, boms)
	if err != nil {
		return err
	}
	return writeJSON(file, bom)
}

// writeLayout writes the index as an OCI image layout, tagged with the
// version (its org.opencontainers.image.ref.name), replacing what was
// there.
func writeLayout(dir string, idx v1.ImageIndex, version string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version}))
}

// packageChart packages the chart of the tree at root at the release's
// version. Its appVersion is the image tag the chart installs by default
// (values.yaml image.tag "" means appVersion), and image.digest pins that
// tag's index, so the packaged chart installs exactly this release's image
// and its signature covers the image too. A chart from before image.digest
// (an older release rebuilt) installs by tag.
func packageChart(ctx context.Context, helm, root, tmp, chart, version string, digest v1.Hash, out string) error {
	dir := filepath.Join(tmp, "chart", "crawl-operator")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "charts", "crawl-operator"))); err != nil {
		return err
	}
	values := filepath.Join(dir, "values.yaml")
	b, err := os.ReadFile(values)
	if err != nil {
		return err
	}
	pinned, err := pinDigest(b, digest)
	if err != nil {
		return err
	}
	if err := os.WriteFile(values, pinned, 0o644); err != nil {
		return err
	}
	h := helmchart.Helm{Bin: helm, Home: filepath.Join(tmp, "helm")}
	_, err = h.Package(ctx, dir, chart, version, out)
	return err
}

// digestValue is image.digest's line in the chart's values.yaml.
const digestValue = "\n  digest: \"\"\n"

// pinDigest sets image.digest in values.yaml to the release's index.
func pinDigest(values []byte, digest v1.Hash) ([]byte, error) {
	switch strings.Count(string(values), digestValue) {
	case 0:
		return values, nil
	case 1:
		return []byte(strings.Replace(string(values), digestValue, fmt.Sprintf("\n  digest: %q\n", digest.String()), 1)), nil
	default:
		return nil, fmt.Errorf("the chart's values.yaml has more than one line %q: cannot tell which is image.digest", strings.TrimSpace(digestValue))
	}
}
