package index_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/index/searchapi"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/operator/operatortest"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

var (
	restConfig *rest.Config
	k8s        client.Client
	ctx        = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, "..", &restConfig, &k8s))
}

// zone is the DNS of the test: one address passes FCrDNS, the others fail.
var zone = dnstest.Zone{
	PTR: map[string][]string{
		"79.139.58.98":  {"crawler1.bot.lohisoft.com"},
		"203.0.113.10":  {"crawler9.lohisoft.com"},
		"198.51.100.14": {"crawler4.bot.lohisoft.com"},
	},
	A: map[string][]string{
		"crawler1.bot.lohisoft.com": {"79.139.58.98"},
		"crawler9.lohisoft.com":     {"203.0.113.10"},
		"crawler4.bot.lohisoft.com": {"198.51.100.14"},
	},
}

// harness is the whole manager, wired as cmd/manager wires it, with its
// index server on a loopback port and its results endpoint on a test
// server.
type harness struct {
	ix         *index.Index
	egressOnce sync.Once
	base       string // http://host:port of the index server
	results    string // base URL of the results endpoint
}

func start(t *testing.T, require bool) *harness {
	t.Helper()
	return startWith(t, require, "sqlite://"+filepath.Join(t.TempDir(), "data", "index.db"))
}

// startWith starts the operator on the given storage DSN.
func startWith(t *testing.T, require bool, storage string) *harness {
	t.Helper()
	o := operatortest.Options(t, zone)
	o.Pod.ActiveDeadline = time.Hour
	o.Index.Storage = storage
	o.Index.BindAddress = testutil.FreeAddr(t)
	o.Index.Egress.RequireFCrDNS = require
	// Capacity is the controllers suite's subject; here every site of a
	// test may crawl at once ($TEST_OUTAGE_SITES of them).
	o.MaxCrawlsPerNode = 10000
	// The crawler NetworkPolicy is the controllers suite's subject.
	o.NetworkPolicy.Enabled = false
	op := operatortest.New(t, restConfig, o).Start(t)
	h := &harness{ix: op.Index, base: "http://" + o.Index.BindAddress, results: op.ResultsURL}
	eventually(t, "index server up", func() error {
		_, err := h.get("/bot/ips.json")
		return err
	})
	return h
}

// noRedirects is a client that reports a redirect instead of following it.
var noRedirects = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

type response struct {
	status int
	header http.Header
	body   string
}

func (o *harness) get(path string) (response, error) {
	r, err := noRedirects.Get(o.base + path)
	if err != nil {
		return response{}, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return response{r.StatusCode, r.Header, string(b)}, err
}

func (o *harness) mustGet(t *testing.T, path string) response {
	t.Helper()
	r, err := o.get(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// eventually retries check for up to 30 s.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, what, check)
}

func suffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// createNode creates a Node with an ExternalIP, an egress one when isEgress.
func createNode(t *testing.T, name, ip string, isEgress bool) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if isEgress {
		n.Labels = map[string]string{egress.DefaultLabel: egress.DefaultValue}
	}
	if err := k8s.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k8s.Delete(ctx, n) })
	setIP(t, n, ip)
	return n
}

func setIP(t *testing.T, n *corev1.Node, ip string) {
	t.Helper()
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}, {Type: corev1.NodeExternalIP, Address: ip}}
	if err := k8s.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}

func prefixes(t *testing.T, o *harness) []string {
	t.Helper()
	r := o.mustGet(t, "/bot/ips.json")
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("ips.json: %d %v", r.status, r.header)
	}
	var list struct {
		CreationTime string              `json:"creationTime"`
		Prefixes     []map[string]string `json:"prefixes"`
	}
	if err := json.Unmarshal([]byte(r.body), &list); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, list.CreationTime); err != nil {
		t.Errorf("creationTime %q: %v", list.CreationTime, err)
	}
	out := []string{}
	for _, p := range list.Prefixes {
		out = append(out, p["ipv4Prefix"])
	}
	return out
}

func TestEgressSelfCheckDrivesCrawlsAndPublishedAddresses(t *testing.T) {
	op := start(t, true)
	s := suffix()
	good, bad, plain := "good-"+s, "bad-"+s, "plain-"+s
	createNode(t, good, "79.139.58.98", true)
	badNode := createNode(t, bad, "203.0.113.10", true) // PTR under the bare company domain
	createNode(t, plain, "192.0.2.50", false)

	eventually(t, "both egress nodes checked", func() error {
		if err := fcrdnsWarning(bad, "does not end in .bot.lohisoft.com"); err != nil {
			return err
		}
		if !verified(t, op, good) {
			return fmt.Errorf("%s not verified yet", good)
		}
		return nil
	})
	if verified(t, op, bad) || verified(t, op, plain) {
		t.Error("failing or non-egress node is verified")
	}
	if got := prefixes(t, op); !reflect.DeepEqual(got, []string{"79.139.58.98/32"}) {
		t.Errorf("ips.json lists %q, want only the verified egress node", got)
	}
	page := op.mustGet(t, "/bot")
	if !strings.Contains(page.body, "<code>79.139.58.98</code>") || !strings.Contains(page.body, "crawler1.bot.lohisoft.com") ||
		strings.Contains(page.body, "203.0.113.10") || strings.Contains(page.body, "192.0.2.50") {
		t.Errorf("/bot does not show exactly the verified address and hostname")
	}
	for _, p := range []string{"/bot/ips.json/", "/bot//ips.json", "/bot/./ips.json", "/bot/ips.json/..", "/api/v1/search/"} {
		r := op.mustGet(t, p)
		if r.status/100 == 3 || r.header.Get("Location") != "" || r.status != http.StatusNotFound {
			t.Errorf("GET %s = %d (Location %q), want 404 without redirect", p, r.status, r.header.Get("Location"))
		}
	}

	if v := gauge(t, "crawl_operator_egress_fcrdns_verified", bad); v != 0 {
		t.Errorf("metric for the failing node = %v, want 0", v)
	}
	if v := gauge(t, "crawl_operator_egress_fcrdns_verified", good); v != 1 {
		t.Errorf("metric for the passing node = %v, want 1", v)
	}

	// The failing node gets an address with correct DNS: checked at once,
	// published, crawlable.
	setIP(t, badNode, "198.51.100.14")
	eventually(t, "fixed node published", func() error {
		if got := prefixes(t, op); !reflect.DeepEqual(got, []string{"79.139.58.98/32", "198.51.100.14/32"}) {
			return fmt.Errorf("ips.json lists %q", got)
		}
		return nil
	})
	if !verified(t, op, bad) {
		t.Error("fixed node is not verified")
	}
}

func TestWithoutRequiredFCrDNSEveryEgressNodeCounts(t *testing.T) {
	op := start(t, false)
	s := suffix()
	good, bad := "good-"+s, "bad-"+s
	createNode(t, good, "79.139.58.98", true)
	createNode(t, bad, "203.0.113.12", true) // no PTR at all
	eventually(t, "both listed", func() error {
		if got := prefixes(t, op); !reflect.DeepEqual(got, []string{"79.139.58.98/32", "203.0.113.12/32"}) {
			return fmt.Errorf("ips.json lists %q", got)
		}
		return nil
	})
	eventually(t, "failing node checked", func() error { return fcrdnsWarning(bad, "no reverse DNS (PTR) name for 203.0.113.12") })
	if page := op.mustGet(t, "/bot"); !strings.Contains(page.body, "<code>203.0.113.12</code></th><td>not verified") {
		t.Error("/bot does not mark the unverified address")
	}
}

// A SiteIndex written by a crawl becomes searchable; an Exclusion removes
// every row of its domain and subdomains, and says how many.
func TestSearchAndExclusionThroughTheAPI(t *testing.T) {
	op := start(t, true)
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "index-"}}
	if err := k8s.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns, domain := nsObj.Name, "d"+suffix()+".example"
	for name, host := range map[string]string{"apex": domain, "www": "www." + domain, "other": "other-" + domain} {
		op.site(t, ns, name, host, "Kittiwake cliffs")
	}
	searchURLs := func() ([]string, error) {
		r, err := op.get("/api/v1/search?q=" + url.QueryEscape("kittiwake") + "&limit=100")
		if err != nil || r.status != http.StatusOK {
			return nil, fmt.Errorf("search: %v %d %s", err, r.status, r.body)
		}
		var res searchapi.SearchResponse
		if err := json.Unmarshal([]byte(r.body), &res); err != nil {
			return nil, err
		}
		var urls []string
		for _, x := range res.Results {
			urls = append(urls, x.URL)
		}
		return urls, nil
	}
	eventually(t, "crawled pages searchable", func() error {
		if urls, err := searchURLs(); err != nil || len(urls) != 3 {
			return fmt.Errorf("search = %q, %v", urls, err)
		}
		return nil
	})

	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "ex-"}, Spec: crawlv1.ExclusionSpec{Domain: domain, Description: "asked by email"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k8s.Delete(ctx, ex) })
	eventually(t, "only the other site left", func() error {
		urls, err := searchURLs()
		if err != nil || !reflect.DeepEqual(urls, []string{"https://other-" + domain + "/0"}) {
			return fmt.Errorf("search = %q, %v", urls, err)
		}
		return nil
	})
	for _, host := range []string{domain, "www." + domain} {
		if r := op.mustGet(t, "/api/v1/sites/"+host+"/pages"); r.status != http.StatusNotFound {
			t.Errorf("pages of excluded %s = %d %s, want 404", host, r.status, r.body)
		}
	}
	eventually(t, "purge counted", testutil.ExclusionReady(k8s, ex, -1, 2))
}

// gauge reads one series of a metric from controller-runtime's registry.
// verified reports whether the egress policy in force publishes node with
// a verified hostname: what /bot and, with --require-egress-fcrdns, the
// crawl placement go by.
func verified(t *testing.T, op *harness, node string) bool {
	t.Helper()
	var n corev1.Node
	if err := k8s.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	pub := op.ix.EgressPolicy().Published([]corev1.Node{n})
	return len(pub) == 1 && pub[0].Hostname != ""
}

// fcrdnsWarning finds the Warning Event the self-check gives a failing
// node, with note in its text.
func fcrdnsWarning(node, note string) error {
	var list eventsv1.EventList
	if err := k8s.List(ctx, &list); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == "Node" && e.Regarding.Name == node && e.Type == corev1.EventTypeWarning && e.Reason == "FCrDNSFailed" &&
			strings.Contains(e.Note, note) {
			return nil
		}
	}
	return fmt.Errorf("no FCrDNSFailed Warning for %s among %d events", node, len(list.Items))
}

func gauge(t *testing.T, name, node string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "node" && l.GetValue() == node {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{node=%q}", name, node)
	return 0
}
