package hostchange

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// What the kubelet, kube-proxy, containerd and the CNI plugins make on the
// machine by themselves, which no Journal records: iptables chains of
// their prefixes, Pod network namespaces, and directories they create when
// missing. A Snapshot taken before the first node starts tells them apart
// from what other software made; Sweep removes what is new.
var (
	sweptChainPrefixes = []string{"KUBE-", "CNI-"}
	// OutsidePaths are created by containerd, the CNI plugins, the
	// kubelet and libmount when missing.
	OutsidePaths = []string{"/run/containerd", "/run/netns", "/run/mount", "/var/log/containers",
		"/var/log/pods", "/var/lib/cni", "/var/lib/kubelet", "/etc/cni", "/opt/cni", "/opt/containerd"}
	tables = []string{"filter", "nat", "mangle", "raw"}
)

// Snapshot is what the machine had before the dev cluster's nodes.
type Snapshot struct {
	Chains []string `json:"chains"` // "4 nat KUBE-SERVICES"
	Netns  []string `json:"netns"`
	Paths  []string `json:"paths"`
}

// Take records the machine's chains, Pod network namespaces and paths.
func Take() Snapshot {
	s := Snapshot{Chains: chains(), Netns: podNetns()}
	for _, p := range OutsidePaths {
		if _, err := os.Stat(p); err == nil {
			s.Paths = append(s.Paths, p)
		}
	}
	return s
}

// Save writes the snapshot, unless one is there already (an earlier up
// that was never torn down took the machine's real state).
func (s Snapshot) Save(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// LoadSnapshot reads a saved snapshot; ok is false when there is none.
func LoadSnapshot(path string) (s Snapshot, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	return s, true, json.Unmarshal(b, &s)
}

// chains lists the chains of the swept prefixes in every table of both
// families, as "FAMILY TABLE CHAIN".
func chains() []string {
	var out []string
	for _, fam := range []int{4, 6} {
		for _, t := range tables {
			rules, err := IPTables("", fam, t, "-S")
			if err != nil {
				continue
			}
			for _, l := range strings.Split(rules, "\n") {
				f := strings.Fields(l)
				if len(f) == 2 && f[0] == "-N" && hasPrefix(f[1], sweptChainPrefixes) {
					out = append(out, fmt.Sprintf("%d %s %s", fam, t, f[1]))
				}
			}
		}
	}
	return out
}

func hasPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}

// podNetns lists the network namespaces the CNI plugins made for Pods.
func podNetns() []string {
	out, _ := exec.Command("ip", "netns", "list").Output()
	var ns []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "cni-") {
			ns = append(ns, f[0])
		}
	}
	return ns
}

// New is what the machine has now that it did not have at the snapshot.
func (s Snapshot) New() Snapshot {
	now := Take()
	var d Snapshot
	for _, c := range now.Chains {
		if !slices.Contains(s.Chains, c) {
			d.Chains = append(d.Chains, c)
		}
	}
	for _, n := range now.Netns {
		if !slices.Contains(s.Netns, n) {
			d.Netns = append(d.Netns, n)
		}
	}
	for _, p := range now.Paths {
		if !slices.Contains(s.Paths, p) {
			d.Paths = append(d.Paths, p)
		}
	}
	return d
}

// Sweep removes what is new since the snapshot: the jumps into new chains,
// then the chains, the Pod network namespaces and the paths.
func (s Snapshot) Sweep() error {
	d := s.New()
	var errs []error
	for _, c := range d.Chains {
		var fam int
		var table, chain string
		fmt.Sscanf(c, "%d %s %s", &fam, &table, &chain)
		rules, _ := IPTables("", fam, table, "-S")
		for _, l := range strings.Split(rules, "\n") {
			f := SplitRule(l)
			if len(f) > 2 && f[0] == "-A" && slices.Contains(f, "-j") && f[slices.Index(f, "-j")+1] == chain {
				if _, err := IPTables("", fam, table, DeleteArgs(f)...); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if _, err := IPTables("", fam, table, "-F", chain); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range d.Chains {
		var fam int
		var table, chain string
		fmt.Sscanf(c, "%d %s %s", &fam, &table, &chain)
		if _, err := IPTables("", fam, table, "-X", chain); err != nil {
			errs = append(errs, err)
		}
	}
	for _, n := range d.Netns {
		if err := absentOK(run("ip", "netns", "delete", n)); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range d.Paths {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Lines describes what the snapshot holds, one thing a line.
func (s Snapshot) Lines() []string {
	var out []string
	for _, c := range s.Chains {
		out = append(out, "iptables chain "+c)
	}
	for _, n := range s.Netns {
		out = append(out, "netns "+n)
	}
	for _, p := range s.Paths {
		out = append(out, "path "+p)
	}
	return out
}

// SplitRule splits a line of `iptables -S` into its arguments: words, and
// double-quoted strings (comments) with their backslash escapes.
func SplitRule(line string) []string {
	var out []string
	var cur strings.Builder
	in, word := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			word = true
		case c == '"':
			in, word = !in, true
		case (c == ' ' || c == '\t') && !in:
			if word {
				out = append(out, cur.String())
				cur.Reset()
				word = false
			}
		default:
			cur.WriteByte(c)
			word = true
		}
	}
	if word {
		out = append(out, cur.String())
	}
	return out
}
