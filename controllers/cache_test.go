package controllers

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
)

// storedSiteIndex is a SiteIndex of a realistic 20-page site as the API
// server returns it: compact page records and two managedFields entries.
func storedSiteIndex(i int) *crawlv1.SiteIndex {
	now := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	si := &crawlv1.SiteIndex{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("site-%06d", i), Namespace: "sites", UID: "6b1f4c57-3c7e-4f0e-9a55-1f0c2d9e8a11",
			ResourceVersion: "123456789", Generation: 1, CreationTimestamp: now,
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "crawl.lohisoft.com/v1alpha1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"0c4d1a3e-5b6f-4d7e-8f90-a1b2c3d4e5f6\"}":{}}},"f:spec":{".":{},"f:site":{}}}`)}},
				{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "crawl.lohisoft.com/v1alpha1", Time: &now, Subresource: "status",
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:complete":{},"f:crawledAt":{},"f:pages":{},"f:robots":{".":{},"f:fetchedAt":{},"f:statusCode":{}},"f:run":{},"f:stats":{".":{},"f:pages":{},"f:skipped":{}}}}`)}},
			},
		},
		Spec: crawlv1.SiteIndexSpec{Site: fmt.Sprintf("https://www.site-%06d.example:443", i)},
		Status: crawlv1.SiteIndexStatus{Run: fmt.Sprintf("site-%06d-crawl-3", i), Complete: true, CrawledAt: &now,
			Robots: &crawlv1.RobotsStatus{StatusCode: 200, FetchedAt: &now}, Stats: crawlv1.IndexStats{Pages: 20, Skipped: 3}},
	}
	for p := range 20 {
		fetched := metav1.NewTime(now.Add(time.Duration(p) * time.Second))
		si.Status.Pages = append(si.Status.Pages, crawlv1.IndexedPage{
			URL:        fmt.Sprintf("/breads/seasonal-sourdough-loaf-%02d.html", p),
			StatusCode: 200, Title: fmt.Sprintf("Seasonal sourdough loaf no. %d — Harbour Bakery %d", p, i), FetchedAt: &fetched,
		})
	}
	return si
}

// appliedCrawlTarget is a CrawlTarget applied with kubectl and reconciled
// to Ready, as the API server returns it.
func appliedCrawlTarget(i int) *crawlv1.CrawlTarget {
	now := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	name, url := fmt.Sprintf("site-%06d", i), fmt.Sprintf("https://www.site-%06d.example/", i)
	cond := func(typ, status, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, LastTransitionTime: now, ObservedGeneration: 1}
	}
	return &crawlv1.CrawlTarget{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "sites", UID: "0c4d1a3e-5b6f-4d7e-8f90-a1b2c3d4e5f6", ResourceVersion: "123456788", Generation: 1,
			CreationTimestamp: now,
			Annotations:       map[string]string{lastApplied: fmt.Sprintf(`{"apiVersion":"crawl.lohisoft.com/v1alpha1","kind":"CrawlTarget","metadata":{"annotations":{},"name":%q,"namespace":"sites"},"spec":{"interval":"168h","url":%q}}`, name, url)},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "crawl.lohisoft.com/v1alpha1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:interval":{},"f:url":{}}}`)}},
				{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "crawl.lohisoft.com/v1alpha1", Time: &now, Subresource: "status",
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Crawling\"}":{},"k:{\"type\":\"Ready\"}":{},"k:{\"type\":\"Reconciling\"}":{},"k:{\"type\":\"Stalled\"}":{}},"f:egressIP":{},"f:egressNode":{},"f:host":{},"f:lastCrawlTime":{},"f:lastFinishedRun":{},"f:nextCrawlTime":{},"f:observedGeneration":{},"f:pagesIndexed":{},"f:phase":{},"f:runs":{},"f:site":{}}}`)}},
			},
		},
		Spec: crawlv1.CrawlTargetSpec{URL: url},
		Status: crawlv1.CrawlTargetStatus{
			Phase: "Succeeded", Site: fmt.Sprintf("https://www.site-%06d.example:443", i), Host: fmt.Sprintf("www.site-%06d.example", i),
			PagesIndexed: 20, EgressNode: "egress-1", EgressIP: "79.139.58.98", LastCrawlTime: &now, NextCrawlTime: &now, Runs: 3, LastFinishedRun: 3,
			Conditions: []metav1.Condition{
				cond("Ready", "True", "Crawled", "crawl 3 indexed 20 pages"),
				cond("Reconciling", "False", "Crawled", "crawl 3 indexed 20 pages"),
				cond("Stalled", "False", "Crawled", "crawl 3 indexed 20 pages"),
				cond("Crawling", "False", "Crawled", "no crawl running"),
			},
		},
	}
}

// BenchmarkCachedSiteBytes measures the heap one site's SiteIndex and
// CrawlTarget take as the manager's cache keeps them, before and after the
// cache transforms (informer bookkeeping not included): at 100,000 sites
// every byte here is 100 KB of the manager's memory.
func BenchmarkCachedSiteBytes(b *testing.B) {
	const n = 20000
	for _, tc := range []struct {
		name      string
		transform bool
	}{{"as-stored", false}, {"cached", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var perSite float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				objs := make([]any, 2*n)
				for i := range n {
					objs[2*i], objs[2*i+1] = storedSiteIndex(i), appliedCrawlTarget(i)
					if tc.transform {
						objs[2*i], _ = compactSiteIndex(objs[2*i])
						objs[2*i+1], _ = compactCrawlTarget(objs[2*i+1])
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perSite = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(objs)
			}
			b.ReportMetric(perSite, "B/site")
		})
	}
}

// TestCacheTransformsDropTexts: what the cache keeps of a SiteIndex and a
// CrawlTarget.
func TestCacheTransformsDropTexts(t *testing.T) {
	si := storedSiteIndex(1)
	out, err := compactSiteIndex(si)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*crawlv1.SiteIndex)
	if len(got.Status.Pages) != 0 || got.ManagedFields != nil {
		t.Errorf("cached SiteIndex keeps %d page records and %d managedFields", len(got.Status.Pages), len(got.ManagedFields))
	}
	if got.Status.Stats.Pages != 20 || got.Status.Run == "" || !got.Status.Complete || got.Spec.Site == "" {
		t.Errorf("cached SiteIndex lost what the reconcilers read: %+v", got.Status)
	}
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		lastApplied: `{"apiVersion":"crawl.lohisoft.com/v1alpha1","kind":"CrawlTarget"}`, crawlv1.RequestedAtAnnotation: "now"}}}
	out, _ = compactCrawlTarget(ct)
	if a := out.(*crawlv1.CrawlTarget).Annotations; a[lastApplied] != "" || a[crawlv1.RequestedAtAnnotation] != "now" {
		t.Errorf("cached CrawlTarget annotations = %v", a)
	}
	// Objects of other kinds, and tombstones, pass through.
	if v, err := compactSiteIndex("tombstone"); v != "tombstone" || err != nil {
		t.Errorf("compactSiteIndex(other) = %v, %v", v, err)
	}
}
