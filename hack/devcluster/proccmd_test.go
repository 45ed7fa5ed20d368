package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// The test binary doubles as the demos' processes: with helperListen set
// it serves ADDR until killed, with helperExit it fails at once.
func TestMain(m *testing.M) {
	if addr := os.Getenv("PROC_TEST_LISTEN"); addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			os.Exit(2)
		}
		for {
			c, err := l.Accept()
			if err == nil {
				c.Close()
			}
		}
	}
	if os.Getenv("PROC_TEST_FAIL") != "" {
		os.Stderr.WriteString("cannot serve: told to fail\n")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// `proc start` as the demos use it: started and waited for, kept when it
// runs, refused when a stranger holds its port, reported with its log when
// it dies, and stopped by down's stopProcs.
func TestProcStartAndStop(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeAddr(t)
	start := func(name, addr string, env ...string) error {
		for _, e := range env {
			k, v, _ := strings.Cut(e, "=")
			t.Setenv(k, v)
		}
		defer func() {
			for _, e := range env {
				k, _, _ := strings.Cut(e, "=")
				os.Unsetenv(k)
			}
		}()
		return procCommand([]string{"start", name, "--dir", dir, "--listen", addr, "--", self})
	}
	p := hostproc.Proc{Dir: dir, Name: "site"}
	t.Cleanup(func() { _ = p.Stop(0) })

	if err := start("site", addr, "PROC_TEST_LISTEN="+addr); err != nil {
		t.Fatalf("start: %v", err)
	}
	pid, ok := p.PID()
	if !ok || !listening(addr) {
		t.Fatalf("after start: running %v, listening %v", ok, listening(addr))
	}
	// A second demo keeps it.
	if err := start("site", addr, "PROC_TEST_LISTEN="+addr); err != nil {
		t.Fatalf("second start: %v", err)
	}
	if again, _ := p.PID(); again != pid {
		t.Errorf("second start replaced pid %d with %d", pid, again)
	}
	// Another name wanting the same port is refused, saying why.
	err = start("other", addr, "PROC_TEST_LISTEN="+addr)
	if err == nil || !strings.Contains(err.Error(), addr+" is already in use by another program") {
		t.Errorf("start on a held port: %v", err)
	}
	// One that dies says how, with its log.
	err = start("broken", testutil.FreeAddr(t), "PROC_TEST_FAIL=1")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "told to fail") {
		t.Errorf("start of a failing process: %v", err)
	}

	if err := stopProcs(dir); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.PID(); ok || listening(addr) {
		t.Errorf("after stopProcs: running %v, listening %v", ok, listening(addr))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.pid")); len(left) > 0 {
		t.Errorf("pid files left: %v", left)
	}
}

func TestUpOptions(t *testing.T) {
	d := devFlags{dir: "/s", kubeconfig: "/k", binDir: "/b", nodesDir: "/n"}
	for _, tc := range []struct {
		real      int
		mode      string
		want      int
		fleetFlag bool
	}{
		{0, "agent", 2, false},
		{1, "real-node", 1, true},
		{2, "real-node", 2, true},
	} {
		o := upOptions{devFlags: d, realNodes: tc.real, crawler: "/c"}
		args := strings.Join(o.controlPlaneArgs(), " ")
		if o.mode() != tc.mode || o.wantNodes() != tc.want || strings.Contains(args, "--fleet /n") != tc.fleetFlag {
			t.Errorf("real %d: mode %s, want %d, args %s", tc.real, o.mode(), o.wantNodes(), args)
		}
		if !strings.Contains(args, "--fake-nodes="+map[bool]string{true: "true", false: "false"}[tc.real == 0]) ||
			!strings.Contains(args, "--ready-file /s/devcluster.ready") || !strings.Contains(args, "--dir /s/cluster") {
			t.Errorf("real %d: args %s", tc.real, args)
		}
	}
}
