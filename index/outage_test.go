package index_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/index/searchapi"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
)

// outage is how long the backend stays away in the outage tests:
// $TEST_OUTAGE (a Go duration; the README's figures used 180s), or 3s.
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

// site creates a CrawlTarget and its SiteIndex with one page per title, as
// a finished crawl leaves them.
func (o *harness) site(t *testing.T, ns, name, host string, titles ...string) *crawlv1.SiteIndex {
	t.Helper()
	var pages []crawlv1.IndexedPage
	for i, title := range titles {
		pages = append(pages, crawlv1.IndexedPage{URL: fmt.Sprintf("https://%s/%d", host, i), StatusCode: 200, Title: title})
	}
	return o.siteWithPages(t, ns, name, host, pages)
}

// siteWithPages is site with the pages given.
func (o *harness) siteWithPages(t *testing.T, ns, name, host string, pages []crawlv1.IndexedPage) *crawlv1.SiteIndex {
	t.Helper()
	// Suspended: the operator creates the SiteIndex but starts no crawl.
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: crawlv1.CrawlTargetSpec{URL: "https://" + host + "/", Suspend: true}}
	if err := k8s.Create(ctx, ct); err != nil {
		t.Fatal(err)
	}
	si := &crawlv1.SiteIndex{}
	eventually(t, "SiteIndex "+name+" created by the operator", func() error {
		return k8s.Get(ctx, client.ObjectKeyFromObject(ct), si)
	})
	now := metav1.Now()
	si.Status = crawlv1.SiteIndexStatus{CrawledAt: &now, Complete: true, Pages: pages}
	if err := k8s.Status().Update(ctx, si); err != nil {
		t.Fatal(err)
	}
	return si
}

// removeSite deletes a site's CrawlTarget and then its SiteIndex, as the
// garbage collector would (envtest runs none). Deleting only the SiteIndex
// would make the operator create it again for the live target.
func removeSite(t *testing.T, ns, name string) {
	t.Helper()
	key := metav1.ObjectMeta{Namespace: ns, Name: name}
	if err := k8s.Delete(ctx, &crawlv1.CrawlTarget{ObjectMeta: key}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &crawlv1.SiteIndex{ObjectMeta: key}); err != nil {
		t.Fatal(err)
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
// deleted, another created, a domain excluded. Meanwhile search answers
// 503 with Retry-After, the "index" readiness check fails, the metrics show
// the backlog, and the Exclusion empties its SiteIndexes and counts their
// pages at once. When the backend returns the index catches up within
// seconds, and the purge is counted once.
func TestBackendOutageCatchUp(t *testing.T) {
	proxy := pgtest.StartProxy(t)
	op := startWith(t, false, proxy.DSN(pgtest.Schema(t)))
	// Other tests' SiteIndexes are in the cluster too (and so in this
	// index): words and hosts are unique to this test.
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

	// The cluster moves on.
	removeSite(t, ns, "gone")
	op.site(t, ns, "added", added, razorbill)
	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "outage-"}, Spec: crawlv1.ExclusionSpec{Domain: domain, Reason: "asked by email"}}
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
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(excluded), si); err != nil || len(si.Status.Pages) != 0 {
		t.Errorf("excluded SiteIndex keeps %d pages (%v)", len(si.Status.Pages), err)
	}
	eventually(t, "sync backlog in the metrics", func() error {
		pending, lag := op.ix.SyncLag()
		if pending < 2 || lag <= 0 {
			return fmt.Errorf("pending %d, lag %s", pending, lag)
		}
		if v := metricValue(t, "crawl_operator_index_sync_pending", ""); v < 2 {
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

	// $TEST_OUTAGE_SITES more sites crawled during the outage (0 unless
	// set; the README's backlog figure used 500).
	extra, _ := strconv.Atoi(os.Getenv("TEST_OUTAGE_SITES"))
	for i := range extra {
		op.site(t, ns, fmt.Sprintf("extra-%d", i), fmt.Sprintf("extra-%d-%s.example", i, suffix), puffin)
	}

	time.Sleep(time.Until(cut.Add(outage(t))))
	proxy.Restore()
	back := time.Now()
	eventually(t, "backend seen again", func() error {
		if !op.ix.BackendAvailable() {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	t.Logf("backend seen again %s after it returned", time.Since(back).Round(time.Millisecond))
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
	t.Logf("outage %s, %d SiteIndexes changed; after the backend returned: index caught up in %s, Exclusion Ready in %s",
		time.Since(cut)-time.Since(back), 3+extra, caughtUp.Round(time.Millisecond), enforced.Round(time.Millisecond))
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

// The real PostgreSQL server is stopped and started. The outage is kept
// short: other tests use the same server.
func TestIndexCatchesUpAfterPostgresRestart(t *testing.T) {
	server := pgtest.ControlServer(t)
	op := startWith(t, false, pgtest.Schema(t))
	ns, suffix := newNS(t), suffix()
	word := "fulmar" + suffix // other tests' SiteIndexes are in this index too
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
	op.site(t, ns, "c", c, word)
	eventually(t, "both changes wait", func() error {
		if pending, _ := op.ix.SyncLag(); pending < 2 {
			return fmt.Errorf("%d pending", pending)
		}
		return nil
	})
	server.Start()
	started := time.Now()
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
