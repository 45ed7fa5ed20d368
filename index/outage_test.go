package index_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/searchapi"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// outage is how long the backend stays away in the outage tests:
// $TEST_OUTAGE (a Go duration; the README's long run used 60s), or 3s.
func outage(t *testing.T) time.Duration {
	if v := os.Getenv("TEST_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("TEST_OUTAGE: %v", err)
		}
		return d
	}
	return 3 * time.Second
}

// site crawls a site of one page per title the way the operator does it:
// a CrawlTarget, its crawler Pod, the run's final result through the
// results endpoint (which writes the index backend and the SiteIndex), the
// Pod succeeding. It returns the SiteIndex.
func (o *harness) site(t *testing.T, ns, name, host string, titles ...string) *crawlv1.SiteIndex {
	t.Helper()
	pod, token := o.startRun(t, ns, name, host)
	// Retried as the crawler does: a manager just started may not have
	// reached its backend yet, and answers 503 until it has.
	final := finalReport(host, titles...)
	eventually(t, "final report of "+host+" taken", func() error {
		if code, body := testutil.PostReport(t, o.results, pod, token, final); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	testutil.SetPodPhase(t, k8s, pod, corev1.PodSucceeded, 0)
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, si); err != nil {
		t.Fatal(err)
	}
	return si
}

// finalReport is a run's final result with one page per title.
func finalReport(host string, titles ...string) runreport.Report {
	var pages []runreport.Page
	for i, title := range titles {
		pages = append(pages, runreport.Page{URL: fmt.Sprintf("https://%s/%d", host, i), StatusCode: 200, Title: title,
			Description: "Seabirds of " + host, FetchedAt: time.Now()})
	}
	return runreport.Report{Final: true, Result: runreport.Crawl{Site: "https://" + host + "/", Robots: runreport.Robots{Status: 404}, Pages: pages}}
}

// startRun creates a CrawlTarget for host and returns its first crawler Pod,
// running, and the run's token. The target and its SiteIndex are deleted
// when the test ends (envtest runs no garbage collector), so the start-up
// check of a later test's manager, whose index is empty, does not find
// them.
func (o *harness) startRun(t *testing.T, ns, name, host string) (*corev1.Pod, string) {
	t.Helper()
	o.egressOnce.Do(func() { testutil.CreateEgressNode(t, k8s, "egress-"+suffix(), "79.139.58.98") })
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: crawlv1.CrawlTargetSpec{URL: "https://" + host + "/"}}
	if err := k8s.Create(ctx, ct); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeSite(t, ns, name) })
	pod := &corev1.Pod{}
	eventually(t, "crawler Pod of "+name, func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: crawlpod.PodName(name, 1)}, pod)
	})
	testutil.SetPodPhase(t, k8s, pod, corev1.PodRunning, 0)
	return pod, testutil.RunToken(t, k8s, pod)
}

// removeSite deletes a site's CrawlTarget and then its SiteIndex, as the
// garbage collector would (envtest runs none). Deleting only the SiteIndex
// would make the operator create it again for the live target.
func removeSite(t *testing.T, ns, name string) {
	t.Helper()
	key := metav1.ObjectMeta{Namespace: ns, Name: name}
	for _, obj := range []client.Object{&crawlv1.CrawlTarget{ObjectMeta: key}, &crawlv1.SiteIndex{ObjectMeta: key}} {
		if err := k8s.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}

// search returns the hosts of the results for q, sorted and deduplicated,
// or the status code when the answer is not 200.
func (o *harness) search(q string) ([]string, response, error) {
	r, err := o.get("/api/v1/search?limit=100&q=" + url.QueryEscape(q))
	if err != nil || r.status != http.StatusOK {
		return nil, r, err
	}
	var res searchapi.SearchResponse
	if err := json.Unmarshal([]byte(r.body), &res); err != nil {
		return nil, r, err
	}
	hosts := []string{}
	seen := map[string]bool{}
	for _, x := range res.Results {
		h := strings.Split(strings.TrimPrefix(x.URL, "https://"), "/")[0]
		if !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	sort.Strings(hosts)
	return hosts, r, nil
}

// searchIs checks that q finds pages of exactly hosts.
func (o *harness) searchIs(q string, hosts ...string) func() error {
	sort.Strings(hosts)
	if hosts == nil {
		hosts = []string{}
	}
	return func() error {
		got, r, err := o.search(q)
		if err != nil || r.status != 0 && r.status != http.StatusOK {
			return fmt.Errorf("search %q: %v %d %s", q, err, r.status, r.body)
		}
		if !reflect.DeepEqual(got, hosts) {
			return fmt.Errorf("search %q finds %q, want %q", q, got, hosts)
		}
		return nil
	}
}

// metricValue reads a metric without labels, or with one label value.
func metricValue(t *testing.T, name, label string) float64 {
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
			if label != "" && (len(m.Label) == 0 || m.Label[0].GetValue() != label) {
				continue
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Counter != nil:
				return m.Counter.GetValue()
			}
		}
	}
	return 0
}

func newNS(t *testing.T) string {
	t.Helper()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "outage-"}}
	if err := k8s.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	return nsObj.Name
}

func exclusionStatus(ex *crawlv1.Exclusion) (crawlv1.ExclusionStatus, error) {
	got := &crawlv1.Exclusion{}
	err := k8s.Get(ctx, client.ObjectKeyFromObject(ex), got)
	return got.Status, err
}

// The index backend goes away (a network fault between the manager and
// PostgreSQL: a proxy the test cuts) while the cluster changes: a target is
// deleted, another crawled, a domain excluded. Meanwhile search answers
// 503 with Retry-After, the "index" readiness check fails, the metrics show
// the removal waiting, the results endpoint answers the new crawl's final
// report 503 with Retry-After (the crawler retries it for minutes) and
// changes nothing, and the Exclusion empties its SiteIndexes and counts
// their pages at once. Nothing indexed before is lost. When the backend
// returns, the crawler's retry is taken, the removal and the purge run
// within seconds, and the purge is counted once.
func TestBackendOutageCatchUp(t *testing.T) {
	proxy := pgtest.StartProxy(t)
	op := startWith(t, false, proxy.DSN(pgtest.Schema(t)))
	ns, suffix := newNS(t), suffix()
	razorbill, guillemot, puffin := "razorbill"+suffix, "guillemot"+suffix, "puffin"+suffix
	keep, gone, added, domain := "keep-"+suffix+".example", "gone-"+suffix+".example", "new-"+suffix+".example", "ex-"+suffix+".example"
	op.site(t, ns, "keep", keep, razorbill)
	op.site(t, ns, "gone", gone, razorbill)
	excluded := op.site(t, ns, "excluded", "www."+domain, guillemot+" one", guillemot+" two", guillemot+" three", guillemot+" four", guillemot+" five", guillemot+" six")
	eventually(t, "indexed", op.searchIs(razorbill, keep, gone))
	eventually(t, "indexed", op.searchIs(guillemot, "www."+domain))
	if err := op.ix.BackendCheck(nil); err != nil {
		t.Fatalf("index check while up: %v", err)
	}
	purgedBefore := metricValue(t, "crawl_operator_pages_purged_total", "")
	failuresBefore := metricValue(t, "crawl_operator_index_sync_failures_total", "unavailable")

	proxy.Cut()
	cut := time.Now()
	eventually(t, "search says 503 with Retry-After", func() error {
		_, r, err := op.search(razorbill)
		if err != nil {
			return err
		}
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, `"error"`) {
			return fmt.Errorf("search = %d %v %s", r.status, r.header, r.body)
		}
		return nil
	})
	t.Logf("outage noticed by search after %s", time.Since(cut).Round(time.Millisecond))
	if err := op.ix.BackendCheck(nil); err == nil || op.ix.BackendAvailable() {
		t.Error("the index readiness check passes while the backend is unreachable")
	}
	if v := metricValue(t, "crawl_operator_index_backend_up", ""); v != 0 {
		t.Errorf("crawl_operator_index_backend_up = %v during the outage", v)
	}
	// The bot's pages need no backend.
	if r := op.mustGet(t, "/bot/ips.json"); r.status != http.StatusOK {
		t.Errorf("ips.json during the outage: %d", r.status)
	}

	// The cluster moves on: a target goes, a new one is crawled ($TEST_OUTAGE_SITES
	// more with it: 0 unless set), a domain is excluded.
	removeSite(t, ns, "gone")
	extra, _ := strconv.Atoi(os.Getenv("TEST_OUTAGE_SITES"))
	type run struct {
		pod   *corev1.Pod
		token string
		final runreport.Report
		name  string
	}
	var runs []run
	for i := range extra + 1 {
		name, host, word := "added", added, razorbill
		if i > 0 {
			name, host, word = fmt.Sprintf("extra-%d", i), fmt.Sprintf("extra-%d-%s.example", i, suffix), puffin
		}
		pod, token := op.startRun(t, ns, name, host)
		runs = append(runs, run{pod, token, finalReport(host, word), name})
	}
	for _, r := range runs {
		code, header, body := postReport(t, op.results, r.pod, r.token, r.final)
		if code != http.StatusServiceUnavailable || header.Get("Retry-After") == "" || !strings.Contains(body, "index backend") {
			t.Errorf("final report during the outage = %d %v %s, want 503 with Retry-After", code, header, body)
		}
	}
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "added"}, si); err != nil || si.Status.Run != "" {
		t.Errorf("a refused report changed the SiteIndex: %+v (%v)", si.Status, err)
	}
	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "outage-"}, Spec: crawlv1.ExclusionSpec{Domain: domain, Description: "asked by email"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k8s.Delete(ctx, ex) })
	eventually(t, "Exclusion counts the SiteIndex pages at once and waits for the backend", func() error {
		st, err := exclusionStatus(ex)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(st.Conditions, crawlv1.ConditionReady)
		if st.PurgedPages != 6 || c == nil || c.Status != metav1.ConditionFalse || c.Reason != crawlv1.ReasonBackendUnavailable {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(excluded), si); err != nil || len(si.Status.Pages) != 0 || si.Status.Stats.Pages != 0 {
		t.Errorf("excluded SiteIndex keeps %d pages (%v)", len(si.Status.Pages), err)
	}
	eventually(t, "removal backlog in the metrics", func() error {
		pending, lag := op.ix.SyncLag()
		if pending < 1 || lag <= 0 {
			return fmt.Errorf("pending %d, lag %s", pending, lag)
		}
		if v := metricValue(t, "crawl_operator_index_sync_pending", ""); v < 1 {
			return fmt.Errorf("crawl_operator_index_sync_pending = %v", v)
		}
		if v := metricValue(t, "crawl_operator_index_sync_lag_seconds", ""); v <= 0 {
			return fmt.Errorf("crawl_operator_index_sync_lag_seconds = %v", v)
		}
		if v := metricValue(t, "crawl_operator_index_sync_failures_total", "unavailable"); v <= failuresBefore {
			return fmt.Errorf("crawl_operator_index_sync_failures_total{reason=unavailable} = %v", v)
		}
		return nil
	})

	time.Sleep(time.Until(cut.Add(outage(t))))
	proxy.Restore()
	back := time.Now()
	// The crawlers retry their final reports (for minutes; here every
	// 100 ms), each on its own, until the endpoint takes them.
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, r := range runs {
		wg.Go(func() {
			for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				code, _, body := postReport(t, op.results, r.pod, r.token, r.final)
				if code == http.StatusOK {
					return
				}
				if time.Now().After(end) {
					errs[i] = fmt.Errorf("final report of %s not taken 30 s after the outage: %d %s", r.name, code, body)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, r := range runs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		testutil.SetPodPhase(t, k8s, r.pod, corev1.PodSucceeded, 0)
	}
	eventually(t, "index caught up", func() error {
		if err := op.searchIs(razorbill, keep, added)(); err != nil {
			return err
		}
		if err := op.searchIs(guillemot)(); err != nil {
			return err
		}
		r, err := op.get("/api/v1/sites")
		if err != nil {
			return err
		}
		var sites searchapi.SitesResponse
		if err := json.Unmarshal([]byte(r.body), &sites); err != nil {
			return err
		}
		ours := 0
		for _, x := range sites.Sites {
			if strings.HasSuffix(x.Host, suffix+".example") {
				ours++
			}
		}
		if ours != 2+extra {
			return fmt.Errorf("%d sites of this test indexed, want %d", ours, 2+extra)
		}
		return nil
	})
	caughtUp := time.Since(back)
	eventually(t, "Exclusion enforced in the backend", func() error {
		st, err := exclusionStatus(ex)
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(st.Conditions, crawlv1.ConditionReady) {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	enforced := time.Since(back)
	t.Logf("outage %s, %d crawls delivered during it; after the backend returned: index caught up in %s, Exclusion Ready in %s",
		time.Since(cut)-time.Since(back), len(runs), caughtUp.Round(time.Millisecond), enforced.Round(time.Millisecond))
	if caughtUp > 15*time.Second {
		t.Errorf("index caught up %s after the backend returned, want seconds", caughtUp)
	}
	if err := op.ix.BackendCheck(nil); err != nil {
		t.Errorf("index check after the outage: %v", err)
	}
	eventually(t, "no backlog", func() error {
		if pending, lag := op.ix.SyncLag(); pending != 0 || lag != 0 {
			return fmt.Errorf("pending %d, lag %s", pending, lag)
		}
		return nil
	})

	// Counted once, whatever failed in between.
	consistently(t, "purge counted once", 2*time.Second, func() error {
		st, err := exclusionStatus(ex)
		if err != nil {
			return err
		}
		if st.PurgedPages != 6 {
			return fmt.Errorf("purgedPages = %d, want 6", st.PurgedPages)
		}
		return nil
	})
	if d := metricValue(t, "crawl_operator_pages_purged_total", "") - purgedBefore; d != 6 {
		t.Errorf("crawl_operator_pages_purged_total grew by %v, want 6", d)
	}
	eventually(t, "PagesPurged Event says 6", func() error {
		var list eventsv1.EventList
		if err := k8s.List(ctx, &list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == ex.Name && e.Reason == "PagesPurged" && strings.Contains(e.Note, "purged 6 pages") {
				return nil
			}
		}
		return fmt.Errorf("no PagesPurged Event for %s", ex.Name)
	})
}

// postReport posts a report as the crawler does and returns the answer's
// status, header and body; a request that fails has status 0 and the
// error as its body. Safe to call from several goroutines.
func postReport(_ *testing.T, base string, pod *corev1.Pod, token string, rep runreport.Report) (int, http.Header, string) {
	b, _ := json.Marshal(rep) // a Report always marshals
	req, _ := http.NewRequest(http.MethodPost, crawlpod.ReportURL(base, pod.Namespace, pod.Name), bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// The real PostgreSQL server is stopped and started. The outage is kept
// short: other tests use the same server.
func TestIndexCatchesUpAfterPostgresRestart(t *testing.T) {
	server := pgtest.ControlServer(t)
	op := startWith(t, false, pgtest.Schema(t))
	ns, suffix := newNS(t), suffix()
	word := "fulmar" + suffix
	a, b, c := "a-"+suffix+".example", "b-"+suffix+".example", "c-"+suffix+".example"
	op.site(t, ns, "a", a, word)
	op.site(t, ns, "b", b, word)
	eventually(t, "indexed", op.searchIs(word, a, b))

	server.Stop()
	stopped := time.Now()
	eventually(t, "search says 503", func() error {
		_, r, err := op.search(word)
		if err != nil {
			return err
		}
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
			return fmt.Errorf("search = %d %s", r.status, r.body)
		}
		return nil
	})
	if err := op.ix.BackendCheck(nil); err == nil {
		t.Error("the index readiness check passes while PostgreSQL is stopped")
	}
	removeSite(t, ns, "a")
	pod, token := op.startRun(t, ns, "c", c)
	final := finalReport(c, word)
	if code, header, body := postReport(t, op.results, pod, token, final); code != http.StatusServiceUnavailable || header.Get("Retry-After") == "" {
		t.Errorf("final report while PostgreSQL is stopped = %d %v %s, want 503 with Retry-After", code, header, body)
	}
	eventually(t, "the removal waits", func() error {
		if pending, _ := op.ix.SyncLag(); pending < 1 {
			return fmt.Errorf("%d pending", pending)
		}
		return nil
	})
	server.Start()
	started := time.Now()
	eventually(t, "the crawler's retry is taken", func() error {
		if code, _, body := postReport(t, op.results, pod, token, final); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	eventually(t, "index caught up", op.searchIs(word, b, c))
	t.Logf("PostgreSQL down for %s; index caught up %s after it answered again",
		started.Sub(stopped).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	if d := time.Since(started); d > 15*time.Second {
		t.Errorf("caught up after %s, want seconds", d)
	}
}

// consistently fails when check fails within d.
func consistently(t *testing.T, what string, d time.Duration, check func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}
