// Command image builds the project's container image without Docker, as a
// tarball that `docker load` and `ctr images import` both accept
// (`make image`). The layout comes from the Dockerfile itself, so the two
// cannot drift: the binaries its build stage makes (`go build` with the same
// flags), copied where its final stage copies them, with its USER and
// ENTRYPOINT. A base layer stands in for the Dockerfile's
// distroless/static nonroot base: /etc/passwd and /etc/group with the
// nonroot user 65532, /tmp (1777) and /home/nonroot. The binaries carry
// their own CA roots (golang.org/x/crypto/x509roots/fallback), used when the
// image has none, so the crawler can verify HTTPS sites.
//
//	go run ./hack/image --tag ghcr.io/lohisoft/crawl-operator:dev --out bin/crawl-operator-image.tar
//	go run ./hack/image --addon pause --tag localhost/crawl-operator-pause:dev --out bin/pause-image.tar
//
// --addon builds one of the dev cluster's real-node images instead (see
// AddonSpecs): the sandbox (pause), CoreDNS and the storage provisioner
// with its helper, from this module or from their tools modules under
// hack/tools, since no image can be pulled here.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	var o options
	flag.StringVar(&o.root, "root", ".", "Repository root (where the Dockerfile and the commands are).")
	flag.StringVar(&o.dockerfile, "dockerfile", "Dockerfile", "Dockerfile whose layout the image follows, relative to --root.")
	flag.StringVar(&o.tag, "tag", "ghcr.io/lohisoft/crawl-operator:dev", "Image reference recorded in the tarball.")
	flag.StringVar(&o.out, "out", "bin/crawl-operator-image.tar", "Tarball to write.")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "Target architecture (GOARCH); the OS is linux.")
	flag.StringVar(&o.addon, "addon", "", "Build this image of the dev cluster's real node instead: "+strings.Join(slices.Sorted(maps.Keys(AddonSpecs)), ", ")+".")
	flag.Parse()
	if err := o.run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

type options struct {
	root, dockerfile, tag, out, arch string
	addon                            string
}

func (o options) run(ctx context.Context) error {
	tmp, err := os.MkdirTemp("", "crawl-operator-image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var spec Spec
	if o.addon != "" {
		var ok bool
		if spec, ok = AddonSpecs[o.addon]; !ok {
			return fmt.Errorf("--addon %q: want one of %s", o.addon, strings.Join(slices.Sorted(maps.Keys(AddonSpecs)), ", "))
		}
	} else {
		df, err := os.ReadFile(filepath.Join(o.root, o.dockerfile))
		if err != nil {
			return err
		}
		if spec, err = ParseDockerfile(string(df)); err != nil {
			return fmt.Errorf("%s: %w", o.dockerfile, err)
		}
	}
	bins, err := BuildBinaries(ctx, o.root, tmp, o.arch, spec)
	if err != nil {
		return err
	}
	img, err := Image(spec, bins, o.arch)
	if err != nil {
		return err
	}
	if err := Write(img, o.tag, o.out); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s): %s\n", o.out, o.tag, spec.Summary())
	return nil
}

// Spec is what the image holds: binaries built from Go packages, where they
// go, and how the image runs.
type Spec struct {
	// Binaries maps a build output (the Dockerfile's /out/manager) to the
	// package that makes it (./cmd/manager).
	Binaries map[string]string
	// BuildFlags are the `go build` flags before -o, e.g. -ldflags=-s -w.
	BuildFlags []string
	// ModuleDir is where the builds run, relative to the root: a tools
	// module under hack/tools for software built from its own module.
	ModuleDir string
	// Copies place build outputs in the image.
	Copies []Copy
	// Base is the final stage's FROM.
	Base       string
	User       string
	Entrypoint []string
	// Cmd, WorkDir and Env are the config of the base image.
	WorkDir string
	Env     []string
	// BaseFiles says whether the base layer (passwd, group, /tmp, home)
	// is added.
	BaseFiles bool
}

// Copy is one COPY of the final stage.
type Copy struct {
	From    string
	Sources []string
	Dest    string
}

// Files maps each file's path in the image to the build output it is.
func (s Spec) Files() map[string]string {
	out := map[string]string{}
	for _, c := range s.Copies {
		for _, src := range c.Sources {
			dest := c.Dest
			if strings.HasSuffix(dest, "/") || len(c.Sources) > 1 {
				dest = path.Join(dest, path.Base(src))
			}
			out[path.Clean("/"+dest)] = src
		}
	}
	return out
}

// Summary is one line for people.
func (s Spec) Summary() string {
	var files []string
	for f := range s.Files() {
		files = append(files, f)
	}
	sort.Strings(files)
	return fmt.Sprintf("user %s, entrypoint %q, %s", s.User, s.Entrypoint, strings.Join(files, " "))
}

// distrolessEnv is the environment gcr.io/distroless/static sets (minus
// SSL_CERT_FILE: the CA roots are in the binaries here).
var distrolessEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// ParseDockerfile reads the two-stage Dockerfile: `go build ... -o OUT PKG`
// commands in the build stage, COPY --from, USER and ENTRYPOINT in the final
// one. Anything else in the final stage is an error, so a change there
// cannot be silently missing from `make image`.
func ParseDockerfile(text string) (Spec, error) {
	spec := Spec{Binaries: map[string]string{}, WorkDir: "/home/nonroot", Env: distrolessEnv, BaseFiles: true}
	stages := 0
	final := false
	for _, line := range logicalLines(text) {
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			stages++
			f := strings.Fields(rest)
			spec.Base, final = f[0], len(f) == 1 // the final stage is not named
		case "RUN":
			if final {
				return spec, fmt.Errorf("RUN in the final stage is not supported by the image tool: %s", rest)
			}
			if err := parseGoBuilds(rest, &spec); err != nil {
				return spec, err
			}
		case "COPY":
			if !final {
				continue
			}
			words := shellWords(rest)
			c := Copy{}
			for len(words) > 0 && strings.HasPrefix(words[0], "--") {
				if v, ok := strings.CutPrefix(words[0], "--from="); ok {
					c.From = v
				} else {
					return spec, fmt.Errorf("COPY option %s is not supported", words[0])
				}
				words = words[1:]
			}
			if c.From == "" || len(words) < 2 {
				return spec, fmt.Errorf("final stage COPY must copy build outputs (--from=STAGE SRC... DEST): %s", rest)
			}
			c.Sources, c.Dest = words[:len(words)-1], words[len(words)-1]
			spec.Copies = append(spec.Copies, c)
		case "USER":
			if final {
				spec.User = rest
			}
		case "ENTRYPOINT":
			if final {
				ep, err := execForm(rest)
				if err != nil {
					return spec, err
				}
				spec.Entrypoint = ep
			}
		default: // ARG, WORKDIR, ENV, ... of the build stage

			if final {
				return spec, fmt.Errorf("%s in the final stage is not supported by the image tool", instr)
			}
		}
	}
	switch {
	case stages < 2 || !final:
		return spec, errors.New("want a build stage and an unnamed final stage")
	case len(spec.Copies) == 0 || spec.User == "" || len(spec.Entrypoint) == 0:
		return spec, errors.New("the final stage needs COPY, USER and ENTRYPOINT")
	}
	for _, src := range spec.Files() {
		if _, ok := spec.Binaries[src]; !ok {
			return spec, fmt.Errorf("the final stage copies %s, which no `go build -o` of the build stage makes", src)
		}
	}
	return spec, nil
}

// AddonSpecs are the dev cluster's real-node images (hack/devcluster):
// one static binary each, no shell.
var AddonSpecs = map[string]Spec{
	// The sandbox every Pod starts with, run as the upstream pause image
	// runs (user 65535).
	"pause": addonSpec("pause", "./hack/realnode/pause", "", "65535:65535"),
	// Cluster DNS (Deployment coredns, Service kube-dns).
	"coredns": addonSpec("coredns", ".", "hack/tools/coredns", "65532:65532"),
	// The default StorageClass's provisioner, and the helper it runs on
	// the node as root to make and remove volume directories there.
	"local-path-provisioner": addonSpec("local-path-provisioner", "github.com/rancher/local-path-provisioner", "hack/tools/localpath", "65532:65532"),
	"local-path-helper":      addonSpec("local-path-helper", "./hack/realnode/local-path-helper", "", "0:0"),
}

func addonSpec(name, pkg, moduleDir, user string) Spec {
	return Spec{
		Binaries:   map[string]string{"/out/" + name: pkg},
		BuildFlags: []string{"-ldflags=-s -w"},
		ModuleDir:  moduleDir,
		Copies:     []Copy{{From: "build", Sources: []string{"/out/" + name}, Dest: "/" + name}},
		User:       user,
		Entrypoint: []string{"/" + name},
		WorkDir:    "/",
	}
}

// logicalLines joins continuation lines and drops comments and blanks.
func logicalLines(text string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") {
			continue
		}
		if s, ok := strings.CutSuffix(t, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(t)
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	return out
}

var goBuild = regexp.MustCompile(`go build ((?:[^&;|]*? )?)-o (\S+) (\S+)`)

func parseGoBuilds(run string, spec *Spec) error {
	for _, m := range goBuild.FindAllStringSubmatch(run, -1) {
		flags := shellWords(m[1])
		if len(spec.Binaries) > 0 && !slices.Equal(spec.BuildFlags, flags) {
			return fmt.Errorf("the go builds use different flags: %q and %q", spec.BuildFlags, flags)
		}
		spec.BuildFlags = flags
		spec.Binaries[m[2]] = m[3]
	}
	return nil
}

// shellWords splits on blanks, honouring double and single quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, has := rune(0), false
	for _, r := range s {
		switch {
		case in != 0 && r == in:
			in = 0
		case in != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			in, has = r, true
		case r == ' ' || r == '\t':
			if cur.Len() > 0 || has {
				out = append(out, cur.String())
			}
			cur.Reset()
			has = false
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 || has {
		out = append(out, cur.String())
	}
	return out
}

// execForm parses ["a", "b"].
func execForm(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("ENTRYPOINT must use the exec form [\"...\"], got %s", s)
	}
	var out []string
	for _, part := range strings.Split(strings.Trim(s, "[]"), ",") {
		v, err := strconv.Unquote(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("ENTRYPOINT %s: %w", s, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// BuildBinaries runs the spec's `go build`s (static, linux/arch, the
// Dockerfile's flags) and returns each build output's local file.
func BuildBinaries(ctx context.Context, root, dir, arch string, spec Spec) (map[string]string, error) {
	out := map[string]string{}
	for target, pkg := range spec.Binaries {
		file := filepath.Join(dir, path.Base(target))
		args := append(append([]string{"build"}, spec.BuildFlags...), "-o", file, pkg)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = filepath.Join(root, spec.ModuleDir)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
		}
		out[target] = file
	}
	return out, nil
}

// epoch is the time recorded in the image: SOURCE_DATE_EPOCH or 0, so the
// same binaries give the same image digest.
func epoch() time.Time {
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}

// Image assembles the image: the base layer (when the spec asks for one),
// then one layer with the binaries, and the config.
func Image(spec Spec, bins map[string]string, arch string) (v1.Image, error) {
	when := epoch()
	var layers []v1.Layer
	if spec.BaseFiles {
		l, err := layer(baseEntries(), when)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	var entries []entry
	for dest, src := range spec.Files() {
		b, err := os.ReadFile(bins[src])
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{name: dest, mode: 0o755, data: b})
	}
	l, err := layer(withParents(entries), when)
	if err != nil {
		return nil, err
	}
	layers = append(layers, l)
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: when}
	cf.Config.User = spec.User
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.WorkingDir = spec.WorkDir
	cf.Config.Env = spec.Env
	cf.History = nil
	for range layers {
		cf.History = append(cf.History, v1.History{Created: v1.Time{Time: when}, CreatedBy: "hack/image (make image)"})
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: when})
}

// Write saves the image as a docker-archive tarball tagged ref.
func Write(img v1.Image, ref, out string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}

type entry struct {
	name     string
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

const (
	nonrootUID = 65532
	passwd     = "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group      = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// baseEntries stand in for what the Dockerfile's distroless base gives the
// binaries: the nonroot user, a writable /tmp and its home.
func baseEntries() []entry {
	return withParents([]entry{
		{name: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "/etc/group", mode: 0o644, data: []byte(group)},
		{name: "/tmp", dir: true, mode: 0o1777},
		{name: "/home/nonroot", dir: true, mode: 0o700, uid: nonrootUID, gid: nonrootUID},
	})
}

// withParents adds the missing parent directories (0755, root).
func withParents(es []entry) []entry {
	have := map[string]bool{}
	for _, e := range es {
		have[e.name] = true
	}
	out := slices.Clone(es)
	for _, e := range es {
		for d := path.Dir(e.name); d != "/"; d = path.Dir(d) {
			if !have[d] {
				have[d] = true
				out = append(out, entry{name: d, dir: true, mode: 0o755})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// layer makes a layer from entries with go-containerregistry; the tar
// stream holds the files, nothing of the image format.
func layer(es []entry, when time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{
			Name: strings.TrimPrefix(e.name, "/"), Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: when, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(e.data)),
		}
		if e.dir {
			h.Name += "/"
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
}
