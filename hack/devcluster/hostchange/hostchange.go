// Package hostchange is the dev cluster's record of what it changed on this
// machine: links, addresses, routes, network namespaces, iptables chains
// and rules, sysctls, cgroups and directories. Each change is written to a
// journal file before it is made, so that teardown undoes exactly what was
// done, in reverse order, even after a crash halfway through; nothing that
// was on the machine before is touched.
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
	"syscall"
)

// Kind names what a Change made; each kind has one way to be undone.
type Kind string

const (
	// Netns is `ip netns add Name`; undone by `ip netns delete`, which
	// takes everything inside the namespace with it.
	Netns Kind = "netns"
	// Link is `ip link add Name Args...` (in Netns, when set); undone by
	// `ip link delete Name`, which takes its addresses and routes along.
	Link Kind = "link"
	// Addr is `ip addr add Args...` (in Netns); undone by `ip addr del`.
	Addr Kind = "addr"
	// Route is `ip route add Args...` (in Netns; Family 6 for IPv6);
	// undone by `ip route del`.
	Route Kind = "route"
	// Chain is `iptables -t Table -N Name` (Family 4 or 6); undone by
	// flushing and deleting it.
	Chain Kind = "chain"
	// Rule is `iptables -t Table Args...` where Args starts with -A CHAIN
	// or -I CHAIN [N]; undone by the same rule with -D.
	Rule Kind = "rule"
	// Sysctl is a value written to /proc/sys/Name, Old the one before
	// (also recorded without a write, for values the kubelet sets).
	Sysctl Kind = "sysctl"
	// Dir is a directory this package created (it did not exist);
	// undone by removing it and everything in it.
	Dir Kind = "dir"
	// Cgroup is a cgroup Name made in every hierarchy under
	// /sys/fs/cgroup; undone by killing what still runs in it and
	// removing it with its children, deepest first.
	Cgroup Kind = "cgroup"
	// SharedMount is a directory bind-mounted on itself and made shared,
	// as `ip netns add` does to /run/netns when it first runs. Made before
	// anything mounts namespace files there (containerd mounts Pods' files
	// into a plain directory): a mount iproute2 makes later would hide
	// those files' mounts beneath it, where nothing can unmount them.
	// Undone by unmounting it with what is still mounted inside.
	SharedMount Kind = "shared-mount"
)

// NetnsDir is where ip and containerd keep named network namespaces.
const NetnsDir = "/run/netns"

// Change is one change to the machine, with what it takes to undo it.
type Change struct {
	Kind   Kind     `json:"kind"`
	Name   string   `json:"name,omitempty"`
	Netns  string   `json:"netns,omitempty"`
	Family int      `json:"family,omitempty"`
	Table  string   `json:"table,omitempty"`
	Args   []string `json:"args,omitempty"`
	Old    string   `json:"old,omitempty"`
}

func (c Change) String() string {
	var b strings.Builder
	b.WriteString(string(c.Kind))
	if c.Netns != "" {
		fmt.Fprintf(&b, " (netns %s)", c.Netns)
	}
	if c.Family == 6 {
		b.WriteString(" ipv6")
	}
	if c.Table != "" {
		fmt.Fprintf(&b, " table %s", c.Table)
	}
	if c.Name != "" {
		fmt.Fprintf(&b, " %s", c.Name)
	}
	if len(c.Args) > 0 {
		fmt.Fprintf(&b, " %s", strings.Join(c.Args, " "))
	}
	return b.String()
}

// Journal is the list of changes made so far, kept in a file.
type Journal struct {
	path    string
	changes []Change
}

// Open reads the journal at path, or starts an empty one.
func Open(path string) (*Journal, error) {
	j := &Journal{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &j.changes); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return j, nil
}

// Exists reports whether a journal file is at path: an earlier run made
// changes that were not all undone.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Changes are the recorded changes, oldest first.
func (j *Journal) Changes() []Change { return slices.Clone(j.changes) }

func (j *Journal) save() error {
	if len(j.changes) == 0 {
		if err := os.Remove(j.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(j.changes, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(j.path), 0o755); err != nil {
		return err
	}
	tmp := j.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	// Synced before the change is made: a crash right after it must not
	// leave a change that no record names.
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, j.path)
}

// Do records c, then makes it. A change that fails stays recorded: it may
// have been half made, and undoing a change that is not there is no error.
func (j *Journal) Do(c Change) error {
	switch c.Kind {
	case Dir:
		if _, err := os.Stat(c.Name); err == nil {
			return nil // not ours: leave it when undoing
		}
	case SharedMount:
		if isMountPoint(c.Name) {
			return nil // not ours: leave it when undoing
		}
	case Netns:
		// ip netns add would make this mount itself, and leave it.
		if err := j.Do(Change{Kind: SharedMount, Name: NetnsDir}); err != nil {
			return err
		}
	case Sysctl:
		old, err := ReadSysctl(c.Name)
		if err != nil {
			return err
		}
		if c.Old = old; len(c.Args) == 1 && c.Args[0] == old {
			return nil
		}
		if slices.ContainsFunc(j.changes, func(e Change) bool { return e.Kind == Sysctl && e.Name == c.Name }) {
			// The first record holds the machine's value.
			return apply(c)
		}
	}
	j.changes = append(j.changes, c)
	if err := j.save(); err != nil {
		j.changes = j.changes[:len(j.changes)-1]
		return err
	}
	if err := apply(c); err != nil {
		return fmt.Errorf("%s: %w", c, err)
	}
	return nil
}

// Remember records the current value of a sysctl that another program
// (the kubelet) will set, so that undoing restores it.
func (j *Journal) Remember(sysctl string) error {
	return j.Do(Change{Kind: Sysctl, Name: sysctl})
}

// Revert undoes and forgets the recorded changes that match, newest first.
func (j *Journal) Revert(match func(Change) bool) error {
	var errs []error
	for i := len(j.changes) - 1; i >= 0; i-- {
		if !match(j.changes[i]) {
			continue
		}
		if err := undo(j.changes[i]); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", j.changes[i], err))
			continue
		}
		j.changes = slices.Delete(j.changes, i, i+1)
	}
	if err := j.save(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Undo undoes every recorded change, newest first, and removes the journal
// once all are undone. Changes that fail to undo stay recorded for the next
// try.
func (j *Journal) Undo() error {
	return j.Revert(func(Change) bool { return true })
}

// isMountPoint says whether path is the mount point of a mount in this
// process's mount namespace.
func isMountPoint(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == filepath.Clean(path) {
			return true
		}
	}
	return false
}

func apply(c Change) error {
	switch c.Kind {
	case Netns:
		return run("ip", "netns", "add", c.Name)
	case Link:
		return ipIn(c.Netns, append([]string{"link", "add", c.Name}, c.Args...)...)
	case Addr:
		return ipIn(c.Netns, append([]string{"addr", "add"}, c.Args...)...)
	case Route:
		return ipIn(c.Netns, append(family(c.Family), append([]string{"route", "add"}, c.Args...)...)...)
	case Chain:
		return iptables(c.Netns, c.Family, c.Table, "-N", c.Name)
	case Rule:
		return iptables(c.Netns, c.Family, c.Table, c.Args...)
	case Sysctl:
		if len(c.Args) == 0 {
			return nil // remembered only
		}
		return os.WriteFile(sysctlPath(c.Name), []byte(c.Args[0]), 0o644)
	case Dir:
		return os.MkdirAll(c.Name, 0o755)
	case Cgroup:
		return makeCgroup(c.Name)
	case SharedMount:
		if err := os.MkdirAll(c.Name, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(c.Name, c.Name, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mount %s on itself: %w", c.Name, err)
		}
		return syscall.Mount("", c.Name, "", syscall.MS_SHARED|syscall.MS_REC, "")
	}
	return fmt.Errorf("unknown change kind %q", c.Kind)
}

func undo(c Change) error {
	switch c.Kind {
	case Netns:
		return absentOK(run("ip", "netns", "delete", c.Name))
	case Link:
		if c.Netns != "" && !netnsExists(c.Netns) {
			return nil
		}
		return absentOK(ipIn(c.Netns, "link", "delete", c.Name))
	case Addr, Route:
		if c.Netns != "" && !netnsExists(c.Netns) {
			return nil
		}
		verb := "addr"
		args := c.Args
		if c.Kind == Route {
			verb = "route"
			args = append(family(c.Family), append([]string{verb, "del"}, c.Args...)...)
			return absentOK(ipIn(c.Netns, args...))
		}
		return absentOK(ipIn(c.Netns, append([]string{verb, "del"}, args...)...))
	case Chain:
		if c.Netns != "" && !netnsExists(c.Netns) {
			return nil
		}
		if err := absentOK(iptables(c.Netns, c.Family, c.Table, "-F", c.Name)); err != nil {
			return err
		}
		return absentOK(iptables(c.Netns, c.Family, c.Table, "-X", c.Name))
	case Rule:
		if c.Netns != "" && !netnsExists(c.Netns) {
			return nil
		}
		return absentOK(iptables(c.Netns, c.Family, c.Table, DeleteArgs(c.Args)...))
	case Sysctl:
		if _, err := os.Stat(sysctlPath(c.Name)); err != nil {
			return nil // its device is gone
		}
		return os.WriteFile(sysctlPath(c.Name), []byte(c.Old), 0o644)
	case Dir:
		return os.RemoveAll(c.Name)
	case Cgroup:
		return RemoveCgroup(c.Name)
	case SharedMount:
		if !isMountPoint(c.Name) {
			return nil
		}
		return syscall.Unmount(c.Name, syscall.MNT_DETACH)
	}
	return fmt.Errorf("unknown change kind %q", c.Kind)
}

// DeleteArgs turns a rule's -A CHAIN or -I CHAIN [N] into -D CHAIN.
func DeleteArgs(args []string) []string {
	if len(args) < 2 {
		return args
	}
	rest := args[2:]
	if args[0] == "-I" && len(rest) > 0 && isNumber(rest[0]) {
		rest = rest[1:]
	}
	return append([]string{"-D", args[1]}, rest...)
}

func isNumber(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func family(f int) []string {
	if f == 6 {
		return []string{"-6"}
	}
	return nil
}

// absentOK treats "it is not there" as success: undoing a change that was
// never made, or already undone, is no error.
func absentOK(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range []string{"Cannot find device", "No such file or directory", "No such process",
		"does not exist", "doesn't exist", "Bad rule", "No chain/target/match by that name",
		"Cannot assign requested address", "not found"} {
		if strings.Contains(msg, s) {
			return nil
		}
	}
	return err
}

// ipIn runs ip in a network namespace ("" is this machine's).
func ipIn(netns string, args ...string) error {
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	return run("ip", args...)
}

func iptables(netns string, fam int, table string, args ...string) error {
	cmd := "iptables"
	if fam == 6 {
		cmd = "ip6tables"
	}
	if table == "" {
		table = "filter"
	}
	full := append([]string{cmd, "-w", "-t", table}, args...)
	if netns != "" {
		return run("ip", append([]string{"netns", "exec", netns}, full...)...)
	}
	return run(full[0], full[1:]...)
}

// IPTables runs iptables (family 4) or ip6tables (6) in a network
// namespace ("" is this machine's) and returns its output.
func IPTables(netns string, fam int, table string, args ...string) (string, error) {
	cmd := "iptables"
	if fam == 6 {
		cmd = "ip6tables"
	}
	full := append([]string{cmd, "-w", "-t", table}, args...)
	if netns != "" {
		full = append([]string{"ip", "netns", "exec", netns}, full...)
	}
	out, err := exec.Command(full[0], full[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(full, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func run(name string, args ...string) error {
	_, err := Run(append([]string{name}, args...)...)
	return err
}

// Run runs a command and returns its output; its error names the command
// and quotes what it said.
func Run(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func netnsExists(name string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", name))
	return err == nil
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

// ReadSysctl reads a sysctl's value (dots as in sysctl(8)).
func ReadSysctl(name string) (string, error) {
	b, err := os.ReadFile(sysctlPath(name))
	return strings.TrimSpace(string(b)), err
}
