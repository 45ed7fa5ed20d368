// Command toolbin builds pinned tool binaries from the tools modules under
// hack/tools (each a Go module of its own that pins one tool's version)
// into bin/. No release download is reachable from our CI machines, so the
// tools are built from the Go module proxy.
//
//	go run ./hack/toolbin k8s
//	go run ./hack/toolbin tool NAME MODULE PACKAGE...
//
// k8s builds etcd (hack/tools/etcd) and kube-apiserver, kubectl,
// kube-scheduler, kube-controller-manager, kubelet and kube-proxy
// (hack/tools/kube) into bin/k8s (K8S_BIN_DIR), for envtest and the local
// dev cluster. The directory is current when its .versions stamp names the
// pinned versions and every binary is there. The first build takes ~15
// minutes on two cores; later ones are served by the Go build cache.
//
// tool builds the commands PACKAGE... of hack/tools/MODULE into bin/NAME
// with one go build, keyed on the module's go.mod, go.sum and own sources:
// bin/NAME is current when its .key holds that key.
//
// Either way a finished build is also kept in a per-user cache outside the
// checkout (~/.cache/crawl-operator, or $XDG_CACHE_HOME/crawl-operator; for
// k8s, K8S_BIN_CACHE names the directory itself), so a fresh clone on the
// same machine (CI) copies it instead of building.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/lohisoft/crawl-operator/internal/repo"
)

const usage = `usage: toolbin k8s
       toolbin tool NAME MODULE PACKAGE...`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "toolbin:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	root, err := repo.RootOfWorkingDir()
	if err != nil {
		return err
	}
	switch {
	case len(args) == 1 && args[0] == "k8s":
		job, err := newK8sJob(root)
		if err != nil {
			return err
		}
		return job.run()
	case len(args) >= 4 && args[0] == "tool":
		name, module, pkgs := args[1], args[2], args[3:]
		job := toolJob{
			name:      name,
			src:       filepath.Join(root, "hack", "tools", module),
			out:       filepath.Join(root, "bin", name),
			cacheRoot: cacheRoot(),
			pkgs:      pkgs,
			build:     goBuild,
		}
		return job.run()
	default:
		return errors.New(usage)
	}
}

// cacheRoot follows the XDG rule on every OS (os.UserCacheDir does not on
// macOS), so the directory is the one the Makefile's helm-bin uses.
func cacheRoot() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		base = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(base, "crawl-operator")
}

// buildFunc runs go build in the module at dir; out is a file, or a
// directory when it ends in a slash. Tests pass a fake one.
type buildFunc func(dir, ldflags, out string, pkgs []string) error

func goBuild(dir, ldflags, out string, pkgs []string) error {
	cmd := exec.Command("go", append([]string{"build", "-ldflags", ldflags, "-o", out}, pkgs...)...)
	cmd.Dir = dir
	// GOFLAGS is replaced, not added to: a caller's flags (-race, -tags)
	// are for the project's own packages, not for the tools.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s (in %s): %w", strings.Join(pkgs, " "), dir, err)
	}
	return nil
}

// ---- k8s ----

var (
	kubeCmds = []string{"kube-apiserver", "kubectl", "kube-scheduler", "kube-controller-manager", "kubelet", "kube-proxy"}
	k8sBins  = append([]string{"etcd"}, kubeCmds...)
)

type k8sJob struct {
	kubeDir, etcdDir string // the tools modules
	kube, etcd       string // their pinned versions
	out, cache       string
	build            buildFunc
}

func newK8sJob(root string) (*k8sJob, error) {
	j := &k8sJob{
		kubeDir: filepath.Join(root, "hack", "tools", "kube"),
		etcdDir: filepath.Join(root, "hack", "tools", "etcd"),
		build:   goBuild,
	}
	var err error
	if j.kube, err = moduleVersion(filepath.Join(j.kubeDir, "go.mod"), "k8s.io/kubernetes"); err != nil {
		return nil, err
	}
	if j.etcd, err = moduleVersion(filepath.Join(j.etcdDir, "go.mod"), "go.etcd.io/etcd/server/v3"); err != nil {
		return nil, err
	}
	j.out = os.Getenv("K8S_BIN_DIR")
	if j.out == "" {
		j.out = filepath.Join(root, "bin", "k8s")
	}
	// go build runs in the tools module: a relative -o would land there.
	if j.out, err = filepath.Abs(j.out); err != nil {
		return nil, err
	}
	j.cache = os.Getenv("K8S_BIN_CACHE")
	if j.cache == "" {
		j.cache = filepath.Join(cacheRoot(), "k8s-"+j.kube+"-etcd-"+j.etcd)
	}
	return j, nil
}

func moduleVersion(gomod, module string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	v := requiredVersion(string(b), module)
	if v == "" {
		return "", fmt.Errorf("%s: no single-line `require %s`", gomod, module)
	}
	return v, nil
}

// requiredVersion is the version of a single-line `require MODULE VERSION`
// in a go.mod, the form the tools modules pin their tool with; "" when
// there is none.
func requiredVersion(gomod, module string) string {
	for line := range strings.Lines(gomod) {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "require" && f[1] == module {
			return f[2]
		}
	}
	return ""
}

func (j *k8sJob) stamp() string { return "kubernetes=" + j.kube + " etcd=" + j.etcd }

// kubeLDFlags stamps the Kubernetes version into the binaries: without it
// they report v0.0.0-master and kubectl warns about version skew.
func kubeLDFlags(version string) string {
	minor := ""
	if parts := strings.Split(version, "."); len(parts) > 1 {
		minor = parts[1]
	}
	flags := "-s -w"
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags += " -X " + pkg + ".gitVersion=" + version + " -X " + pkg + ".gitMajor=1 -X " + pkg + ".gitMinor=" + minor
		flags += " -X " + pkg + ".gitTreeState=clean -X " + pkg + ".buildDate=1970-01-01T00:00:00Z"
	}
	return flags
}

// k8sUpToDate: dir holds every binary of the versions stamp names.
func k8sUpToDate(dir, stamp string) bool {
	if readStamp(filepath.Join(dir, ".versions")) != stamp {
		return false
	}
	for _, b := range k8sBins {
		if !isExecutable(filepath.Join(dir, b)) {
			return false
		}
	}
	return true
}

func (j *k8sJob) run() error {
	stamp := j.stamp()
	if k8sUpToDate(j.out, stamp) {
		fmt.Printf("bin/k8s is up to date (%s)\n", stamp)
		return nil
	}
	// Two builds at once (make test in two shells, parallel CI steps) would
	// delete each other's half-built binaries: the second waits for the
	// first, then finds its work done.
	if err := os.MkdirAll(j.out, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(j.out+".lock", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if k8sUpToDate(j.out, stamp) {
		fmt.Printf("bin/k8s is up to date (%s)\n", stamp)
		return nil
	}

	if readStamp(filepath.Join(j.out, ".versions")) != stamp {
		// Binaries of other versions: none of them may be kept.
		for _, b := range k8sBins {
			if err := os.Remove(filepath.Join(j.out, b)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	// Until the end, the directory is unfinished whatever it holds.
	if err := os.Remove(filepath.Join(j.out, ".versions")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if readStamp(filepath.Join(j.cache, ".versions")) == stamp {
		fmt.Printf("copying binaries from %s\n", j.cache)
		for _, b := range k8sBins {
			dst, src := filepath.Join(j.out, b), filepath.Join(j.cache, b)
			if !isExecutable(dst) && isExecutable(src) {
				if err := copyFile(src, dst); err != nil {
					return err
				}
			}
		}
	}

	if !isExecutable(filepath.Join(j.out, "etcd")) {
		fmt.Printf("building etcd %s into %s\n", j.etcd, j.out)
		if err := j.build(j.etcdDir, "-s -w", filepath.Join(j.out, "etcd"), []string{"go.etcd.io/etcd/server/v3"}); err != nil {
			return err
		}
	}
	// One go build for all the missing Kubernetes commands: it compiles the
	// packages they share once and links one binary while compiling the
	// next, which a loop of builds cannot.
	var pkgs, names []string
	for _, b := range kubeCmds {
		if !isExecutable(filepath.Join(j.out, b)) {
			pkgs = append(pkgs, "k8s.io/kubernetes/cmd/"+b)
			names = append(names, b)
		}
	}
	if len(pkgs) > 0 {
		fmt.Printf("building %s %s into %s\n", strings.Join(names, " "), j.kube, j.out)
		if err := j.build(j.kubeDir, kubeLDFlags(j.kube), j.out+string(filepath.Separator), pkgs); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(j.out, ".versions"), []byte(stamp+"\n"), 0o644); err != nil {
		return err
	}

	// A cache that cannot be made (read-only home) is no reason to fail.
	if err := os.MkdirAll(j.cache, 0o755); err == nil {
		if err := j.fillCache(stamp); err != nil {
			fmt.Printf("could not cache the binaries in %s (continuing): %v\n", j.cache, err)
		}
	}
	fmt.Printf("bin/k8s is ready (%s)\n", stamp)
	return nil
}

func (j *k8sJob) fillCache(stamp string) error {
	if readStamp(filepath.Join(j.cache, ".versions")) != stamp {
		entries, err := os.ReadDir(j.cache)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(j.cache, e.Name())); err != nil {
				return err
			}
		}
	}
	return copyDir(j.out, j.cache, ".versions")
}

// ---- tool ----

type toolJob struct {
	name      string // bin/NAME
	src, out  string // the tools module, bin/NAME
	cacheRoot string // the cache is cacheRoot/NAME-KEY
	pkgs      []string
	build     buildFunc
}

func (j toolJob) run() error {
	key, err := moduleKey(j.src)
	if err != nil {
		return err
	}
	cache := filepath.Join(j.cacheRoot, j.name+"-"+key)
	if readStamp(filepath.Join(j.out, ".key")) == key {
		fmt.Printf("bin/%s is up to date\n", j.name)
		return nil
	}
	if err := os.RemoveAll(j.out); err != nil {
		return err
	}
	if readStamp(filepath.Join(cache, ".key")) == key {
		if err := copyDir(cache, j.out, ".key"); err != nil {
			return err
		}
		fmt.Printf("copied bin/%s from %s\n", j.name, cache)
		return nil
	}
	fmt.Printf("building %s into bin/%s\n", strings.Join(j.pkgs, " "), j.name)
	if err := os.MkdirAll(j.out, 0o755); err != nil {
		return err
	}
	if err := j.build(j.src, "-s -w", j.out+string(filepath.Separator), j.pkgs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(j.out, ".key"), []byte(key+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(cache); err == nil {
		err = copyDir(j.out, cache, ".key")
	}
	if err != nil {
		fmt.Printf("could not cache bin/%s in %s (continuing): %v\n", j.name, cache, err)
	}
	return nil
}

// moduleKey hashes the module's *.go, go.mod and go.sum, in the byte order
// of their paths: the first 16 hex digits of the SHA-256 of their contents
// one after the other. It is the key the former hack/tool-bin.sh computed
// (`find | LC_ALL=C sort | xargs cat | sha256sum`), so caches it filled
// still serve.
func moduleKey(dir string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	// Sorted as whole paths, not directory by directory as WalkDir visits
	// them: "a.go" comes before "a/b.go" but after "a-b.go".
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ---- files ----

// readStamp is a stamp file's content without its trailing newlines, or ""
// when it cannot be read.
func readStamp(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\n")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// copyDir copies the tree src into dst (made when missing), keeping modes,
// modification times and symbolic links. The stamp file named last is
// copied after everything else: a copy cut short must not look complete.
func copyDir(src, dst, last string) error {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == last {
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			return os.MkdirAll(target, fi.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return os.Symlink(link, target)
		default:
			return copyFile(p, target)
		}
	})
	if err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(src, last)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return copyFile(filepath.Join(src, last), filepath.Join(dst, last))
}

// copyFile copies src to dst with src's mode and modification time. It
// writes a temporary file and renames it over dst, so a binary that is
// running (a dev cluster's kube-apiserver) is replaced, not rewritten in
// place, which Linux refuses ("text file busy").
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), fi.Mode().Perm()); err != nil {
		return err
	}
	if err := os.Chtimes(tmp.Name(), fi.ModTime(), fi.ModTime()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
