package main

import (
	"archive/tar"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var root = filepath.Join("..", "..")

func dockerfileSpec(t *testing.T) Spec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParseDockerfile(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The Dockerfile is what `docker build` makes; `make image` follows it. Pin
// what both must give: both static binaries in /usr/local/bin, user 65532,
// entrypoint manager, the release build flags (-s -w; no -trimpath, so
// `make image` reuses the compile cache of `make build`), a nonroot distroless base.
func TestDockerfileLayout(t *testing.T) {
	spec := dockerfileSpec(t)
	wantFiles := map[string]string{"/usr/local/bin/manager": "/out/manager", "/usr/local/bin/crawler": "/out/crawler"}
	if got := spec.Files(); len(got) != 2 || got["/usr/local/bin/manager"] != wantFiles["/usr/local/bin/manager"] || got["/usr/local/bin/crawler"] != wantFiles["/usr/local/bin/crawler"] {
		t.Errorf("files = %v, want %v", got, wantFiles)
	}
	if spec.Binaries["/out/manager"] != "./cmd/manager" || spec.Binaries["/out/crawler"] != "./cmd/crawler" {
		t.Errorf("build outputs = %v", spec.Binaries)
	}
	if !slices.Equal(spec.BuildFlags, []string{"-ldflags=-s -w"}) {
		t.Errorf("build flags = %q", spec.BuildFlags)
	}
	if spec.User != "65532:65532" || !slices.Equal(spec.Entrypoint, []string{"manager"}) {
		t.Errorf("user %q entrypoint %q", spec.User, spec.Entrypoint)
	}
	// The base-layer stand-in matches this base: nonroot user 65532.
	if !strings.HasPrefix(spec.Base, "gcr.io/distroless/static") || !strings.HasSuffix(spec.Base, ":nonroot") {
		t.Errorf("base %q: the image tool's base layer stands in for distroless/static:nonroot", spec.Base)
	}
}

func TestParseDockerfileRefusesWhatTheToolCannotFollow(t *testing.T) {
	good := "FROM golang AS build\nRUN go build -o /out/a ./cmd/a\nFROM scratch\nCOPY --from=build /out/a /usr/bin/\nUSER 1:1\nENTRYPOINT [\"a\"]\n"
	if _, err := ParseDockerfile(good); err != nil {
		t.Fatalf("minimal Dockerfile: %v", err)
	}
	for name, df := range map[string]string{
		"RUN in final":    strings.Replace(good, "USER 1:1", "RUN echo hi\nUSER 1:1", 1),
		"ENV in final":    strings.Replace(good, "USER 1:1", "ENV A=b\nUSER 1:1", 1),
		"COPY from host":  strings.Replace(good, "COPY --from=build /out/a", "COPY a", 1),
		"unbuilt binary":  strings.Replace(good, "/out/a /usr/bin/", "/out/b /usr/bin/", 1),
		"shell form":      strings.Replace(good, `["a"]`, "a", 1),
		"no USER":         strings.Replace(good, "USER 1:1\n", "", 1),
		"one stage":       "FROM scratch\nUSER 1\n",
		"different flags": strings.Replace(good, "RUN go build -o /out/a ./cmd/a", "RUN go build -o /out/a ./cmd/a && go build -trimpath -o /out/b ./cmd/b", 1),
	} {
		if _, err := ParseDockerfile(df); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// `make image` end to end: the tarball has what docker load and ctr import
// read (manifest.json naming the tag, config, layers), runs as 65532 with
// entrypoint manager, holds both binaries (static, release flags, CA roots
// inside) at the Dockerfile's paths, and a /tmp and passwd like distroless.
func TestImageTarball(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	const tag = "ghcr.io/lohisoft/crawl-operator:test"
	o := options{root: root, dockerfile: "Dockerfile", tag: tag, out: out, arch: runtime.GOARCH}
	if err := o.run(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The docker-archive index that docker load and ctr import read.
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "manifest.json" {
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{tag}) || manifest[0].Config == "" || len(manifest[0].Layers) != 2 {
		t.Fatalf("manifest.json = %+v", manifest)
	}

	ref, _ := name.NewTag(tag)
	img, err := tarball.ImageFromPath(out, &ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"manager"}) || cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("config: user %q entrypoint %q platform %s/%s", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Architecture)
	}
	if !slices.ContainsFunc(cf.Config.Env, func(e string) bool { return strings.HasPrefix(e, "PATH=") && strings.Contains(e, "/usr/local/bin") }) {
		t.Errorf("env %q: the Pod's command `crawler` is found through PATH", cf.Config.Env)
	}

	// The filesystem the container sees.
	files := map[string]*tar.Header{}
	dir := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	fs := tar.NewReader(rc)
	for {
		h, err := fs.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := "/" + strings.TrimSuffix(h.Name, "/")
		files[p] = h
		if h.Typeflag == tar.TypeReg && strings.HasPrefix(p, "/usr/local/bin/") || p == "/etc/passwd" {
			b, _ := io.ReadAll(fs)
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, bin := range []string{"manager", "crawler"} {
		h := files["/usr/local/bin/"+bin]
		if h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 || h.Uid != 0 {
			t.Errorf("/usr/local/bin/%s: %+v, want an executable owned by root", bin, h)
			continue
		}
		info, err := buildinfo.ReadFile(filepath.Join(dir, bin))
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		if info.Path != "github.com/lohisoft/crawl-operator/cmd/"+bin {
			t.Errorf("%s is %s", bin, info.Path)
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if settings["CGO_ENABLED"] != "0" || settings["GOOS"] != "linux" || settings["-ldflags"] != "-s -w" {
			t.Errorf("%s build settings %v: want static, linux, -ldflags=-s -w", bin, settings)
		}
		if !slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == "golang.org/x/crypto/x509roots/fallback" }) {
			t.Errorf("%s carries no CA roots (golang.org/x/crypto/x509roots/fallback)", bin)
		}
	}
	// The entrypoint binary runs (static, this platform).
	if runtime.GOOS == "linux" {
		if b, err := exec.Command(filepath.Join(dir, "crawler"), "help").CombinedOutput(); err != nil || !strings.Contains(string(b), "crawler crawl") {
			t.Errorf("crawler help: %v\n%s", err, b)
		}
	}
	if h := files["/tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp: %+v, want a 1777 directory", h)
	}
	if h := files["/home/nonroot"]; h == nil || h.Uid != 65532 {
		t.Errorf("/home/nonroot: %+v, want owned by 65532", h)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "passwd")); !strings.Contains(string(b), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the nonroot user:\n%s", b)
	}
	for p, h := range files {
		if !strings.HasPrefix(p, "/usr/local/bin/") && h.Typeflag == tar.TypeReg && p != "/etc/passwd" && p != "/etc/group" {
			t.Errorf("unexpected file %s", p)
		}
	}
}

// The add-on images built from this module (the two built from tools
// modules take minutes cold; the real-node end-to-end test builds and runs
// them).
func TestAddonImages(t *testing.T) {
	for name, want := range map[string]struct{ user, entry string }{
		"pause":             {"65535:65535", "/pause"},
		"local-path-helper": {"0:0", "/local-path-helper"},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), name+".tar")
			o := options{root: root, tag: "localhost/crawl-operator-" + name + ":test", out: out, arch: runtime.GOARCH, addon: name}
			if err := o.run(context.Background()); err != nil {
				t.Fatal(err)
			}
			img, err := tarball.ImageFromPath(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			cf, _ := img.ConfigFile()
			if cf.Config.User != want.user || !slices.Equal(cf.Config.Entrypoint, []string{want.entry}) {
				t.Errorf("%s config %+v", name, cf.Config)
			}
		})
	}
	err := options{root: root, tag: "localhost/x:test", out: filepath.Join(t.TempDir(), "x.tar"), addon: "busybox"}.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "coredns, local-path-helper, local-path-provisioner, pause") {
		t.Fatalf("unknown add-on: err = %v, want the list of add-ons", err)
	}
}
