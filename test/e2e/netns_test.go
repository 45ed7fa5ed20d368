package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// machineUplinkAddr is an IPv4 address of this machine outside every Pod
// range: the address of its default route's interface.
func machineUplinkAddr(t *testing.T) netip.Addr {
	t.Helper()
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] != "00000000" {
			continue
		}
		ifc, err := net.InterfaceByName(f[0])
		if err != nil {
			t.Fatal(err)
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
				return p.Addr()
			}
		}
	}
	t.Skip("this machine has no default route with an IPv4 address: nothing to check")
	return netip.Addr{}
}

// checkMachineAddressesFromPod: a port of this machine open on every
// address answers the Pod of process pid at the node's gateway (the control
// that the check can succeed) and not at the machine's uplink address.
func checkMachineAddressesFromPod(t *testing.T, pid int, gateway string) {
	t.Helper()
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	if err := testutil.DialFrom(pid, net.JoinHostPort(gateway, port), 5*time.Second); err != nil {
		t.Errorf("the Pod cannot reach the node's gateway %s:%s: %v", gateway, port, err)
	}
	uplink := machineUplinkAddr(t)
	if err := testutil.DialFrom(pid, net.JoinHostPort(uplink.String(), port), 3*time.Second); err == nil {
		t.Errorf("the Pod reached this machine's uplink address %s:%s, which no Node object lists", uplink, port)
	}
}
