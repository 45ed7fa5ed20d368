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
// (/run/netns/NAME, /proc/PID/ns/net). Sockets f makes live there; the
// thread is thrown away afterwards rather than moved back, so no other
// goroutine ever runs in that namespace.
func inNetns(nsPath string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		ns, err := os.Open(nsPath)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", nsPath, err)
			return
		}
		errc <- f()
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
