package node

import (
	"encoding/json"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/hack/devcluster/hostchange"
)

func testFleet(t *testing.T, count int) Fleet {
	t.Helper()
	s := DefaultSpec()
	s.Count = count
	f, err := PlanFleet("/state/nodes", s, []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Nodes {
		f.Nodes[i].KubeletPort = 41000 + i
	}
	return f
}

// Two nodes share nothing a kubelet or containerd would fight over, and
// each owns one of the bot's addresses.
func TestPlanFleetTwoNodes(t *testing.T) {
	f := testFleet(t, 2)
	want := []struct{ name, ip, bridge, subnet, gw, dir string }{
		{"realnode-1", "79.139.58.98", "crawlrn1", "100.64.212.0/24", "100.64.212.1", "/state/nodes/realnode-1"},
		{"realnode-2", "79.139.58.121", "crawlrn2", "100.64.213.0/24", "100.64.213.1", "/state/nodes/realnode-2"},
	}
	for i, w := range want {
		n := f.Nodes[i]
		got := []string{n.Name, n.ExternalIP.String(), n.Bridge, n.Subnet().String(), n.Gateway().String(), n.Dir}
		if !slices.Equal(got, []string{w.name, w.ip, w.bridge, w.subnet, w.gw, w.dir}) {
			t.Errorf("node %d = %v, want %+v", i, got, w)
		}
	}
	a, b := f.Nodes[0], f.Nodes[1]
	for what, pair := range map[string][2]string{
		"socket":      {a.Socket(), b.Socket()},
		"cgroup root": {a.CgroupRoot(), b.CgroupRoot()},
		"CNI network": {a.CNINetwork(), b.CNINetwork()},
		"FORWARD":     {a.forwardChain(), b.forwardChain()},
		"INPUT":       {a.inputChain(), b.inputChain()},
	} {
		if pair[0] == pair[1] {
			t.Errorf("both nodes have %s %s", what, pair[0])
		}
	}
	for _, c := range []string{a.forwardChain(), a.inputChain()} {
		if len(c) > 28 {
			t.Errorf("chain %s is longer than iptables allows", c)
		}
	}
}

func TestPlanFleetRefuses(t *testing.T) {
	s := DefaultSpec()
	for name, mod := range map[string]func(*Spec){
		"more nodes than addresses": func(s *Spec) { s.Count = 3 },
		"no node":                   func(s *Spec) { s.Count = 0 },
		"a bridge name too long":    func(s *Spec) { s.BridgePrefix = "averylongbridge" },
		"a Pod range for one node":  func(s *Spec) { s.Count = 2; s.PodSubnet = netip.MustParsePrefix("10.9.0.0/24") },
	} {
		spec := s
		mod(&spec)
		if _, err := PlanFleet("/d", spec, nil); err == nil {
			t.Errorf("%s: planned", name)
		}
	}
}

// The plan survives a round trip through fleet.json: every later command
// reads it.
func TestFleetSaveLoad(t *testing.T) {
	f := testFleet(t, 2)
	f.Dir = t.TempDir()
	for i := range f.Nodes {
		f.Nodes[i].Dir = filepath.Join(f.Dir, f.Nodes[i].Name)
	}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	g, err := LoadFleet(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if g.Nodes[1].Subnet() != f.Nodes[1].Subnet() || g.Nodes[1].ExternalIP != f.Nodes[1].ExternalIP || g.Nodes[1].KubeletPort != 41001 {
		t.Errorf("read back %+v, want %+v", g.Nodes[1], f.Nodes[1])
	}
	if _, err := g.Node("realnode-3"); err == nil || !strings.Contains(err.Error(), "realnode-1, realnode-2") {
		t.Errorf("an unknown node: %v", err)
	}
}

func TestKubeletConfig(t *testing.T) {
	n := testFleet(t, 2).Nodes[1]
	b, err := kubeletYAML(n)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"kind":                     "KubeletConfiguration",
		"apiVersion":               "kubelet.config.k8s.io/v1beta1",
		"cgroupRoot":               "/crawl-realnode-2",
		"cgroupDriver":             "cgroupfs",
		"containerRuntimeEndpoint": "unix:///state/nodes/realnode-2/state/containerd/containerd.sock",
		"address":                  "100.64.213.1",
		"port":                     float64(41001),
		"healthzPort":              float64(0),
		"podLogsDir":               "/state/nodes/realnode-2/state/pod-logs",
		"clusterDomain":            "cluster.local",
		"resolvConf":               "",
	} {
		if got[key] != want {
			t.Errorf("%s = %#v, want %#v", key, got[key], want)
		}
	}
	if ro, ok := got["readOnlyPort"]; ok && ro != float64(0) {
		t.Errorf("readOnlyPort = %v", ro)
	}
	if dns := got["clusterDNS"].([]any); len(dns) != 1 || dns[0] != "10.96.213.10" {
		t.Errorf("clusterDNS = %v", dns)
	}
	if taints := got["registerWithTaints"].([]any); len(taints) != 1 || taints[0].(map[string]any)["key"] != "crawl.lohisoft.com/egress" {
		t.Errorf("registerWithTaints = %v", taints)
	}
}

func TestContainerdConfig(t *testing.T) {
	n := testFleet(t, 1).Nodes[0]
	b, err := ContainerdConfig(n)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if _, err := toml.Decode(string(b), &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	at := func(path ...string) any {
		var v any = got
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		}
		return v
	}
	cri := "io.containerd.grpc.v1.cri"
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"version"}, int64(2)},
		{[]string{"root"}, "/state/nodes/realnode-1/state/containerd/root"},
		{[]string{"grpc", "address"}, n.Socket()},
		{[]string{"plugins", cri, "sandbox_image"}, PauseImage},
		{[]string{"plugins", cri, "restrict_oom_score_adj"}, true},
		{[]string{"plugins", cri, "containerd", "runtimes", "runc", "runtime_type"}, "io.containerd.runc.v2"},
		{[]string{"plugins", cri, "containerd", "runtimes", "runc", "options", "SystemdCgroup"}, false},
		{[]string{"plugins", cri, "containerd", "runtimes", "runc", "options", "Root"}, "/state/nodes/realnode-1/state/runc"},
		{[]string{"plugins", cri, "cni", "conf_dir"}, "/state/nodes/realnode-1/state/cni/net.d"},
		{[]string{"plugins", "io.containerd.internal.v1.opt", "path"}, "/state/nodes/realnode-1/state/containerd/opt"},
	} {
		if v := at(c.path...); v != c.want {
			t.Errorf("%s = %#v, want %#v", strings.Join(c.path, "."), v, c.want)
		}
	}
}

func TestCNIConfig(t *testing.T) {
	n := testFleet(t, 2).Nodes[1]
	b, err := CNIConfig(n)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type, Bridge string
			IPMasq       bool `json:"ipMasq"`
			IPAM         struct {
				Ranges [][]struct{ Subnet, Gateway string }
				Routes []struct{ Dst string }
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Plugins[0]
	if got.Name != "crawl-realnode-2" || p.Type != "bridge" || p.Bridge != "crawlrn2" || p.IPMasq ||
		p.IPAM.Ranges[0][0].Subnet != "100.64.213.0/24" || p.IPAM.Ranges[0][0].Gateway != "100.64.213.1" ||
		len(p.IPAM.Routes) != 1 || p.IPAM.Routes[0].Dst != "0.0.0.0/0" {
		t.Errorf("CNI config:\n%s", b)
	}
}

// The firewall's rules, in order: what a Pod's packet meets.
func TestFirewall(t *testing.T) {
	n := testFleet(t, 2).Nodes[0]
	var rules4, rules6 []string
	for _, c := range Firewall(n) {
		if c.Kind != hostchange.Rule {
			continue
		}
		if c.Family == 4 {
			rules4 = append(rules4, strings.Join(c.Args, " "))
		} else {
			rules6 = append(rules6, strings.Join(c.Args, " "))
		}
	}
	want4 := []string{
		"-A CRAWL-IN-crawlrn1 -i crawlrn1 -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN",
		"-A CRAWL-FWD-crawlrn1 -i crawlrn1 -d 100.64.212.0/22 -j ACCEPT",
		"-A CRAWL-FWD-crawlrn1 -o crawlrn1 -s 100.64.212.0/22 -j ACCEPT",
		"-A CRAWL-IN-crawlrn1 ! -i lo -s 100.64.212.0/22 -p tcp --dport 41000 -j DROP",
		"-A CRAWL-IN-crawlrn1 -i crawlrn1 -d 100.64.212.0/22 -j RETURN",
		"-A CRAWL-FWD-crawlrn1 -i crawlrn1 -j CRAWL-INTERNET",
		"-A CRAWL-FWD-crawlrn1 -o crawlrn1 -j CRAWL-INTERNET",
		"-A CRAWL-FWD-crawlrn1 -i crawlrn1 -j DROP",
		"-A CRAWL-FWD-crawlrn1 -o crawlrn1 -j DROP",
		"-A CRAWL-IN-crawlrn1 -i crawlrn1 -j DROP",
		"-I FORWARD 1 -j CRAWL-FWD-crawlrn1",
		"-I INPUT 1 -j CRAWL-IN-crawlrn1",
	}
	if !slices.Equal(rules4, want4) {
		t.Errorf("IPv4 rules:\n%s\nwant:\n%s", strings.Join(rules4, "\n"), strings.Join(want4, "\n"))
	}
	// No IPv6 for Pods at all: all but the internet's own traffic drops.
	if len(rules6) != 8 || rules6[5] != "-A CRAWL-IN-crawlrn1 -i crawlrn1 -j DROP" {
		t.Errorf("IPv6 rules:\n%s", strings.Join(rules6, "\n"))
	}
}
