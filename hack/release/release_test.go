package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/lohisoft/crawl-operator/hack/devcluster/registry"
	"github.com/lohisoft/crawl-operator/hack/release/changelog"
	"github.com/lohisoft/crawl-operator/hack/release/helmchart"
	"github.com/lohisoft/crawl-operator/internal/repo"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// newest is the newest version CHANGELOG.md lists: the working tree's,
// the one being made (a released version would be built from its
// recorded commit instead).
func newest(t *testing.T, root string) changelog.Entry {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries := changelog.Entries(string(text))
	if len(entries) == 0 {
		t.Fatal("CHANGELOG.md lists no version")
	}
	if entries[0].Commit != "" {
		t.Fatalf("CHANGELOG.md's newest version, %s, is released (built from %s): add the next version's section to release the working tree", entries[0].Tag(), entries[0].Commit)
	}
	return entries[0]
}

// TestRelease makes the release twice from this checkout and checks that
// the image index is the same both times, that the signatures verify and
// fail for tampered files, that the SBOMs list the modules the binaries
// were built from and that the chart installs the release's image; then it
// pushes the release to a registry on loopback and checks it as users
// would, with cosign and helm. The Go build cache makes the builds fast
// after the first (which compiles everything for arm64 too).
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release twice")
	}
	root, err := repo.RootOfWorkingDir()
	if err != nil {
		t.Fatal(err)
	}
	cosign := testutil.BuiltTool(t, root, "bin/cosign/cosign", "cosign-bin")
	helm := testutil.BuiltTool(t, root, "bin/helm", "helm-bin")
	testutil.BuiltTool(t, root, "bin/cyclonedx/cyclonedx-gomod", "cyclonedx-bin")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	testVersion := newest(t, root).Tag()

	// The tree may hold others' uncommitted work: the release is still
	// the same twice over, which is what is checked here.
	build := func(out string) Result {
		t.Helper()
		start := time.Now()
		var log bytes.Buffer
		res, err := Build(ctx, Options{Root: root, Version: testVersion, Out: out, AllowDirty: true, Log: &log})
		if err != nil {
			t.Fatalf("build: %v\n%s", err, log.String())
		}
		t.Logf("release built into %s in %s", out, time.Since(start).Round(time.Second))
		return res
	}
	a, b := build(t.TempDir()), build(t.TempDir())

	t.Run("reproducible", func(t *testing.T) {
		if a.IndexDigest != b.IndexDigest {
			t.Errorf("two builds of one commit gave index digests %s and %s", a.IndexDigest, b.IndexDigest)
		}
		for _, arch := range Arches {
			if a.Platforms[arch] != b.Platforms[arch] {
				t.Errorf("linux/%s: %s and %s", arch, a.Platforms[arch], b.Platforms[arch])
			}
		}
		idx, err := layoutIndex(a.Layout, testVersion)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := idx.Digest(); d != a.IndexDigest {
			t.Errorf("the layout's %s is %s, the build said %s", testVersion, d, a.IndexDigest)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var platforms []string
		for _, d := range m.Manifests {
			platforms = append(platforms, d.Platform.String())
		}
		if got := strings.Join(platforms, " "); got != "linux/amd64 linux/arm64" {
			t.Errorf("index platforms: %s", got)
		}
		raw, err := os.ReadFile(a.Index)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != a.IndexDigest.String() {
			t.Errorf("%s is not the index %s", a.Index, a.IndexDigest)
		}
	})

	t.Run("signatures", func(t *testing.T) {
		for _, f := range []string{a.Index, a.Chart} {
			verifyBlob(t, cosign, a.PublicKey, f, f+bundleSuffix, true)
			// Another key (b's development key) does not verify a's files.
			verifyBlob(t, cosign, b.PublicKey, f, f+bundleSuffix, false)
			tampered := filepath.Join(t.TempDir(), filepath.Base(f))
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 1
			if err := os.WriteFile(tampered, data, 0o644); err != nil {
				t.Fatal(err)
			}
			verifyBlob(t, cosign, a.PublicKey, tampered, f+bundleSuffix, false)
		}
	})

	t.Run("sbom", func(t *testing.T) {
		want := goModRequires(t, filepath.Join(root, "go.mod"), "sigs.k8s.io/controller-runtime", "k8s.io/client-go")
		for _, arch := range Arches {
			checkSBOM(t, a.SBOMs[arch], testVersion, want)
		}
	})

	t.Run("chart", func(t *testing.T) {
		out := runTool(t, helm, "show", "chart", a.Chart)
		for _, w := range []string{"version: " + strings.TrimPrefix(testVersion, "v"), "appVersion: " + testVersion} {
			if !strings.Contains(out, w) {
				t.Errorf("helm show chart: no %q in\n%s", w, out)
			}
		}
		out = runTool(t, helm, "template", "crawl-operator", a.Chart, "--namespace", "crawl-system", "--kube-version", "1.33.0")
		// The manager's image and the crawler Pods' both default to the
		// release's, pinned by its index digest.
		ref := Repository + ":" + testVersion + "@" + a.IndexDigest.String()
		for _, w := range []string{`image: "` + ref + `"`, "--crawler-image=" + ref} {
			if !strings.Contains(out, w) {
				t.Errorf("helm template of the packaged chart: no %s", w)
			}
		}
	})

	t.Run("push", func(t *testing.T) {
		// On disk: with the in-memory driver this push took 14 s
		// instead of 3.
		reg, err := registry.Start(t.TempDir(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Close()
		start := time.Now()
		var log bytes.Buffer
		p, err := Push(ctx, Options{Root: root, Version: testVersion, Out: filepath.Dir(a.Layout), Log: &log}, reg.Addr, false)
		if err != nil {
			t.Fatalf("push: %v\n%s", err, log.String())
		}
		t.Logf("pushed to %s in %s", reg.Addr, time.Since(start).Round(time.Second))
		if want := reg.Addr + "/crawl-operator@" + a.IndexDigest.String(); p.Image != want {
			t.Errorf("pushed %s, want %s", p.Image, want)
		}
		insecure := []string{"--allow-insecure-registry", "--allow-http-registry"}
		tag := reg.Addr + "/crawl-operator:" + testVersion
		for _, ref := range []string{p.Image, tag, p.Chart} {
			runTool(t, cosign, append(append([]string{"verify", "--key", a.PublicKey, "--insecure-ignore-tlog"}, insecure...), ref)...)
		}
		for _, arch := range Arches {
			out := runTool(t, cosign, append(append([]string{"verify-attestation", "--key", a.PublicKey, "--insecure-ignore-tlog", "--type", "cyclonedx"}, insecure...), p.Platforms[arch])...)
			if !strings.Contains(out, "payload") {
				t.Errorf("verify-attestation printed no attestation for %s", arch)
			}
		}
		// b's key signed nothing here.
		mustFail(t, cosign, append(append([]string{"verify", "--key", b.PublicKey, "--insecure-ignore-tlog"}, insecure...), p.Image)...)

		dir := t.TempDir()
		runTool(t, helm, "pull", p.ChartURL, "--version", strings.TrimPrefix(testVersion, "v"), "--plain-http", "--destination", dir)
		pulled, err := os.ReadFile(filepath.Join(dir, filepath.Base(a.Chart)))
		if err != nil {
			t.Fatal(err)
		}
		if packaged, _ := os.ReadFile(a.Chart); !bytes.Equal(pulled, packaged) {
			t.Error("helm pull gave another chart than the one packaged")
		}

		// Another image under the release's tag: its digest has no
		// signature, so verifying the tag fails.
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(tag, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		mustFail(t, cosign, append(append([]string{"verify", "--key", a.PublicKey, "--insecure-ignore-tlog"}, insecure...), tag)...)
	})
}

func verifyBlob(t *testing.T, cosign, key, file, bundle string, ok bool) {
	t.Helper()
	args := []string{"verify-blob", "--key", key, "--bundle", bundle, "--insecure-ignore-tlog", file}
	if ok {
		runTool(t, cosign, args...)
	} else {
		mustFail(t, cosign, args...)
	}
}

func runTool(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = helmchart.Helm{Home: t.TempDir()}.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func mustFail(t *testing.T, bin string, args ...string) {
	t.Helper()
	if out, err := exec.Command(bin, args...).CombinedOutput(); err == nil {
		t.Errorf("%s %s succeeded, want a failure:\n%s", filepath.Base(bin), strings.Join(args, " "), out)
	}
}

// goModRequires is the versions go.mod requires of the modules.
func goModRequires(t *testing.T, gomod string, modules ...string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		for _, m := range modules {
			if len(f) >= 2 && f[0] == m {
				out[m] = f[1]
			}
		}
	}
	if len(out) != len(modules) {
		t.Fatalf("go.mod requires %v of %v", out, modules)
	}
	return out
}

// checkSBOM reads an SBOM as CycloneDX JSON: the image as its subject, the
// project's binaries as applications at the release's version, and the
// modules they were built from with their versions.
func checkSBOM(t *testing.T, file, testVersion string, want map[string]string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat, SpecVersion string
		Metadata               struct{ Component component }
		Components             []component
		Dependencies           []struct {
			Ref       string
			DependsOn []string
		}
	}
	if err := json.Unmarshal(b, &bom); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" || bom.Metadata.Component.Type != "container" {
		t.Errorf("%s: format %q, spec %q, subject %+v", file, bom.BOMFormat, bom.SpecVersion, bom.Metadata.Component)
	}
	apps, libs := 0, map[string]string{}
	for _, c := range bom.Components {
		switch {
		case c.Type == "application" && c.Name == "github.com/lohisoft/crawl-operator" && c.Version == testVersion:
			apps++
		case c.Type == "library":
			if c.Version == "" {
				t.Errorf("%s: %s has no version", file, c.Name)
			}
			libs[c.Name] = c.Version
		}
	}
	if apps != 2 {
		t.Errorf("%s: %d applications github.com/lohisoft/crawl-operator %s, want 2 (manager, crawler)", file, apps, testVersion)
	}
	for m, v := range want {
		if libs[m] != v {
			t.Errorf("%s: %s at %q, go.mod requires %s", file, m, libs[m], v)
		}
	}
	if len(bom.Dependencies) < len(libs) {
		t.Errorf("%s: %d dependency entries for %d modules", file, len(bom.Dependencies), len(libs))
	}
}

type component struct {
	Type, Name, Version string
	BOMRef              string `json:"bom-ref"`
}
