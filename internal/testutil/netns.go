package testutil

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// inNetns runs f on a thread moved into the network namespace at nsPath
// (/run/netns/NAME, /proc/PID/ns/net); sockets f makes live there. The
// thread is moved back before it runs anything else. Should that fail, it
// stays locked and ends with its goroutine, except that Go keeps the main
// thread alive rather than end it: a thread left in the namespace there
// would make the whole process look as if it lived in it.
func inNetns(nsPath string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer home.Close()
		ns, err := os.Open(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", nsPath, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("back from %s: %w", nsPath, err) // the thread stays locked
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ListenInNetns opens a listener inside the named network namespace, as a
// server running there would; it is closed when the test ends.
func ListenInNetns(t testing.TB, netns, network, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	err := inNetns(filepath.Join("/run/netns", netns), func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	if err != nil {
		t.Fatalf("listen on %s in netns %s: %v", addr, netns, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// DialFrom connects to addr from the network namespace of process pid (a
// Pod's container), as a program in the Pod would.
func DialFrom(pid int, addr string, timeout time.Duration) error {
	return inNetns(fmt.Sprintf("/proc/%d/ns/net", pid), func() error {
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err == nil {
			c.Close()
		}
		return err
	})
}
