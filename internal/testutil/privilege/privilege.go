// Package privilege holds the one rule for tests that need root: skip
// without it, fail under CI. It imports nothing of the project, so the
// crawler's own packages can use it.
package privilege

import (
	"os"
	"os/exec"
	"testing"
)

// NeedRoot skips a test that changes the machine (links, namespaces,
// iptables, cgroups) unless it runs as root with the given programs; with
// CI=true it fails instead, saying why in one line.
func NeedRoot(t testing.TB, programs ...string) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root"
	}
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil && why == "" {
			why = "needs " + p
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cannot run here: %s", why)
	}
	t.Skip(why)
}
