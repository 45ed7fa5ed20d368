package internet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/lohisoft/crawl-operator/hack/devcluster/hostchange"
	"github.com/lohisoft/crawl-operator/internal/testutil"
	"github.com/lohisoft/crawl-operator/internal/testutil/privilege"
)

// need skips a test that changes the machine unless it runs as root with
// its tools and the DNS server (make coredns-bin); under CI=true it fails.
func need(t *testing.T) string {
	t.Helper()
	privilege.NeedRoot(t, "ip", "iptables", "ip6tables")
	return testutil.BuiltTool(t, "../../..", filepath.Join("bin", "coredns", "coredns"), "coredns-bin")
}

// An internet, without a cluster: its DNS answers for sites, LohiSoft's
// hosts and the bot's reverse zone; a site serves this machine over IPv4
// and IPv6 by name; the firewall keeps its addresses to the link; a
// changed egress replaces the node's SNAT rule; down leaves nothing.
func TestInternet(t *testing.T) {
	coredns := need(t)
	testutil.LockMachine(t)
	if _, err := os.Stat("/run/netns/crawl-internet"); err == nil {
		t.Skip("the dev cluster's internet runs here (make dev-cluster-down): its addresses are this test's")
	}
	id := fmt.Sprintf("%d", os.Getpid()%10000)
	dir := t.TempDir()
	// What the fleet makes and the internet fills.
	shared, err := hostchange.Open(filepath.Join(dir, "shared.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shared.Undo() })
	// Its own, so that a dev cluster on this machine is not touched.
	chain := "CRAWL-INET-T" + id
	for _, fam := range []int{4, 6} {
		if err := shared.Do(hostchange.Change{Kind: hostchange.Chain, Family: fam, Table: "filter", Name: chain}); err != nil {
			t.Fatal(err)
		}
	}
	w := Internet{Dir: dir, Netns: "crawl-inet-t" + id, Link: "crinet" + id, Chain: chain,
		Egress: []Egress{
			{Node: "n1", Subnet: netip.MustParsePrefix("100.64.212.0/24"), Address: netip.MustParseAddr("79.139.58.98")},
			{Node: "n2", Subnet: netip.MustParsePrefix("100.64.213.0/24"), Address: netip.MustParseAddr("79.139.58.121")},
		},
		Bot: []netip.Addr{netip.MustParseAddr("79.139.58.98"), netip.MustParseAddr("79.139.58.121")}}
	ctx := context.Background()
	downDone := false
	t.Cleanup(func() {
		if !downDone {
			_ = w.Down()
		}
	})
	devcluster := testutil.BuildBinary(t, "../../..", "hack/devcluster")
	if err := w.Up(ctx, coredns, devcluster); err != nil {
		t.Fatal(err)
	}
	// The egress echo answers this machine with its link address.
	resp, err := http.Get("http://" + EchoAddr.String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	echoed, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(echoed)) != hostLink.Addr().String() {
		t.Errorf("the echo answered %q, want %s", echoed, hostLink.Addr())
	}
	site, err := w.AddSite("Harbour-Bakery.com.", true)
	if err != nil {
		t.Fatal(err)
	}
	if site.Name != "harbour-bakery.com" || !SiteRange4.Contains(site.IPv4) || !SiteRange6.Contains(site.IPv6) {
		t.Fatalf("site %+v", site)
	}
	if _, err := w.AddSite("not a name", false); err == nil {
		t.Error("a site named with spaces was published")
	}
	if err := w.WaitName(ctx, site.Name, site.IPv6, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name  string
		qtype uint16
		want  string
	}{
		{"harbour-bakery.com", dns.TypeA, site.IPv4.String()},
		{"harbour-bakery.com", dns.TypeAAAA, site.IPv6.String()},
		{"crawler1.bot.lohisoft.com", dns.TypeA, "79.139.58.98"},
		{"crawler2.bot.lohisoft.com", dns.TypeA, "79.139.58.121"},
		{"98.58.139.79.in-addr.arpa", dns.TypePTR, "crawler1.bot.lohisoft.com."},
		{"121.58.139.79.in-addr.arpa", dns.TypePTR, "crawler2.bot.lohisoft.com."},
		{"echo.lohisoft.com", dns.TypeA, EchoAddr.String()},
	} {
		got, err := Lookup(ctx, c.name, c.qtype)
		if err != nil || len(got) != 1 || got[0] != c.want {
			t.Errorf("%s %s = %v, %v; want %s", c.name, dns.TypeToString[c.qtype], got, err, c.want)
		}
	}
	if got, err := Lookup(ctx, "unknown.example.com", dns.TypeA); err == nil || !strings.Contains(err.Error(), "NXDOMAIN") {
		t.Errorf("an unknown name: %v, %v; want NXDOMAIN", got, err)
	}

	// A web server in the internet, reached from this machine on both
	// families, seeing this machine's link address.
	for _, addr := range []netip.Addr{site.IPv4, site.IPv6} {
		l := testutil.ListenInNetns(t, w.Netns, "tcp", netip.AddrPortFrom(addr, 80).String())
		seen := make(chan string, 1)
		go func() {
			_ = http.Serve(l, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				seen <- r.RemoteAddr
				io.WriteString(rw, "hello from "+r.Host)
			}))
		}()
		client := &http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get("http://" + netip.AddrPortFrom(addr, 80).String() + "/")
		if err != nil {
			t.Fatalf("GET %s: %v", addr, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(body), "hello from") {
			t.Errorf("GET %s: %q", addr, body)
		}
		from := <-seen
		if addr.Is4() && !strings.HasPrefix(from, hostLink.Addr().String()+":") {
			t.Errorf("the site saw %s, want this machine's link address %s", from, hostLink.Addr())
		}
	}

	// HTTPS with a certificate of the internet's CA: trusted by who adds
	// the CA, by no one else.
	certFile, keyFile, err := w.IssueCert(site.Name)
	if err != nil {
		t.Fatal(err)
	}
	tl := testutil.ListenInNetns(t, w.Netns, "tcp", netip.AddrPortFrom(site.IPv4, 443).String())
	go func() {
		_ = http.ServeTLS(tl, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, "secure") }), certFile, keyFile)
	}()
	caPEM, err := os.ReadFile(w.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	// The site's name resolves to its address through the internet's DNS.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, _ := net.SplitHostPort(addr)
		ips, err := Lookup(ctx, host, dns.TypeA)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("lookup %s: %v", host, err)
		}
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(ips[0], port))
	}
	for trusted, want := range map[bool]bool{true: true, false: false} {
		tr := &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{}}
		if trusted {
			tr.TLSClientConfig.RootCAs = pool
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("https://" + site.Name + "/")
		if (err == nil) != want {
			t.Errorf("HTTPS with the CA trusted=%v: %v", trusted, err)
		}
		if err == nil {
			resp.Body.Close()
		}
	}

	// The machine's firewall: the internet's addresses only through the
	// link, for both families; the nodes' Pods leave with their address.
	for fam, want := range map[int]string{
		4: "-A " + w.GuardChain() + " -d " + SiteRange4.String() + " ! -o " + w.Link + " -j DROP",
		6: "-A " + w.GuardChain() + " -d " + SiteRange6.String() + " ! -o " + w.Link + " -j DROP",
	} {
		out, err := hostchange.IPTables("", fam, "filter", "-S", w.GuardChain())
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("IPv%d guard lacks %q: %v\n%s", fam, want, err, out)
		}
	}
	nat := func() string {
		out, _ := hostchange.IPTables("", 4, "nat", "-S", "POSTROUTING")
		return out
	}
	if n := nat(); !strings.Contains(n, "-s 100.64.213.0/24 -o "+w.Link+" -j SNAT --to-source 79.139.58.121") {
		t.Errorf("no SNAT for n2:\n%s", n)
	}
	if err := w.SetEgress("n2", netip.MustParseAddr("198.51.100.7")); err != nil {
		t.Fatal(err)
	}
	if n := nat(); strings.Contains(n, "--to-source 79.139.58.121") || !strings.Contains(n, "-s 100.64.213.0/24 -o "+w.Link+" -j SNAT --to-source 198.51.100.7") {
		t.Errorf("after egress-ip n2 198.51.100.7:\n%s", n)
	}
	// The internet routes back to the bot's addresses and to whatever a
	// node leaves with, nowhere else.
	routes, _ := hostchange.Run("ip", "-n", w.Netns, "route")
	if !strings.Contains(routes, "79.139.58.121 via") || !strings.Contains(routes, "198.51.100.7 via") || strings.Contains(routes, "default") {
		t.Errorf("the internet's routes:\n%s", routes)
	}
	// Put right again, the wrong address's route goes.
	if err := w.SetEgress("n2", netip.MustParseAddr("79.139.58.121")); err != nil {
		t.Fatal(err)
	}
	routes, _ = hostchange.Run("ip", "-n", w.Netns, "route")
	if strings.Contains(routes, "198.51.100.7") || !strings.Contains(nat(), "--to-source 79.139.58.121") {
		t.Errorf("after egress-ip n2 79.139.58.121, routes:\n%s", routes)
	}
	if err := w.SetEgress("n9", netip.MustParseAddr("79.139.58.98")); err == nil {
		t.Error("egress-ip of a node the internet does not know")
	}

	downDone = true
	w2, err := Load(dir) // as another command would
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Down(); err != nil {
		t.Fatal(err)
	}
	if left := w2.Leftovers(); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
	if n := nat(); strings.Contains(n, w.Link) {
		t.Errorf("SNAT rules left:\n%s", n)
	}
	for _, fam := range []int{4, 6} {
		if out, err := hostchange.IPTables("", fam, "filter", "-S", w.GuardChain()); err == nil {
			t.Errorf("guard chain left:\n%s", out)
		}
		if out, _ := hostchange.IPTables("", fam, "filter", "-S", chain); strings.Contains(out, w.Link) {
			t.Errorf("rules left in %s:\n%s", chain, out)
		}
	}
	if out, _ := hostchange.Run("ip", "route"); strings.Contains(out, w.Link) {
		t.Errorf("routes left:\n%s", out)
	}
}
