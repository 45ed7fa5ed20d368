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

// BenchmarkCachedSiteIndexBytes measures the heap one SiteIndex takes as
// the manager's cache keeps it, before and after the cache transform
// (informer bookkeeping not included): at 100,000 sites every byte here
// is 100 KB of the manager's memory.
func BenchmarkCachedSiteIndexBytes(b *testing.B) {
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
				objs := make([]any, n)
				for i := range objs {
					objs[i] = storedSiteIndex(i)
					if tc.transform {
						objs[i], _ = compactSiteIndex(objs[i])
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
