package hostchange

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lohisoft/crawl-operator/internal/testutil/privilege"
)

func sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func exists(args ...string) bool { return exec.Command(args[0], args[1:]...).Run() == nil }

// Every kind of change is made, survives a crash (a new Journal read from
// the file), and is undone in reverse order, leaving nothing.
func TestJournalUndoesEveryKind(t *testing.T) {
	privilege.NeedRoot(t, "ip", "iptables", "ip6tables")
	id := fmt.Sprintf("%d", os.Getpid()%100000)
	ns, link, dummy := "crhc"+id, "crhcv"+id, "crhcd"+id
	chain := "CRAWL-HCTEST-" + id
	dir := filepath.Join(t.TempDir(), "made", "deep")
	cg := "/crawl-hctest-" + id
	sysctl := "net.ipv6.conf." + dummy + ".disable_ipv6"
	path := filepath.Join(t.TempDir(), "journal.json")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	changes := []Change{
		{Kind: Netns, Name: ns},
		{Kind: Link, Netns: ns, Name: link, Args: []string{"type", "bridge"}},
		{Kind: Addr, Netns: ns, Args: []string{"203.0.113.7/24", "dev", link}},
		{Kind: Link, Name: dummy, Args: []string{"type", "bridge"}},
		{Kind: Sysctl, Name: sysctl, Args: []string{"1"}},
		{Kind: Chain, Family: 4, Table: "filter", Name: chain},
		{Kind: Chain, Family: 6, Table: "nat", Name: chain},
		{Kind: Rule, Family: 4, Table: "filter", Args: []string{"-A", chain, "-s", "203.0.113.0/24", "-j", "DROP"}},
		{Kind: Rule, Family: 4, Table: "filter", Args: []string{"-I", "FORWARD", "1", "-j", chain}},
		{Kind: Chain, Family: 4, Table: "filter", Netns: ns, Name: chain},
		{Kind: Dir, Name: dir},
		{Kind: Cgroup, Name: cg},
	}
	before, err := ReadSysctl("net.ipv4.ip_forward")
	if err != nil {
		t.Fatal(err)
	}
	netnsMounted := isMountPoint(NetnsDir)
	t.Cleanup(func() { _ = j.Undo() })
	for _, c := range changes {
		if err := j.Do(c); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if c.Kind == Link {
			if c.Netns != "" {
				sh(t, "ip", "-n", c.Netns, "link", "set", c.Name, "up")
			} else {
				sh(t, "ip", "link", "set", c.Name, "up")
			}
		}
	}
	if err := j.Do(Change{Kind: Route, Netns: ns, Args: []string{"198.51.100.0/24", "dev", link}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Remember("net.ipv4.ip_forward"); err != nil {
		t.Fatal(err)
	}
	// Made.
	if v, _ := ReadSysctl(sysctl); v != "1" {
		t.Errorf("%s = %s, want 1", sysctl, v)
	}
	if !strings.Contains(sh(t, "ip", "-n", ns, "route"), "198.51.100.0/24") {
		t.Error("route not made")
	}
	if !strings.Contains(sh(t, "iptables", "-w", "-S", "FORWARD"), "-j "+chain) {
		t.Error("jump not made")
	}
	if dirs := CgroupDirs(cg); len(dirs) == 0 {
		t.Error("cgroup not made")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Error(err)
	}
	// A directory that was there before is not recorded, so not removed.
	mine := t.TempDir()
	if err := j.Do(Change{Kind: Dir, Name: mine}); err != nil {
		t.Fatal(err)
	}
	// A sysctl set to the value it has is not recorded.
	n := len(j.Changes())
	if err := j.Do(Change{Kind: Sysctl, Name: sysctl, Args: []string{"1"}}); err != nil || len(j.Changes()) != n {
		t.Errorf("setting a sysctl to its value: err %v, %d changes (want %d)", err, len(j.Changes()), n)
	}

	// A crash: another process reads the journal and undoes it. The
	// kubelet changed the remembered sysctl meanwhile.
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(map[string]string{"0": "1", "1": "0"}[before]), 0o644); err != nil {
		t.Fatal(err)
	}
	j2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := len(changes) + 2 // the route and the remembered sysctl
	if !netnsMounted {
		want++ // the netns made /run/netns a shared mount first
	}
	if got := len(j2.Changes()); got != want {
		t.Fatalf("journal read back holds %d changes, want %d", got, want)
	}
	if err := j2.Undo(); err != nil {
		t.Fatal(err)
	}
	if Exists(path) {
		t.Error("journal file left after a complete undo")
	}
	if v, _ := ReadSysctl("net.ipv4.ip_forward"); v != before {
		t.Errorf("ip_forward = %s after undo, want %s", v, before)
	}
	if exists("ip", "netns", "exec", ns, "true") {
		t.Error("netns left")
	}
	if isMountPoint(NetnsDir) != netnsMounted {
		t.Errorf("%s a mount point: %v before, %v after undo", NetnsDir, netnsMounted, isMountPoint(NetnsDir))
	}
	if exists("ip", "link", "show", dummy) {
		t.Error("link left")
	}
	if exists("iptables", "-w", "-S", chain) || exists("ip6tables", "-w", "-t", "nat", "-S", chain) {
		t.Error("chain left")
	}
	if strings.Contains(sh(t, "iptables", "-w", "-S", "FORWARD"), chain) {
		t.Error("jump left")
	}
	if dirs := CgroupDirs(cg); len(dirs) > 0 {
		t.Errorf("cgroup left: %v", dirs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory left: %v", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a directory that was there before was removed: %v", err)
	}
	// Undoing again finds nothing to do, and is no error.
	for _, c := range changes {
		if err := undo(c); err != nil {
			t.Errorf("undo %s twice: %v", c, err)
		}
	}
}

// Revert undoes only the matching changes and keeps the rest recorded.
func TestJournalRevert(t *testing.T) {
	privilege.NeedRoot(t, "ip", "iptables", "ip6tables")
	chain := fmt.Sprintf("CRAWL-HCREV-%d", os.Getpid()%100000)
	j, err := Open(filepath.Join(t.TempDir(), "journal.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Undo() })
	rule := func(src string) Change {
		return Change{Kind: Rule, Family: 4, Table: "filter", Args: []string{"-A", chain, "-s", src, "-j", "DROP"}}
	}
	for _, c := range []Change{{Kind: Chain, Family: 4, Table: "filter", Name: chain}, rule("192.0.2.1/32"), rule("192.0.2.2/32")} {
		if err := j.Do(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Revert(func(c Change) bool { return c.Kind == Rule && c.Args[3] == "192.0.2.1/32" }); err != nil {
		t.Fatal(err)
	}
	rules := sh(t, "iptables", "-w", "-S", chain)
	if strings.Contains(rules, "192.0.2.1/32") || !strings.Contains(rules, "192.0.2.2/32") {
		t.Errorf("after reverting one rule:\n%s", rules)
	}
	if got := len(j.Changes()); got != 2 {
		t.Errorf("%d changes recorded, want 2", got)
	}
}

func TestDeleteArgs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"-A FORWARD -j X", "-D FORWARD -j X"},
		{"-I FORWARD 1 -j X", "-D FORWARD -j X"},
		{"-I INPUT -s 10.0.0.0/8 -j X", "-D INPUT -s 10.0.0.0/8 -j X"},
		{"-A POSTROUTING -s 10.0.0.0/24 -o v -j SNAT --to-source 79.139.58.98", "-D POSTROUTING -s 10.0.0.0/24 -o v -j SNAT --to-source 79.139.58.98"},
	} {
		if got := strings.Join(DeleteArgs(strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("DeleteArgs(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestSplitRule(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`-A INPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
			[]string{"-A", "INPUT", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"}},
		{`-A X -m comment --comment "a \"quoted\" word" -j Y`, []string{"-A", "X", "-m", "comment", "--comment", `a "quoted" word`, "-j", "Y"}},
		{`-A X --comment "" -j Y`, []string{"-A", "X", "--comment", "", "-j", "Y"}},
		{"  -N   KUBE-FORWARD ", []string{"-N", "KUBE-FORWARD"}},
	} {
		if got := SplitRule(c.in); strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("SplitRule(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A shared self-mount is made once, sees what is mounted inside it later,
// and is undone with those mounts; one that was there before is left.
func TestSharedMount(t *testing.T) {
	privilege.NeedRoot(t)
	dir := filepath.Join(t.TempDir(), "netns")
	j, err := Open(filepath.Join(t.TempDir(), "journal.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Undo() })
	if err := j.Do(Change{Kind: SharedMount, Name: dir}); err != nil {
		t.Fatal(err)
	}
	if !isMountPoint(dir) {
		t.Fatalf("%s is not a mount point after Do", dir)
	}
	// As containerd does for a Pod: a namespace file bind-mounted inside.
	inner := filepath.Join(dir, "cni-test")
	if err := os.WriteFile(inner, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("/proc/self/ns/net", inner, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	// Already a mount point: not recorded a second time.
	n := len(j.Changes())
	if err := j.Do(Change{Kind: SharedMount, Name: dir}); err != nil || len(j.Changes()) != n {
		t.Errorf("second Do: err %v, %d changes (want %d)", err, len(j.Changes()), n)
	}
	if err := j.Undo(); err != nil {
		t.Fatal(err)
	}
	if isMountPoint(dir) || isMountPoint(inner) {
		t.Errorf("after Undo: %s mounted %v, %s mounted %v", dir, isMountPoint(dir), inner, isMountPoint(inner))
	}
	if err := os.Remove(inner); err != nil {
		t.Errorf("the namespace file cannot be removed after Undo: %v", err)
	}
}
