package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"

	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/operator"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

var (
	restConfig *rest.Config
	k8s        client.Client
	ctx        = context.Background()
)

// runManagerEnv makes the test binary run the manager's main instead of
// the tests: a test starts real manager processes with it.
const runManagerEnv = "CRAWL_TEST_RUN_MANAGER"

func TestMain(m *testing.M) {
	if os.Getenv(runManagerEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(testenv.Run(m, filepath.Join("..", ".."), &restConfig, &k8s))
}

type answer struct {
	status int
	header http.Header
	body   string
}

func get(url string) (answer, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	r, err := c.Get(url)
	if err != nil {
		return answer{}, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return answer{r.StatusCode, r.Header, string(b)}, err
}

// expect checks that GET url answers status with body containing want.
func expect(url string, status int, want string) func() error {
	return func() error {
		a, err := get(url)
		if err != nil {
			return err
		}
		if a.status != status || !strings.Contains(a.body, want) {
			return fmt.Errorf("GET %s = %d %q, want %d with %q", url, a.status, a.body, status, want)
		}
		return nil
	}
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, what, check)
}

// The manager starts while PostgreSQL cannot be reached (the network to it
// is cut: a proxy the test controls) and does everything that does not
// need the index backend: crawls, SiteIndexes, Exclusions, /bot and
// ips.json. Search says 503 with Retry-After and the "index" readiness
// check fails; the Pod's own probe (/readyz?exclude=index) passes. A
// crawl's final result, whose page texts only the backend keeps, is
// answered 503 with Retry-After and changes nothing; the crawler retries
// it. When the backend can be reached the manager connects, runs its
// migrations, takes the retried result and enforces the Exclusion.
func TestManagerRunsWithoutItsIndexBackend(t *testing.T) {
	proxy := pgtest.StartProxy(t)
	dsn := proxy.DSN(pgtest.Schema(t))
	proxy.Cut()
	dns := dnstest.Start(t, dnstest.Zone{})
	testutil.CreateEgressNode(t, k8s, "egress-manager", "79.139.58.98")

	// The flags as the chart passes them, parsed by the manager's own
	// flag set; the DSN, as from the chart, in the environment (were it
	// not read, the manager would run on SQLite and the backend_up metric
	// below would not be 0).
	t.Setenv(index.StorageEnv, dsn)
	o := operator.Defaults()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{
		"--metrics-bind-address=" + testutil.FreeAddr(t), "--health-probe-bind-address=" + testutil.FreeAddr(t),
		"--results-bind-address=" + testutil.FreeAddr(t), "--index-bind-address=" + testutil.FreeAddr(t),
		"--crawler-image=crawler:test", "--results-url=http://results.test:8083", "--crawl-deadline=1h",
		// Plain HTTP metrics: TestMetricsNeedAuthentication covers the
		// secure endpoint.
		"--metrics-secure=false", "--egress-dns-server=" + dns.Addr, "--egress-check-interval=1h",
		"--manager-namespace=crawl-system",
	}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	exited := make(chan error, 1)
	go func() { exited <- run(runCtx, restConfig, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-exited; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	probes, index, metrics, results := "http://"+o.Manager.ProbeAddr, "http://"+o.Index.BindAddress, "http://"+o.Manager.MetricsAddr, "http://"+o.Manager.ResultsAddr

	select {
	case err := <-exited:
		t.Fatalf("the manager exited while PostgreSQL is unreachable: %v", err)
	case <-time.After(5 * time.Second):
	}
	eventually(t, "liveness", expect(probes+"/healthz", http.StatusOK, "ok"))
	eventually(t, "readiness names the backend", expect(probes+"/readyz", http.StatusInternalServerError, "[-]index failed"))
	eventually(t, "the Pod's probe passes", expect(probes+"/readyz?exclude=index", http.StatusOK, "ok"))
	eventually(t, "/bot", expect(index+"/bot", http.StatusOK, "LohiSoftBot"))
	eventually(t, "ips.json", expect(index+"/bot/ips.json", http.StatusOK, "79.139.58.98/32"))
	eventually(t, "backend_up metric", expect(metrics+"/metrics", http.StatusOK, "crawl_operator_index_backend_up 0"))
	eventually(t, "search says 503", func() error {
		a, err := get(index + "/api/v1/search?q=kittiwake")
		if err != nil {
			return err
		}
		if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, `"error"`) {
			return fmt.Errorf("search = %d %v %s", a.status, a.header, a.body)
		}
		return nil
	})

	// A crawl runs and delivers its result; an Exclusion is enforced.
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mgr-"}}
	if err := k8s.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "seabirds"}, Spec: crawlv1.CrawlTargetSpec{URL: "https://seabirds.example/"}}
	doomed := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed"}, Spec: crawlv1.CrawlTargetSpec{URL: "https://www.doomed.example/"}}
	for _, c := range []*crawlv1.CrawlTarget{ct, doomed} {
		if err := k8s.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	pods := map[string]*corev1.Pod{}
	final := func(c *crawlv1.CrawlTarget) runreport.Report {
		base := strings.TrimSuffix(c.Spec.URL, "/")
		return runreport.Report{Final: true,
			Result: runreport.Crawl{Site: base, Pages: []runreport.Page{{URL: base + "/", StatusCode: 200, Title: "Kittiwake colony", FetchedAt: time.Now()}}}}
	}
	for _, c := range []*crawlv1.CrawlTarget{ct, doomed} {
		pod := &corev1.Pod{}
		eventually(t, "crawler Pod of "+c.Name, func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: crawlpod.PodName(c.Name, 1)}, pod)
		})
		testutil.SetPodPhase(t, k8s, pod, corev1.PodRunning, 0)
		pods[c.Name] = pod
		code, body := testutil.PostReport(t, results, pod, testutil.RunToken(t, k8s, pod), final(c))
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "index backend is unavailable") {
			t.Errorf("final report of %s without a backend: %d %s, want 503", c.Name, code, body)
		}
		si := &crawlv1.SiteIndex{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), si); err != nil || si.Status.Run != "" {
			t.Errorf("a refused report changed SiteIndex %s: %+v (%v)", c.Name, si.Status, err)
		}
	}
	// The crawler NetworkPolicy, from the flags: open the port the results
	// endpoint listens on, in --manager-namespace.
	np := &networkingv1.NetworkPolicy{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: crawlpod.NetworkPolicyName}, np); err != nil {
		t.Fatalf("crawler NetworkPolicy: %v", err)
	}
	_, port, _ := net.SplitHostPort(o.Manager.ResultsAddr)
	if rule := np.Spec.Egress[2]; rule.Ports[0].Port.String() != port ||
		rule.To[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "crawl-system" {
		t.Errorf("results rule %+v: want port %s in crawl-system", rule, port)
	}
	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "mgr-"}, Spec: crawlv1.ExclusionSpec{Domain: "doomed.example", Description: "asked by email"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k8s.Delete(ctx, ex) })
	eventually(t, "Exclusion enforced in the cluster, the backend pending", func() error {
		got := &crawlv1.Exclusion{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, crawlv1.ConditionReady)
		if got.Status.MatchedTargets != 1 || c == nil || c.Reason != "BackendUnavailable" {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})

	// The backend comes: the manager connects and migrates, the crawler's
	// retry is taken, the Exclusion is enforced.
	proxy.Restore()
	back := time.Now()
	eventually(t, "ready", expect(probes+"/readyz", http.StatusOK, "ok"))
	eventually(t, "the crawler's retry taken", func() error {
		code, body := testutil.PostReport(t, results, pods["seabirds"], testutil.RunToken(t, k8s, pods["seabirds"]), final(ct))
		if code != http.StatusOK {
			return fmt.Errorf("final report: %d %s", code, body)
		}
		return nil
	})
	testutil.SetPodPhase(t, k8s, pods["seabirds"], corev1.PodSucceeded, 0)
	eventually(t, "target Ready", func() error {
		got := &crawlv1.CrawlTarget{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ct), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, crawlv1.ConditionReady) {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})
	eventually(t, "crawled page searchable, excluded one not", expect(index+"/api/v1/search?q=kittiwake", http.StatusOK,
		`"results":[{"url":"https://seabirds.example/","title":"Kittiwake colony"`))
	if a, _ := get(index + "/api/v1/search?q=kittiwake"); strings.Contains(a.body, "doomed") {
		t.Errorf("excluded site searchable: %s", a.body)
	}
	t.Logf("backend reachable again: caught up after %s", time.Since(back).Round(time.Millisecond))
	eventually(t, "Exclusion Ready", testutil.ExclusionReady(k8s, ex, -1, 0))
	eventually(t, "backend_up metric", expect(metrics+"/metrics", http.StatusOK, "crawl_operator_index_backend_up 1"))

	// The endpoint's own metrics tell the story: final reports refused
	// while the backend was away and accepted after, searches refused with
	// 503 during the outage and answered after it, and the write of the
	// result once the backend was back.
	a, err := get(metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, series := range []string{
		`crawl_operator_reports_total{kind="final",result="accepted"}`,
		`crawl_operator_reports_total{kind="final",result="backend_unavailable"}`,
		`crawl_operator_search_requests_total{code="503",endpoint="search"}`,
		`crawl_operator_search_requests_total{code="200",endpoint="search"}`,
		`crawl_operator_search_request_duration_seconds_count{endpoint="search"}`,
		`crawl_operator_index_sync_upserts_total`,
	} {
		if v := sample(a.body, series); v < 1 {
			t.Errorf("%s = %v after the run, want at least 1", series, v)
		}
	}
}

// sample is the value of series in a text-format scrape, 0 when absent.
func sample(scrape, series string) float64 {
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}
