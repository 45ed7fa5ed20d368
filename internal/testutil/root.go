package testutil

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
