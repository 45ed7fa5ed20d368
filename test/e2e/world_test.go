package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// The bot as site owners meet it (make demo-world, hack/devcluster/internet):
// two real egress nodes, an internet in a box with public addresses, DNS
// and the bot's reverse zone, the chart with a real cluster's defaults
// (no --crawler-allow-private, FCrDNS required, the egress echo), and
// sites that see the requests the way a site on the internet does.
var (
	botAddrs  = []string{"79.139.58.98", "79.139.58.121"}
	wrongAddr = "79.139.58.200"
)

// worldSite is a website inside the internet: its access log is what the
// site owner reads.
type worldSite struct {
	name     string
	ipv4     string
	ipv6     string
	mu       sync.Mutex
	log      []access
	v6Conns  atomic.Int64
	refused  atomic.Int64
	allow    func(netip.Addr) bool // nil: everyone
	perReq   time.Duration
	pages    int
	requests atomic.Int64
	// upgraded counts the plain-HTTP requests a TLS site redirected to
	// https.
	upgraded atomic.Int64
}

type access struct {
	at     time.Time
	source netip.Addr
	path   string
	ua     string
}

// sources are the distinct addresses the site saw, since since.
func (s *worldSite) sources(since time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, a := range s.log {
		if !a.at.Before(since) && !slices.Contains(out, a.source.String()) {
			out = append(out, a.source.String())
		}
	}
	slices.Sort(out)
	return out
}

// record writes r into the site's access log and returns its source.
func (s *worldSite) record(r *http.Request) netip.Addr {
	ap, _ := netip.ParseAddrPort(r.RemoteAddr)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, access{at: time.Now(), source: ap.Addr().Unmap(), path: r.URL.Path, ua: r.UserAgent()})
	return ap.Addr().Unmap()
}

func (s *worldSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if src := s.record(r); s.allow != nil && !s.allow(src) {
		s.refused.Add(1)
		http.Error(w, "not on the allowlist", http.StatusForbidden)
		return
	}
	if r.URL.Path == "/robots.txt" {
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
		return
	}
	s.requests.Add(1)
	time.Sleep(s.perReq)
	n := 0
	if r.URL.Path != "/" {
		if _, err := fmt.Sscanf(r.URL.Path, "/page-%d", &n); err != nil || n <= 0 || n >= s.pages {
			http.NotFound(w, r)
			return
		}
	}
	next := "/"
	if n+1 < s.pages {
		next = fmt.Sprintf("/page-%d", n+1)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<html><head><title>Page %d of %s</title></head><body><h1>%s</h1><a href="%s">next</a></body></html>`, n, s.name, s.name, next)
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

type world struct {
	c       *realNodeCluster
	dc      string // bin/devcluster
	dir     string
	netns   string
	ca      string
	dnsAddr string
}

func (w *world) devcluster(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(w.dc, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+w.c.kubeconfig, "RN_DIR="+rnDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("devcluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startInternet brings the internet in a box up for the cluster's nodes;
// it goes down before the cluster does.
func startInternet(t *testing.T, c *realNodeCluster, devcluster, coredns string) *world {
	t.Helper()
	if _, err := os.Stat("/run/netns/crawl-internet"); err == nil {
		t.Fatal("the dev cluster's internet runs on this machine (make dev-cluster-down): its addresses are this test's")
	}
	w := &world{c: c, dc: devcluster, dir: filepath.Join(t.TempDir(), "internet"), netns: "crawl-internet"}
	t.Cleanup(func() {
		cmd := exec.Command(devcluster, "internet", "down", "--dir", w.dir, "--nodes-dir", rnDir(), "--kubeconfig", c.kubeconfig)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("devcluster internet down: %v\n%s", err, out)
		}
	})
	w.devcluster(t, "internet", "up", "--dir", w.dir, "--nodes-dir", rnDir(), "--coredns", coredns)
	w.ca = filepath.Join(w.dir, "ca.crt")
	w.dnsAddr = strings.TrimSpace(w.devcluster(t, "internet", "dns"))
	return w
}

// site publishes a name and serves it inside the internet.
func (w *world) site(t *testing.T, s *worldSite, flags ...string) {
	t.Helper()
	out := w.devcluster(t, append([]string{"internet", "site", s.name, "--dir", w.dir}, flags...)...)
	kv := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	s.ipv4, s.ipv6 = kv["ipv4"], kv["ipv6"]
	serve := func(l net.Listener, tls bool) {
		srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
		t.Cleanup(func() { srv.Close() })
		if tls {
			go func() { _ = srv.ServeTLS(l, kv["cert"], kv["key"]) }()
		} else {
			go func() { _ = srv.Serve(l) }()
		}
	}
	if kv["cert"] != "" {
		serve(testutil.ListenInNetns(t, w.netns, "tcp4", s.ipv4+":443"), true)
		// Plain HTTP redirects to HTTPS, as most sites do.
		l := testutil.ListenInNetns(t, w.netns, "tcp4", s.ipv4+":80")
		redirect := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			s.record(r)
			s.upgraded.Add(1)
			http.Redirect(rw, r, "https://"+s.name+r.URL.RequestURI(), http.StatusMovedPermanently)
		})}
		t.Cleanup(func() { redirect.Close() })
		go func() { _ = redirect.Serve(l) }()
		return
	}
	serve(testutil.ListenInNetns(t, w.netns, "tcp4", s.ipv4+":80"), false)
	if s.ipv6 != "" {
		serve(countingListener{testutil.ListenInNetns(t, w.netns, "tcp6", "["+s.ipv6+"]:80"), &s.v6Conns}, false)
	}
}

// fcrdns is the site owner's check of a source address with a standard
// tool: dig -x, then dig, against the internet's DNS server.
func (w *world) fcrdns(t *testing.T, ip string) error {
	t.Helper()
	dig := func(args ...string) string {
		out, err := exec.Command("ip", append([]string{"netns", "exec", w.netns, "dig", "+short", "@" + w.dnsAddr}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("dig %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	name := dig("-x", ip)
	if !strings.HasSuffix(name, ".bot.lohisoft.com.") {
		return fmt.Errorf("%s: PTR %q is not under .bot.lohisoft.com", ip, name)
	}
	if back := dig(name, "A"); back != ip {
		return fmt.Errorf("%s: PTR %s resolves to %q", ip, name, back)
	}
	return nil
}

// ipsJSON fetches the manager's ips.json through the index Service's
// ClusterIP (kube-proxy serves this machine too) and returns its prefixes.
func (c *realNodeCluster) ipsJSON(t *testing.T) []netip.Prefix {
	t.Helper()
	svc := &corev1.Service{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: helmNamespace, Name: helmRelease + "-index"}, svc); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Prefixes []struct {
			IPv4Prefix string `json:"ipv4Prefix"`
		} `json:"prefixes"`
	}
	testutil.Eventually(t, time.Minute, "ips.json", func() error {
		resp, err := http.Get(fmt.Sprintf("http://%s:8082/bot/ips.json", svc.Spec.ClusterIP))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&doc)
	})
	var out []netip.Prefix
	for _, p := range doc.Prefixes {
		out = append(out, netip.MustParsePrefix(p.IPv4Prefix))
	}
	return out
}

// requestCrawl asks for a crawl of each target now, at most every 10 s
// (an Eventually calls it on every try).
func (c *realNodeCluster) requestCrawl(t *testing.T, names ...string) {
	t.Helper()
	if time.Since(c.lastRequest) < 10*time.Second {
		return
	}
	c.lastRequest = time.Now()
	for _, n := range names {
		c.mustKubectl(t, "", "annotate", "crawltarget", n, "-n", "default", "crawl.lohisoft.com/requested-at="+time.Now().UTC().Format(time.RFC3339Nano), "--overwrite")
	}
}

// lastCrawl is when target's last successful crawl ended and the address
// its SiteIndex says it was verified to leave from.
func (c *realNodeCluster) lastCrawl(target string) (time.Time, string, error) {
	ct := &crawlv1.CrawlTarget{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: target}, ct); err != nil {
		return time.Time{}, "", err
	}
	si := &crawlv1.SiteIndex{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: target}, si); err != nil {
		return time.Time{}, "", err
	}
	if ct.Status.LastCrawlTime == nil || readyReason(ct) != "True/"+crawlv1.ReasonCrawled {
		return time.Time{}, "", fmt.Errorf("%s: ready %s", target, readyReason(ct))
	}
	return ct.Status.LastCrawlTime.Time, si.Status.EgressIP, nil
}

// crawledAfter waits until target's last crawl ended after since and
// returns the address it was verified to leave from.
func (c *realNodeCluster) crawledAfter(t *testing.T, target string, since time.Time, timeout time.Duration) string {
	t.Helper()
	var egress string
	testutil.Eventually(t, timeout, target+" crawled after "+since.Format(time.TimeOnly), func() error {
		at, e, err := c.lastCrawl(target)
		if err != nil {
			return err
		}
		if at.Before(since.Truncate(time.Second)) {
			return fmt.Errorf("last crawl at %s", at.Format(time.TimeOnly))
		}
		egress = e
		return nil
	})
	return egress
}

func TestWorldOnTwoEgressNodes(t *testing.T) {
	helm := helmBinary(t)
	coredns := testutil.BuiltTool(t, repoRoot, filepath.Join("bin", "coredns", "coredns"), "coredns-bin")
	if _, err := exec.LookPath("dig"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the world test cannot run on this machine: no dig (apt-get install bind9-dnsutils)")
		}
		t.Skip("no dig (apt-get install bind9-dnsutils)")
	}
	c := startRealNodes(t, 2)
	devcluster := buildBinary(t, "hack/devcluster")
	w := startInternet(t, c, devcluster, coredns)
	nodes := []string{rnNamePrefix + "-1", rnNamePrefix + "-2"}

	// Slow enough that crawls requested together overlap: the manager
	// then spreads them over both nodes (least busy first).
	harbour := &worldSite{name: "harbour-bakery.com", pages: 5, perReq: 400 * time.Millisecond}
	secure := &worldSite{name: "secure-bakery.com", pages: 5, perReq: 400 * time.Millisecond}
	walled := &worldSite{name: "walled-bakery.com", pages: 5, perReq: 400 * time.Millisecond}
	slow := &worldSite{name: "slow-bakery.com", pages: 12, perReq: 1500 * time.Millisecond}
	w.site(t, harbour, "--ipv6")
	w.site(t, secure, "--tls")
	w.site(t, walled)
	w.site(t, slow)

	c.helm(t, helm, "install", helmRelease, "charts/crawl-operator", "--namespace", helmNamespace, "--create-namespace",
		"-f", "hack/demo/world-values.yaml", "--set", "image.tag="+rnImage[strings.LastIndex(rnImage, ":")+1:],
		"--set-file", "crawler.extraCACerts="+w.ca, "--set", "egress.quarantine=10s",
		// The manager, its volume and cluster DNS on the first node, as
		// in production they live off the egress nodes: the second may
		// then be lost without taking them along.
		"--set", "manager.nodeSelector.kubernetes\\.io/hostname="+nodes[0], "--wait", "--timeout", "5m")
	// The walled site's firewall allows only what ips.json lists, as a
	// site owner's WAF rule built from it would.
	allowed := c.ipsJSON(t)
	walled.allow = func(a netip.Addr) bool {
		return slices.ContainsFunc(allowed, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	start := time.Now()
	// Each by its plain http:// URL, as a user writes it: the secure site
	// redirects that to https.
	for _, s := range []*worldSite{harbour, secure, walled} {
		c.mustKubectl(t, fmt.Sprintf("apiVersion: crawl.lohisoft.com/v1beta1\nkind: CrawlTarget\nmetadata: {name: %s, namespace: default}\nspec: {url: \"http://%s/\", delay: 100ms}\n",
			strings.TrimSuffix(s.name, ".com"), s.name), "apply", "-f", "-")
	}
	targets := []string{"harbour-bakery", "secure-bakery", "walled-bakery"}

	t.Run("sites under names are crawled from the bot's two addresses only, never over IPv6", func(t *testing.T) {
		for _, n := range targets {
			c.crawledAfter(t, n, start, 3*time.Minute)
		}
		for _, s := range []*worldSite{harbour, secure, walled} {
			src := s.sources(start)
			if len(src) == 0 || slices.ContainsFunc(src, func(a string) bool { return !slices.Contains(botAddrs, a) }) {
				t.Errorf("%s saw requests from %v, want only %v", s.name, src, botAddrs)
			}
			if s.requests.Load() < int64(s.pages) {
				t.Errorf("%s served %d pages, want %d", s.name, s.requests.Load(), s.pages)
			}
			s.mu.Lock()
			for _, a := range s.log {
				if !strings.HasPrefix(a.ua, "LohiSoftBot/") {
					t.Errorf("%s: a request as %q", s.name, a.ua)
				}
			}
			s.mu.Unlock()
		}
		var all []string
		for _, s := range []*worldSite{harbour, secure, walled} {
			for _, a := range s.sources(start) {
				if !slices.Contains(all, a) {
					all = append(all, a)
				}
			}
		}
		if len(all) != len(botAddrs) {
			t.Errorf("the sites saw %v: crawls did not spread over both egress nodes", all)
		}
		// The secure site was reached through its http→https redirect,
		// and is indexed as the https site it is.
		if secure.upgraded.Load() == 0 {
			t.Errorf("%s's plain-HTTP redirect was never asked", secure.name)
		}
		testutil.Eventually(t, 30*time.Second, "secure-bakery indexed as https://secure-bakery.com:443", func() error {
			key := client.ObjectKey{Namespace: "default", Name: "secure-bakery"}
			ct, si := &crawlv1.CrawlTarget{}, &crawlv1.SiteIndex{}
			if err := c.client.Get(context.Background(), key, ct); err != nil {
				return err
			}
			if err := c.client.Get(context.Background(), key, si); err != nil {
				return err
			}
			const want = "https://secure-bakery.com:443"
			if ct.Status.Site != want || si.Status.Site != want || si.Status.Stats.Pages < int32(secure.pages) {
				return fmt.Errorf("CrawlTarget status.site %q, SiteIndex status.site %q with %d pages; want %s and %d pages",
					ct.Status.Site, si.Status.Site, si.Status.Stats.Pages, want, secure.pages)
			}
			return nil
		})
		if n := harbour.v6Conns.Load(); n != 0 {
			t.Errorf("%d IPv6 connections to %s, which has an AAAA record", n, harbour.name)
		}
		if n := walled.refused.Load(); n != 0 {
			t.Errorf("the site that allows only ips.json's prefixes refused %d requests", n)
		}
	})

	t.Run("each source address passes the site owner's FCrDNS check and is in ips.json", func(t *testing.T) {
		for _, ip := range botAddrs {
			if err := w.fcrdns(t, ip); err != nil {
				t.Error(err)
			}
			if !slices.ContainsFunc(allowed, func(p netip.Prefix) bool { return p.Contains(netip.MustParseAddr(ip)) }) {
				t.Errorf("%s is not in ips.json %v", ip, allowed)
			}
		}
		if err := w.fcrdns(t, wrongAddr); err == nil {
			t.Errorf("%s passed FCrDNS", wrongAddr)
		}
	})

	t.Run("a node leaving with a wrong address gets no crawls until fixed, and sites never see it", func(t *testing.T) {
		w.devcluster(t, "node", "egress-ip", nodes[1], wrongAddr, "--internet-dir", w.dir)
		since := time.Now()
		testutil.Eventually(t, 3*time.Minute, "the mismatch seen on "+nodes[1], func() error {
			c.requestCrawl(t, targets...)
			ev := &corev1.EventList{}
			if err := c.client.List(context.Background(), ev, client.MatchingFields{"involvedObject.name": nodes[1]}); err != nil {
				return err
			}
			for _, e := range ev.Items {
				if e.Reason == "EgressAddressMismatch" && !e.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
					return nil
				}
			}
			return fmt.Errorf("no EgressAddressMismatch Event on %s", nodes[1])
		})
		for _, n := range targets {
			if egress := c.crawledAfter(t, n, since, 3*time.Minute); egress != botAddrs[0] {
				t.Errorf("%s crawled from %q while %s is wrong, want %s", n, egress, nodes[1], botAddrs[0])
			}
		}
		for _, s := range []*worldSite{harbour, secure, walled} {
			if slices.Contains(s.sources(since), wrongAddr) {
				t.Errorf("%s saw %s", s.name, wrongAddr)
			}
		}
		w.devcluster(t, "node", "egress-ip", nodes[1], botAddrs[1], "--internet-dir", w.dir)
		fixed := time.Now()
		// A target keeps the node it crawled from while that node has
		// room, so the three stay on the first one. New targets, two at a
		// time so that the second goes to the less busy node, show the
		// fixed node taking crawls again once its quarantine is over.
		fresh := []*worldSite{
			{name: "fresh-a-bakery.com", pages: 5, perReq: 400 * time.Millisecond},
			{name: "fresh-b-bakery.com", pages: 5, perReq: 400 * time.Millisecond},
		}
		for _, s := range fresh {
			w.site(t, s)
		}
		attempt := 0
		testutil.Eventually(t, 4*time.Minute, nodes[1]+" used again once fixed", func() error {
			for _, s := range fresh {
				if slices.Contains(s.sources(fixed), botAddrs[1]) {
					return nil
				}
			}
			if time.Since(c.lastRequest) < 20*time.Second {
				return fmt.Errorf("no crawl from %s yet", botAddrs[1])
			}
			c.lastRequest = time.Now()
			attempt++
			for _, s := range fresh {
				name := fmt.Sprintf("%s-%d", strings.TrimSuffix(s.name, ".com"), attempt)
				c.mustKubectl(t, fmt.Sprintf("apiVersion: crawl.lohisoft.com/v1beta1\nkind: CrawlTarget\nmetadata: {name: %s, namespace: default}\nspec: {url: \"http://%s/\", delay: 100ms}\n", name, s.name), "apply", "-f", "-")
			}
			return fmt.Errorf("no crawl from %s yet (attempt %d)", botAddrs[1], attempt)
		})
		for _, s := range fresh {
			if src := s.sources(fixed); slices.ContainsFunc(src, func(a string) bool { return !slices.Contains(botAddrs, a) }) {
				t.Errorf("%s saw %v", s.name, src)
			}
		}
	})

	t.Run("a node stopped mid-crawl: the crawl lands from the other address", func(t *testing.T) {
		// The crawl goes to the second node: the first is cordoned until
		// it runs there.
		c.mustKubectl(t, "", "cordon", nodes[0])
		c.mustKubectl(t, "apiVersion: crawl.lohisoft.com/v1beta1\nkind: CrawlTarget\nmetadata: {name: slow-bakery, namespace: default}\nspec: {url: \"http://slow-bakery.com/\", delay: 100ms}\n", "apply", "-f", "-")
		var pod corev1.Pod
		testutil.Eventually(t, 2*time.Minute, "slow-bakery crawling", func() error {
			pods := &corev1.PodList{}
			if err := c.client.List(context.Background(), pods, client.InNamespace("default"), client.MatchingLabels{crawlpod.LabelTarget: "slow-bakery"}); err != nil {
				return err
			}
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && slow.requests.Load() > 0 {
					pod = p
					return nil
				}
			}
			return fmt.Errorf("%d requests", slow.requests.Load())
		})
		c.mustKubectl(t, "", "uncordon", nodes[0])
		lost, other := pod.Spec.NodeName, botAddrs[0]
		if lost != nodes[1] {
			t.Fatalf("the crawl runs on %s with %s cordoned", lost, nodes[0])
		}
		stopped := time.Now()
		w.devcluster(t, "node", "stop", lost)
		t.Cleanup(func() { exec.Command(devcluster, "node", "start", lost, "--kubeconfig", c.kubeconfig).Run() })
		if egress := c.crawledAfter(t, "slow-bakery", stopped, 6*time.Minute); egress != other {
			t.Errorf("the crawl landed from %q, want %s (the node left was %s)", egress, other, lost)
		}
		pods := &corev1.PodList{}
		if err := c.client.List(context.Background(), pods); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == lost && p.CreationTimestamp.After(stopped) {
				t.Errorf("Pod %s/%s was put on %s while it was lost", p.Namespace, p.Name, lost)
			}
		}
		w.devcluster(t, "node", "start", lost)
		t.Logf("crawl retried after losing %s; it is Ready again", lost)
	})

	t.Run("make dev-cluster-down leaves the machine as it found it", func(t *testing.T) {
		c.downDone = true
		if out, err := exec.Command(devcluster, "internet", "down", "--dir", w.dir, "--nodes-dir", rnDir(), "--kubeconfig", c.kubeconfig).CombinedOutput(); err != nil {
			t.Errorf("internet down: %v\n%s", err, out)
		}
		c.down(t)
		for _, problem := range c.before.leftovers(t, rnDir(), rnBridgePrefix+"2") {
			t.Error(problem)
		}
		if _, err := os.Stat("/run/netns/" + w.netns); err == nil {
			t.Errorf("netns %s left", w.netns)
		}
		routes, _ := exec.Command("ip", "route").CombinedOutput()
		if strings.Contains(string(routes), "93.184.215.") || strings.Contains(string(routes), "crawlinet0") {
			t.Errorf("routes left:\n%s", routes)
		}
		if _, err := net.InterfaceByName("crawlinet0"); err == nil {
			t.Error("link crawlinet0 left")
		}
		for _, ipt := range []string{"iptables", "ip6tables"} {
			out, _ := exec.Command(ipt, "-w", "-S").CombinedOutput()
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if strings.Contains(sc.Text(), "CRAWL-") {
					t.Errorf("%s rule left: %s", ipt, sc.Text())
				}
			}
		}
	})
}
