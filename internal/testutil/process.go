package testutil

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildBinary builds the command pkg (a path such as "cmd/manager") of the
// repository at root, statically as `make build` does, into the test's
// temporary directory and returns the binary's path: tests run the
// programs users run, as processes of their own.
func BuildBinary(t testing.TB, root, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, for a process the test starts to listen on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// BuiltTool is the absolute path of a tool a make target builds into the
// repository at root (bin/helm, bin/promtool/promtool): without it the test
// is skipped, saying which target builds it, or fails under CI=true, where
// make test has built it first.
func BuiltTool(t testing.TB, root, rel, makeTarget string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot run: no %s (make %s builds it)", p, makeTarget)
		}
		t.Skipf("no %s (make %s builds it; with CI=true this is a failure)", p, makeTarget)
	}
	return p
}
