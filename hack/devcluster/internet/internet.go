// Package internet is the dev cluster's internet in a box: a network
// namespace of this machine that holds public addresses (IPv4 and IPv6)
// for test websites, LohiSoft's own hosts (the authoritative DNS server,
// the egress echo) and the reverse zone of the bot's egress addresses. The
// real nodes' Pods reach it through the machine, each leaving with its
// node's egress address (SNAT), as on a real egress node; it routes back
// only to those addresses. Its addresses are routed into it and nowhere
// else, and a firewall rule drops anything addressed to them that would
// take another way: nothing it is given leaves this machine.
package internet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lohisoft/crawl-operator/hack/devcluster/hostchange"
	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
	"github.com/lohisoft/crawl-operator/hack/devcluster/node"
)

// The internet's address plan. Public addresses, never reached from this
// machine but through the namespace: the sites' ranges, and LohiSoft's
// own hosts beside the bot's egress addresses.
var (
	// SiteRange4 and SiteRange6 hold the sites' addresses.
	SiteRange4 = netip.MustParsePrefix("93.184.215.0/24")
	SiteRange6 = netip.MustParsePrefix("2a01:4f8:c0c:bee::/64")
	// DNSAddr is ns.lohisoft.com, the authoritative server of every zone
	// here, the bot's reverse zone among them.
	DNSAddr = netip.MustParseAddr("79.139.58.53")
	// EchoAddr is echo.lohisoft.com, which answers with the caller's
	// address (--egress-echo-url).
	EchoAddr = netip.MustParseAddr("79.139.58.80")
	// The link between the machine and the namespace (link-local: it is
	// no one's public address).
	hostLink  = netip.MustParsePrefix("169.254.213.1/30")
	worldLink = netip.MustParsePrefix("169.254.213.2/30")
	// IPv6's link is global, so that this machine talks to the sites from
	// it (a ULA or other global address of the machine would be chosen
	// instead of a link-local one, and the internet has no way back to
	// those).
	hostLink6 = netip.MustParsePrefix("2a01:4f8:c0c:beef::1/64")
)

// Names of LohiSoft's hosts in the internet.
const (
	DNSName  = "ns.lohisoft.com"
	EchoName = "echo.lohisoft.com"
)

// Internet is one internet in a box, kept in Dir/internet.json.
type Internet struct {
	Dir string `json:"dir"`
	// Netns is the namespace's name; Link the machine's end of the veth
	// into it.
	Netns string `json:"netns"`
	Link  string `json:"link"`
	// Chain is the nodes' chain for their Pods' off-cluster traffic
	// (node.InternetChain), where the internet accepts its own.
	Chain string `json:"chain"`
	// Egress maps each real node's Pod range to the address its Pods
	// leave with.
	Egress []Egress `json:"egress"`
	// Bot are the bot's published addresses, crawler1, crawler2, ...:
	// what the reverse zone names and where the internet routes back,
	// whatever a node's egress is set to.
	Bot   []netip.Addr `json:"bot"`
	Sites []Site       `json:"sites"`
	// Serial is the zone's SOA serial, raised on every change.
	Serial uint32 `json:"serial"`
}

// Egress is one node's way out: its Pods' range and its address.
type Egress struct {
	Node    string       `json:"node"`
	Subnet  netip.Prefix `json:"subnet"`
	Address netip.Addr   `json:"address"`
}

// Site is a published name and its addresses.
type Site struct {
	Name string     `json:"name"`
	IPv4 netip.Addr `json:"ipv4"`
	IPv6 netip.Addr `json:"ipv6,omitzero"`
}

func file(dir string) string { return filepath.Join(dir, "internet.json") }

func (w Internet) journalPath() string { return filepath.Join(w.Dir, "journal.json") }
func (w Internet) zonePath() string    { return filepath.Join(w.Dir, "db.internet") }
func (w Internet) dns() hostproc.Proc  { return hostproc.Proc{Dir: w.Dir, Name: "coredns"} }

// Load reads the internet in dir.
func Load(dir string) (Internet, error) {
	b, err := os.ReadFile(file(dir))
	if errors.Is(err, os.ErrNotExist) {
		return Internet{}, fmt.Errorf("no internet in %s (make demo-world, or devcluster internet up)", dir)
	}
	if err != nil {
		return Internet{}, err
	}
	var w Internet
	return w, json.Unmarshal(b, &w)
}

// Exists reports whether dir holds an internet or its remains.
func Exists(dir string) bool {
	_, err := os.Stat(file(dir))
	return err == nil || hostchange.Exists(filepath.Join(dir, "journal.json"))
}

func (w Internet) save() error {
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file(w.Dir), b, 0o644)
}

// New plans an internet for the fleet's nodes: each one's Pods leave with
// its egress address.
func New(dir, netns, link string, f node.Fleet) Internet {
	w := Internet{Dir: dir, Netns: netns, Link: link, Chain: node.InternetChain}
	for _, n := range f.Nodes {
		w.Egress = append(w.Egress, Egress{Node: n.Name, Subnet: n.Subnet(), Address: n.ExternalIP})
		w.Bot = append(w.Bot, n.ExternalIP)
	}
	return w
}

// Up makes the namespace, its link and routes, the machine's firewall and
// NAT for it, its CA, and starts its DNS server (corednsBin) and the
// egress echo (devcluster, this program).
func (w Internet) Up(ctx context.Context, corednsBin, devcluster string) error {
	if err := os.MkdirAll(w.Dir, 0o755); err != nil {
		return err
	}
	if err := w.save(); err != nil {
		return err
	}
	j, err := hostchange.Open(w.journalPath())
	if err != nil {
		return err
	}
	if len(j.Changes()) > 0 {
		return fmt.Errorf("%s holds changes of an earlier internet: take it down first", w.journalPath())
	}
	for _, c := range w.Changes() {
		if err := j.Do(c); err != nil {
			return err
		}
		if c.Kind == hostchange.Link {
			if err := w.linksUp(); err != nil {
				return err
			}
		}
	}
	for _, e := range w.Egress {
		if err := j.Do(SNAT(w.Link, e)); err != nil {
			return err
		}
	}
	if err := w.makeCA(); err != nil {
		return err
	}
	if err := w.writeZone(); err != nil {
		return err
	}
	if err := w.startDNS(ctx, corednsBin); err != nil {
		return err
	}
	return w.startEcho(ctx, devcluster)
}

// Changes are the internet's changes to the machine, in order: the
// namespace and its link, its routes both ways, its own addresses, and the
// machine's firewall: nothing to its addresses but through the link, and
// the Pods' traffic into it and back.
func (w Internet) Changes() []hostchange.Change {
	ns, link := w.Netns, w.Link
	const peer = "uplink"
	do := func(kind hostchange.Kind, netns string, args ...string) hostchange.Change {
		return hostchange.Change{Kind: kind, Netns: netns, Args: args}
	}
	rule := func(fam int, table string, args ...string) hostchange.Change {
		return hostchange.Change{Kind: hostchange.Rule, Family: fam, Table: table, Args: args}
	}
	out := []hostchange.Change{
		{Kind: hostchange.Netns, Name: ns},
		{Kind: hostchange.Link, Name: link, Args: []string{"type", "veth", "peer", "name", peer, "netns", ns}},
		do(hostchange.Addr, "", hostLink.String(), "dev", link),
		do(hostchange.Addr, "", hostLink6.String(), "dev", link, "nodad"),
		do(hostchange.Addr, ns, worldLink.String(), "dev", peer),
		do(hostchange.Addr, ns, hostLink6.Addr().Next().String()+"/64", "dev", peer, "nodad"),
		// Its own public addresses live on its loopback.
		do(hostchange.Addr, ns, DNSAddr.String()+"/32", "dev", "lo"),
		do(hostchange.Addr, ns, EchoAddr.String()+"/32", "dev", "lo"),
		// This machine: the internet's addresses through the link.
		{Kind: hostchange.Route, Args: []string{SiteRange4.String(), "via", worldLink.Addr().String(), "dev", link}},
		{Kind: hostchange.Route, Args: []string{DNSAddr.String() + "/32", "via", worldLink.Addr().String(), "dev", link}},
		{Kind: hostchange.Route, Args: []string{EchoAddr.String() + "/32", "via", worldLink.Addr().String(), "dev", link}},
		{Kind: hostchange.Route, Family: 6, Args: []string{SiteRange6.String(), "via", hostLink6.Addr().Next().String(), "dev", link}},
	}
	// The internet: back only to the egress addresses.
	for _, a := range w.Bot {
		out = append(out, w.routeBack(a, ""))
	}
	guard := w.GuardChain()
	for _, fam := range []int{4, 6} {
		out = append(out, hostchange.Change{Kind: hostchange.Chain, Family: fam, Table: "filter", Name: guard})
		for _, p := range w.publicPrefixes(fam) {
			out = append(out, rule(fam, "filter", "-A", guard, "-d", p, "!", "-o", link, "-j", "DROP"))
		}
		out = append(out,
			rule(fam, "filter", "-I", "OUTPUT", "1", "-j", guard),
			rule(fam, "filter", "-I", "FORWARD", "1", "-j", guard))
	}
	// The nodes' firewalls send their Pods' off-cluster traffic here:
	// into the internet, and what comes back for it.
	out = append(out,
		rule(4, "filter", "-A", w.Chain, "-o", link, "-j", "ACCEPT"),
		rule(4, "filter", "-A", w.Chain, "-i", link, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"))
	return out
}

// GuardChain holds the rules that keep the internet's addresses to its
// link.
func (w Internet) GuardChain() string { return "CRAWL-GUARD-" + w.Link }

// setupLinks brings the link's two ends and the namespace's loopback up
// (the flags go with the links).
func (w Internet) linksUp() error {
	for _, args := range [][]string{
		{"ip", "link", "set", w.Link, "up"},
		{"ip", "-n", w.Netns, "link", "set", "lo", "up"},
		{"ip", "-n", w.Netns, "link", "set", "uplink", "up"},
	} {
		if err := run(args...); err != nil {
			return err
		}
	}
	return nil
}

// SNAT is the rule that makes a node's Pods leave with its address on the
// way into the internet.
func SNAT(link string, e Egress) hostchange.Change {
	return hostchange.Change{Kind: hostchange.Rule, Family: 4, Table: "nat", Name: e.Node,
		Args: []string{"-A", "POSTROUTING", "-s", e.Subnet.String(), "-o", link, "-j", "SNAT", "--to-source", e.Address.String()}}
}

func (w Internet) publicPrefixes(fam int) []string {
	if fam == 6 {
		return []string{SiteRange6.String()}
	}
	return []string{SiteRange4.String(), DNSAddr.String() + "/32", EchoAddr.String() + "/32"}
}

// SetEgress changes the address a node's Pods leave with, as a NAT gateway
// set up wrongly would. The internet routes back to it, as a real network
// routes to whoever owns that address, so that the node's Pods see their
// answers, and an echo shows them the address they left with.
func (w Internet) SetEgress(nodeName string, addr netip.Addr) error {
	i := slices.IndexFunc(w.Egress, func(e Egress) bool { return e.Node == nodeName })
	if i < 0 {
		return fmt.Errorf("no egress of node %q in the internet", nodeName)
	}
	j, err := hostchange.Open(w.journalPath())
	if err != nil {
		return err
	}
	if err := j.Revert(func(c hostchange.Change) bool { return c.Table == "nat" && c.Name == nodeName }); err != nil {
		return err
	}
	w.Egress[i].Address = addr
	if err := j.Do(SNAT(w.Link, w.Egress[i])); err != nil {
		return err
	}
	// Routes back to addresses no node leaves with any more go; the
	// bot's own stay.
	inUse := func(a string) bool {
		return slices.ContainsFunc(w.Egress, func(e Egress) bool { return e.Address.String() == a })
	}
	if err := j.Revert(func(c hostchange.Change) bool {
		return c.Kind == hostchange.Route && strings.HasPrefix(c.Name, "egress ") && !inUse(strings.TrimPrefix(c.Name, "egress "))
	}); err != nil {
		return err
	}
	routed := slices.Contains(w.Bot, addr) || slices.ContainsFunc(j.Changes(), func(c hostchange.Change) bool { return c.Name == "egress "+addr.String() })
	if !routed {
		if err := j.Do(w.routeBack(addr, "egress "+addr.String())); err != nil {
			return err
		}
	}
	return w.save()
}

// routeBack is the internet's route to an address Pods leave with.
func (w Internet) routeBack(a netip.Addr, name string) hostchange.Change {
	return hostchange.Change{Kind: hostchange.Route, Netns: w.Netns, Name: name,
		Args: []string{a.String() + "/32", "via", hostLink.Addr().String(), "dev", "uplink"}}
}

// AddSite publishes name with the next free address of the sites' range
// (and of their IPv6 range with ipv6), or returns the site as it is.
func (w *Internet) AddSite(name string, ipv6 bool) (Site, error) {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if !validName(name) {
		return Site{}, fmt.Errorf("%q is not a DNS name", name)
	}
	if i := slices.IndexFunc(w.Sites, func(s Site) bool { return s.Name == name }); i >= 0 {
		s := &w.Sites[i]
		if ipv6 && !s.IPv6.IsValid() {
			s.IPv6 = nthAddr(SiteRange6, 10+i)
			if err := run("ip", "-n", w.Netns, "addr", "add", s.IPv6.String()+"/128", "dev", "lo", "nodad"); err != nil {
				return Site{}, err
			}
		}
		return *s, w.publish()
	}
	n := len(w.Sites)
	if n+10 >= 250 {
		return Site{}, errors.New("the sites' range is full")
	}
	s := Site{Name: name, IPv4: nthAddr(SiteRange4, 10+n)}
	if ipv6 {
		s.IPv6 = nthAddr(SiteRange6, 10+n)
	}
	// The addresses live in the namespace, whose removal takes them along.
	if err := run("ip", "-n", w.Netns, "addr", "add", s.IPv4.String()+"/32", "dev", "lo"); err != nil {
		return Site{}, err
	}
	if s.IPv6.IsValid() {
		if err := run("ip", "-n", w.Netns, "addr", "add", s.IPv6.String()+"/128", "dev", "lo", "nodad"); err != nil {
			return Site{}, err
		}
	}
	w.Sites = append(w.Sites, s)
	return s, w.publish()
}

func (w *Internet) publish() error {
	w.Serial++
	if err := w.save(); err != nil {
		return err
	}
	return w.writeZone()
}

func nthAddr(p netip.Prefix, n int) netip.Addr {
	a := p.Masked().Addr()
	for range n {
		a = a.Next()
	}
	return a
}

func validName(s string) bool {
	if s == "" || len(s) > 253 || !strings.Contains(s, ".") {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// Down stops the DNS server and undoes every change; the namespace takes
// the sites' addresses along.
func (w Internet) Down() error {
	var errs []error
	errs = append(errs, w.dns().Stop(5*time.Second), w.echo().Stop(5*time.Second))
	// Whatever else runs in the namespace (the sites' web servers that
	// anyone started with ip netns exec) would keep it alive after its
	// name is deleted.
	for _, pid := range w.Processes() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	time.Sleep(300 * time.Millisecond)
	for _, pid := range w.Processes() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	j, err := hostchange.Open(w.journalPath())
	if err != nil {
		return err
	}
	errs = append(errs, j.Undo())
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if left := w.Leftovers(); len(left) > 0 {
		return fmt.Errorf("internet down, but left behind: %s", strings.Join(left, "; "))
	}
	for _, f := range []string{file(w.Dir), w.zonePath(), filepath.Join(w.Dir, "Corefile"), w.CAFile(), w.caKeyFile()} {
		_ = os.Remove(f)
	}
	_ = os.RemoveAll(filepath.Join(w.Dir, "sites"))
	return nil
}

// Leftovers lists what of the internet is still on the machine.
func (w Internet) Leftovers() []string {
	var out []string
	for _, p := range []hostproc.Proc{w.dns(), w.echo()} {
		if pid, ok := p.PID(); ok {
			out = append(out, fmt.Sprintf("process %s (pid %d)", p.Name, pid))
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", w.Netns)); err == nil {
		out = append(out, "netns "+w.Netns)
	}
	for _, pid := range w.Processes() {
		out = append(out, fmt.Sprintf("process %d in netns %s", pid, w.Netns))
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", w.Link)); err == nil {
		out = append(out, "link "+w.Link)
	}
	if j, err := hostchange.Open(w.journalPath()); err == nil {
		for _, c := range j.Changes() {
			out = append(out, "not undone: "+c.String())
		}
	}
	return out
}

// Processes are the processes running in the internet's namespace.
func (w Internet) Processes() []int {
	var ns syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", w.Netns), &ns); err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name(), "ns", "net"), &st) == nil && st.Ino == ns.Ino && st.Dev == ns.Dev {
			pids = append(pids, pid)
		}
	}
	return pids
}

func run(args ...string) error {
	_, err := hostchange.Run(args...)
	return err
}
