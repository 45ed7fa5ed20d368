package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRequiredVersion(t *testing.T) {
	const gomod = `// comment
module example.com/tools

go 1.26.0

require k8s.io/kubernetes v1.37.2

require (
	go.etcd.io/etcd/server/v3 v3.7.3 // indirect
	k8s.io/api v0.37.2
)
`
	for _, tc := range []struct{ module, want string }{
		{"k8s.io/kubernetes", "v1.37.2"},
		// Only the single-line form pins a tool; a block lists its
		// dependencies.
		{"go.etcd.io/etcd/server/v3", ""},
		{"k8s.io/api", ""},
		{"k8s.io/kube", ""},
	} {
		if got := requiredVersion(gomod, tc.module); got != tc.want {
			t.Errorf("requiredVersion(%q) = %q, want %q", tc.module, got, tc.want)
		}
	}
}

func TestKubeLDFlags(t *testing.T) {
	flags := strings.Fields(kubeLDFlags("v1.37.2"))
	for _, want := range []string{
		"k8s.io/component-base/version.gitVersion=v1.37.2",
		"k8s.io/component-base/version.gitMajor=1",
		"k8s.io/component-base/version.gitMinor=37",
		"k8s.io/client-go/pkg/version.gitVersion=v1.37.2",
		"k8s.io/client-go/pkg/version.gitMinor=37",
		"k8s.io/client-go/pkg/version.gitTreeState=clean",
	} {
		if !slices.Contains(flags, want) {
			t.Errorf("kubeLDFlags lacks -X %s: %v", want, flags)
		}
	}
	if flags[0] != "-s" || flags[1] != "-w" {
		t.Errorf("kubeLDFlags does not strip the binaries: %v", flags)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestModuleKey(t *testing.T) {
	dir := t.TempDir()
	// The hash is of "1234567": the files in byte order of their whole
	// paths (a-b.go, a.go, a/b.go, go.mod, go.sum, z/.x.go, z/y.go). The
	// value is what `find . -name '*.go' -o -name go.mod -o -name go.sum |
	// LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16` prints, the key
	// of the caches the former hack/tool-bin.sh filled.
	writeFiles(t, dir, map[string]string{
		"a/b.go":    "3",
		"a.go":      "2",
		"a-b.go":    "1",
		"go.mod":    "4",
		"go.sum":    "5",
		"z/y.go":    "7",
		"z/.x.go":   "6",
		"README.md": "not part of the key",
		"a/go.txt":  "nor this",
	})
	const want = "8bb0cf6eb9b17d0f"
	got, err := moduleKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("moduleKey = %s, want %s", got, want)
	}

	writeFiles(t, dir, map[string]string{"README.md": "changed"})
	if got, _ := moduleKey(dir); got != want {
		t.Errorf("moduleKey changed with README.md: %s", got)
	}
	writeFiles(t, dir, map[string]string{"go.sum": "changed"})
	if got, _ := moduleKey(dir); got == want {
		t.Errorf("moduleKey did not change with go.sum")
	}
}

func writeExec(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestK8sUpToDate(t *testing.T) {
	const stamp = "kubernetes=v1.37.2 etcd=v3.7.3"
	full := func(t *testing.T, dir string) {
		for _, b := range k8sBins {
			writeExec(t, filepath.Join(dir, b), b)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  bool
	}{
		{"empty", func(t *testing.T, dir string) {}, false},
		{"complete", func(t *testing.T, dir string) {
			full(t, dir)
			writeFiles(t, dir, map[string]string{".versions": stamp + "\n"})
		}, true},
		{"no stamp", full, false},
		{"other versions", func(t *testing.T, dir string) {
			full(t, dir)
			writeFiles(t, dir, map[string]string{".versions": "kubernetes=v1.36.0 etcd=v3.7.3\n"})
		}, false},
		{"a binary missing", func(t *testing.T, dir string) {
			full(t, dir)
			writeFiles(t, dir, map[string]string{".versions": stamp + "\n"})
			os.Remove(filepath.Join(dir, "kubelet"))
		}, false},
		{"a binary not executable", func(t *testing.T, dir string) {
			full(t, dir)
			writeFiles(t, dir, map[string]string{".versions": stamp + "\n"})
			os.Chmod(filepath.Join(dir, "etcd"), 0o644)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			if got := k8sUpToDate(dir, stamp); got != tc.want {
				t.Errorf("k8sUpToDate = %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeBuild writes a binary whose content names the package, and records
// each call as "dir: pkg pkg...".
type fakeBuild struct{ calls []string }

func (f *fakeBuild) build(dir, ldflags, out string, pkgs []string) error {
	f.calls = append(f.calls, filepath.Base(dir)+": "+strings.Join(pkgs, " "))
	for _, pkg := range pkgs {
		p := out
		if strings.HasSuffix(out, string(filepath.Separator)) {
			p = filepath.Join(out, filepath.Base(pkg))
		}
		if err := os.WriteFile(p, []byte("built "+pkg), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func newTestK8sJob(t *testing.T) (*k8sJob, *fakeBuild) {
	tmp := t.TempDir()
	fb := &fakeBuild{}
	return &k8sJob{
		kubeDir: filepath.Join(tmp, "kube"),
		etcdDir: filepath.Join(tmp, "etcd"),
		kube:    "v1.37.2",
		etcd:    "v3.7.3",
		out:     filepath.Join(tmp, "bin", "k8s"),
		cache:   filepath.Join(tmp, "cache", "k8s-v1.37.2-etcd-v3.7.3"),
		build:   fb.build,
	}, fb
}

const allKube = "kube: k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy"

func TestK8sJobBuildsThenServesFromCache(t *testing.T) {
	j, fb := newTestK8sJob(t)
	if err := j.run(); err != nil {
		t.Fatal(err)
	}
	want := []string{"etcd: go.etcd.io/etcd/server/v3", allKube}
	if !slices.Equal(fb.calls, want) {
		t.Fatalf("builds = %q, want %q", fb.calls, want)
	}
	if !k8sUpToDate(j.out, j.stamp()) || !k8sUpToDate(j.cache, j.stamp()) {
		t.Fatal("bin/k8s or the cache is not complete after a build")
	}

	fb.calls = nil
	if err := j.run(); err != nil {
		t.Fatal(err)
	}
	if len(fb.calls) != 0 {
		t.Errorf("a current bin/k8s was built again: %q", fb.calls)
	}

	// A fresh clone: everything comes from the cache.
	if err := os.RemoveAll(j.out); err != nil {
		t.Fatal(err)
	}
	if err := j.run(); err != nil {
		t.Fatal(err)
	}
	if len(fb.calls) != 0 {
		t.Errorf("built although the cache holds everything: %q", fb.calls)
	}
	if !k8sUpToDate(j.out, j.stamp()) {
		t.Error("bin/k8s is not complete after copying from the cache")
	}
}

func TestK8sJobBuildsOnlyWhatTheCacheLacks(t *testing.T) {
	j, fb := newTestK8sJob(t)
	for _, b := range k8sBins {
		if b != "kubelet" && b != "kube-proxy" {
			writeExec(t, filepath.Join(j.cache, b), "cached "+b)
		}
	}
	writeFiles(t, j.cache, map[string]string{".versions": j.stamp() + "\n"})
	if err := j.run(); err != nil {
		t.Fatal(err)
	}
	want := []string{"kube: k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy"}
	if !slices.Equal(fb.calls, want) {
		t.Fatalf("builds = %q, want %q", fb.calls, want)
	}
	if b, _ := os.ReadFile(filepath.Join(j.out, "kubectl")); string(b) != "cached kubectl" {
		t.Errorf("bin/k8s/kubectl = %q, want the cache's", b)
	}
	// The cache is completed with what was built.
	if !k8sUpToDate(j.cache, j.stamp()) {
		t.Error("the cache is not complete")
	}
}

func TestK8sJobReplacesOtherVersions(t *testing.T) {
	j, fb := newTestK8sJob(t)
	for _, b := range k8sBins {
		writeExec(t, filepath.Join(j.out, b), "old "+b)
		writeExec(t, filepath.Join(j.cache, b), "old "+b)
	}
	const old = "kubernetes=v1.36.0 etcd=v3.7.3\n"
	writeFiles(t, j.out, map[string]string{".versions": old})
	// K8S_BIN_CACHE may name a directory of other versions.
	writeFiles(t, j.cache, map[string]string{".versions": old, "stray": "x"})
	if err := j.run(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"etcd: go.etcd.io/etcd/server/v3", allKube}; !slices.Equal(fb.calls, want) {
		t.Fatalf("builds = %q, want %q", fb.calls, want)
	}
	for _, dir := range []string{j.out, j.cache} {
		if b, _ := os.ReadFile(filepath.Join(dir, "kubelet")); string(b) != "built k8s.io/kubernetes/cmd/kubelet" {
			t.Errorf("%s/kubelet = %q, want the new build", dir, b)
		}
		if got := readStamp(filepath.Join(dir, ".versions")); got != j.stamp() {
			t.Errorf("%s/.versions = %q, want %q", dir, got, j.stamp())
		}
	}
	if _, err := os.Stat(filepath.Join(j.cache, "stray")); err == nil {
		t.Error("the cache of other versions was not emptied")
	}
}

func TestToolJob(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "tools", "promtool")
	writeFiles(t, src, map[string]string{"go.mod": "module x\n", "tools.go": "package tools\n"})
	fb := &fakeBuild{}
	j := toolJob{
		name:      "promtool",
		src:       src,
		out:       filepath.Join(tmp, "bin", "promtool"),
		cacheRoot: filepath.Join(tmp, "cache"),
		pkgs:      []string{"example.com/cmd/promtool", "./promqlrefs"},
		build:     fb.build,
	}
	step := func(what string, wantBuilt bool) {
		t.Helper()
		fb.calls = nil
		if err := j.run(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if built := len(fb.calls) > 0; built != wantBuilt {
			t.Fatalf("%s: built = %v, want %v", what, built, wantBuilt)
		}
		for _, b := range []string{"promtool", "promqlrefs"} {
			if !isExecutable(filepath.Join(j.out, b)) {
				t.Fatalf("%s: no bin/promtool/%s", what, b)
			}
		}
	}
	step("first run", true)
	key, _ := moduleKey(src)
	cache := filepath.Join(j.cacheRoot, "promtool-"+key)
	if readStamp(filepath.Join(cache, ".key")) != key || !isExecutable(filepath.Join(cache, "promqlrefs")) {
		t.Fatal("the build was not cached")
	}
	step("second run", false)

	if err := os.RemoveAll(j.out); err != nil {
		t.Fatal(err)
	}
	step("fresh clone", false)

	// An edit of the module's sources makes a new key: built again,
	// and whatever bin/promtool held before is gone.
	writeFiles(t, j.out, map[string]string{"stale": "x"})
	writeFiles(t, src, map[string]string{"promqlrefs/main.go": "package main\n"})
	step("after an edit", true)
	if _, err := os.Stat(filepath.Join(j.out, "stale")); err == nil {
		t.Error("bin/promtool kept a file of the old build")
	}
}

func TestCopyDir(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "a", "b")
	writeExec(t, filepath.Join(src, "bin"), "binary")
	writeFiles(t, src, map[string]string{".key": "k\n", "sub/data": "data"})
	if err := os.Symlink("bin", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(src, "bin"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := copyDir(src, dst, ".key"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dst, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 || !fi.ModTime().Equal(mtime) {
		t.Errorf("bin copied with mode %v, time %v; want 0755, %v", fi.Mode().Perm(), fi.ModTime(), mtime)
	}
	for name, want := range map[string]string{".key": "k\n", "sub/data": "data", "link": "binary"} {
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	if link, err := os.Readlink(filepath.Join(dst, "link")); err != nil || link != "bin" {
		t.Errorf("link = %q, %v; want a symbolic link to bin", link, err)
	}

	// Copying over an existing tree replaces its files.
	writeExec(t, filepath.Join(src, "bin"), "binary 2")
	if err := copyDir(src, dst, ".key"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "bin")); string(b) != "binary 2" {
		t.Errorf("bin = %q after a second copy", b)
	}
}
