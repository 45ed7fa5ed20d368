package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// LockMachine makes the test the only one on this machine that uses what
// is machine-wide: real nodes' names, bridges and cgroups, the dev
// internet's addresses and routes. Tests of several packages run at once
// under `go test ./...`. The lock goes with the process, however it ends.
// Another holder makes the test skip, or with CI=true wait up to ten
// minutes.
func LockMachine(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "crawl-operator-e2e-realnode.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("lock %s: %v", f.Name(), err)
		}
		if os.Getenv("CI") != "true" {
			f.Close()
			t.Skip("another test that uses this machine's real nodes or internet runs")
		}
		if time.Now().After(deadline) {
			t.Fatalf("another test held %s for 10 minutes", f.Name())
		}
		time.Sleep(time.Second)
	}
	t.Cleanup(func() { f.Close() })
}
