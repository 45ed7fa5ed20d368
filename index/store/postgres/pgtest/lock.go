package pgtest

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockPath is shared by every test process on the machine.
var lockPath = filepath.Join(os.TempDir(), "crawl-operator-pgtest.lock")

// exclusive counts this process's holds of the exclusive lock: while it
// holds it, its own tests need no shared lock (flock would deadlock).
var exclusive struct {
	sync.Mutex
	n int
}

// holdShared takes a shared lock for t's duration.
func holdShared(t testing.TB) {
	t.Helper()
	exclusive.Lock()
	mine := exclusive.n > 0
	exclusive.Unlock()
	if mine {
		return
	}
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Logf("pgtest: no lock file (%v); not coordinating with outage tests", err)
		return
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		t.Logf("pgtest: shared lock: %v", err)
		return
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
}

// Hold keeps tests that stop the server (ControlServer) waiting for t's
// duration, as Schema does: for a test that uses a schema of its own
// making, such as the cached benchmark corpus. Hold it only for a short
// t: those tests give up after 10 minutes.
func Hold(t testing.TB) { holdShared(t) }

// holdExclusive waits (up to 10 minutes) until no test of any process uses
// the server and keeps it to itself for t's duration.
func holdExclusive(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("pgtest: lock file: %v", err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			f.Close()
			t.Fatalf("pgtest: other tests kept the PostgreSQL server busy for 10 minutes: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	exclusive.Lock()
	exclusive.n++
	exclusive.Unlock()
	t.Cleanup(func() {
		exclusive.Lock()
		exclusive.n--
		exclusive.Unlock()
		f.Close()
	})
}
