package controllers

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
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
				{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "crawl.lohisoft.com/v1beta1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"0c4d1a3e-5b6f-4d7e-8f90-a1b2c3d4e5f6\"}":{}}},"f:spec":{".":{},"f:site":{}}}`)}},
				{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "crawl.lohisoft.com/v1beta1", Time: &now, Subresource: "status",
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:complete":{},"f:crawlTime":{},"f:pages":{},"f:robots":{".":{},"f:fetchTime":{},"f:statusCode":{}},"f:run":{},"f:stats":{".":{},"f:pages":{},"f:skipped":{}}}}`)}},
			},
		},
		Spec: crawlv1.SiteIndexSpec{Site: fmt.Sprintf("https://www.site-%06d.example:443", i)},
		Status: crawlv1.SiteIndexStatus{Run: fmt.Sprintf("site-%06d-crawl-3", i), Complete: true, CrawlTime: &now,
			Robots: &crawlv1.RobotsStatus{StatusCode: 200, FetchTime: &now}, Stats: crawlv1.IndexStats{Pages: 20, Skipped: 3}},
	}
	for p := range 20 {
		fetched := metav1.NewTime(now.Add(time.Duration(p) * time.Second))
		si.Status.Pages = append(si.Status.Pages, crawlv1.IndexedPage{
			URL:        fmt.Sprintf("/breads/seasonal-sourdough-loaf-%02d.html", p),
			StatusCode: 200, Title: fmt.Sprintf("Seasonal sourdough loaf no. %d — Harbour Bakery %d", p, i), FetchTime: &fetched,
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
			Annotations:       map[string]string{lastApplied: fmt.Sprintf(`{"apiVersion":"crawl.lohisoft.com/v1beta1","kind":"CrawlTarget","metadata":{"annotations":{},"name":%q,"namespace":"sites"},"spec":{"interval":"168h","url":%q}}`, name, url)},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "crawl.lohisoft.com/v1beta1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:interval":{},"f:url":{}}}`)}},
				{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "crawl.lohisoft.com/v1beta1", Time: &now, Subresource: "status",
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Crawling\"}":{},"k:{\"type\":\"Ready\"}":{},"k:{\"type\":\"Reconciling\"}":{},"k:{\"type\":\"Stalled\"}":{}},"f:egressIP":{},"f:egressNodeName":{},"f:host":{},"f:lastCrawlTime":{},"f:lastFinishedRun":{},"f:nextCrawlTime":{},"f:observedGeneration":{},"f:pagesIndexed":{},"f:phase":{},"f:runs":{},"f:site":{}}}`)}},
			},
		},
		Spec: crawlv1.CrawlTargetSpec{URL: url},
		Status: crawlv1.CrawlTargetStatus{
			Phase: "Succeeded", Site: fmt.Sprintf("https://www.site-%06d.example:443", i), Host: fmt.Sprintf("www.site-%06d.example", i),
			PagesIndexed: 20, EgressNodeName: "egress-1", EgressIP: "79.139.58.98", LastCrawlTime: &now, NextCrawlTime: &now, Runs: 3, LastFinishedRun: 3,
			Conditions: []metav1.Condition{
				cond("Ready", "True", "Crawled", "crawl 3 indexed 20 pages"),
				cond("Reconciling", "False", "Crawled", "crawl 3 indexed 20 pages"),
				cond("Stalled", "False", "Crawled", "crawl 3 indexed 20 pages"),
				cond("Crawling", "False", "Crawled", "no crawl running"),
			},
		},
	}
}

// waitingCrawlTarget is a CrawlTarget waiting for its first crawl, as
// most targets are at 100,000 sites: three conditions with one message.
func waitingCrawlTarget(i int) *crawlv1.CrawlTarget {
	now := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	msg := fmt.Sprintf("all egress nodes run 4 crawls; position %d of 100000 in the crawl queue (oldest due first)", i)
	cond := func(typ, status string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: "WaitingForCapacity", Message: msg, LastTransitionTime: now, ObservedGeneration: 1}
	}
	return &crawlv1.CrawlTarget{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("site-%06d", i), Namespace: "sites", UID: "0c4d1a3e-5b6f-4d7e-8f90-a1b2c3d4e5f6", ResourceVersion: "123456788", Generation: 1,
			CreationTimestamp: now,
		},
		Spec: crawlv1.CrawlTargetSpec{URL: fmt.Sprintf("https://www.site-%06d.example/", i)},
		Status: crawlv1.CrawlTargetStatus{
			ObservedGeneration: 1, Phase: "Waiting",
			Site: fmt.Sprintf("https://www.site-%06d.example:443", i), Host: fmt.Sprintf("www.site-%06d.example", i),
			Conditions: []metav1.Condition{cond("Ready", "False"), cond("Reconciling", "True"), cond("Crawling", "False")},
		},
	}
}

// ownedSiteIndex is the empty SiteIndex of a target that has not been
// crawled, owned by it.
func ownedSiteIndex(i int) *crawlv1.SiteIndex {
	yes := true
	return &crawlv1.SiteIndex{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("site-%06d", i), Namespace: "sites", UID: "6b1f4c57-3c7e-4f0e-9a55-1f0c2d9e8a11",
			ResourceVersion: "123456789", Generation: 1, CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "crawl.lohisoft.com/v1beta1", Kind: "CrawlTarget",
				Name: fmt.Sprintf("site-%06d", i), UID: "0c4d1a3e-5b6f-4d7e-8f90-a1b2c3d4e5f6", Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: crawlv1.SiteIndexSpec{Site: fmt.Sprintf("https://www.site-%06d.example:443", i)},
	}
}

// crawledSiteIndex is the SiteIndex of a target whose crawl was verified to
// leave from the first egress address.
func crawledSiteIndex(i int) *crawlv1.SiteIndex {
	si := ownedSiteIndex(i)
	si.Status = crawlv1.SiteIndexStatus{Run: fmt.Sprintf("site-%06d-crawl-1", i), Complete: true, EgressIP: "79.139.58.98"}
	return si
}

// decoded is obj as an informer holds it: decoded from the API server's
// JSON, every string its own allocation.
func decoded[T any](tb testing.TB, obj *T) *T {
	raw, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		tb.Fatal(err)
	}
	return out
}

// BenchmarkCachedSiteBytes measures the heap one site's SiteIndex and
// CrawlTarget take as the manager's cache keeps them, decoded from JSON,
// before and after the cache transforms (informer bookkeeping not
// included): at 100,000 sites every byte here is 100 KB of the manager's
// memory. "crawled" is a site with a result, "waiting" one waiting for
// its first crawl, as most are at 100,000.
func BenchmarkCachedSiteBytes(b *testing.B) {
	const n = 20000
	sites := map[string]func(i int) (*crawlv1.SiteIndex, *crawlv1.CrawlTarget){
		"crawled": func(i int) (*crawlv1.SiteIndex, *crawlv1.CrawlTarget) {
			return storedSiteIndex(i), appliedCrawlTarget(i)
		},
		"waiting": func(i int) (*crawlv1.SiteIndex, *crawlv1.CrawlTarget) {
			return ownedSiteIndex(i), waitingCrawlTarget(i)
		},
	}
	for _, kind := range []string{"crawled", "waiting"} {
		for _, tc := range []struct {
			name      string
			transform bool
		}{{"as-stored", false}, {"cached", true}} {
			b.Run(kind+"/"+tc.name, func(b *testing.B) {
				var perSite float64
				for b.Loop() {
					runtime.GC()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					objs := make([]any, 2*n)
					for i := range n {
						si, ct := sites[kind](i)
						objs[2*i], objs[2*i+1] = decoded(b, si), decoded(b, ct)
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
	if len(got.Status.Pages) != 0 || got.ManagedFields != nil || got.Status.Robots != nil {
		t.Errorf("cached SiteIndex keeps %d page records, %d managedFields, robots %v", len(got.Status.Pages), len(got.ManagedFields), got.Status.Robots)
	}
	if got.Status.Stats.Pages != 20 || got.Status.Run == "" || !got.Status.Complete || got.Spec.Site == "" {
		t.Errorf("cached SiteIndex lost what the reconcilers read: %+v", got.Status)
	}
	// What Helm and Flux put on every object they apply.
	toolLabels := func() map[string]string {
		return map[string]string{"app.kubernetes.io/managed-by": "Helm", "kustomize.toolkit.fluxcd.io/name": "sites"}
	}
	si = storedSiteIndex(2)
	si.Labels, si.Annotations = toolLabels(), map[string]string{"meta.helm.sh/release-name": "sites"}
	out, _ = compactSiteIndex(si)
	if got := out.(*crawlv1.SiteIndex); got.Labels != nil || got.Annotations != nil {
		t.Errorf("cached SiteIndex keeps labels %v, annotations %v", got.Labels, got.Annotations)
	}
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Labels: toolLabels(), Annotations: map[string]string{
		lastApplied: `{"apiVersion":"crawl.lohisoft.com/v1beta1","kind":"CrawlTarget"}`, crawlv1.RequestedAtAnnotation: "now"}}}
	out, _ = compactCrawlTarget(ct)
	if a := out.(*crawlv1.CrawlTarget).Annotations; a[lastApplied] != "" || a[crawlv1.RequestedAtAnnotation] != "now" {
		t.Errorf("cached CrawlTarget annotations = %v", a)
	}
	if l := out.(*crawlv1.CrawlTarget).Labels; l != nil {
		t.Errorf("cached CrawlTarget labels = %v", l)
	}
	ct = &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{lastApplied: "{}"}}}
	if out, _ = compactCrawlTarget(ct); out.(*crawlv1.CrawlTarget).Annotations != nil {
		t.Error("an emptied annotation map is kept")
	}
	// Objects of other kinds, and tombstones, pass through.
	if v, err := compactSiteIndex("tombstone"); v != "tombstone" || err != nil {
		t.Errorf("compactSiteIndex(other) = %v, %v", v, err)
	}
}

// TestCacheTransformsShareStrings: the transforms change no value the
// reconcilers read, and repeated strings end up as one copy: within an
// object (a waiting target's messages, the host in the site) and across
// objects (namespaces, kinds, condition types and reasons).
func TestCacheTransformsShareStrings(t *testing.T) {
	a, b := compactedPair(t, waitingCrawlTarget, compactCrawlTarget)
	same := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are two copies", what, x, y)
		}
	}
	same("namespaces", a.Namespace, b.Namespace)
	same("phases", string(a.Status.Phase), string(b.Status.Phase))
	for i := range a.Status.Conditions {
		ca, cb := a.Status.Conditions[i], b.Status.Conditions[i]
		same("condition types", ca.Type, cb.Type)
		same("condition reasons", ca.Reason, cb.Reason)
		same("condition statuses", string(ca.Status), string(cb.Status))
		same("messages within a target", ca.Message, a.Status.Conditions[0].Message)
	}
	if unsafe.StringData(a.Status.Conditions[0].Message) == unsafe.StringData(b.Status.Conditions[0].Message) {
		t.Error("two targets' messages share one copy: messages are per target")
	}
	if !strings.Contains(a.Status.Site, a.Status.Host) ||
		uintptr(unsafe.Pointer(unsafe.StringData(a.Status.Host)))-uintptr(unsafe.Pointer(unsafe.StringData(a.Status.Site))) >= uintptr(len(a.Status.Site)) {
		t.Errorf("host %q is not shared with site %q", a.Status.Host, a.Status.Site)
	}

	si1, si2 := compactedPair(t, crawledSiteIndex, compactSiteIndex)
	r1, r2 := si1.OwnerReferences[0], si2.OwnerReferences[0]
	same("owner kinds", r1.Kind, r2.Kind)
	same("owner API versions", r1.APIVersion, r2.APIVersion)
	same("owner name and name", r1.Name, si1.Name)
	same("verified egress addresses", si1.Status.EgressIP, si2.Status.EgressIP)
	if r1.Controller != r2.Controller || !metav1.IsControlledBy(si1, &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{UID: r1.UID}}) {
		t.Error("owner flags are not shared or no longer say controller")
	}
}

// compactedPair is two objects of a kind as the cache keeps them; it fails
// if the transform changed any value of the first.
func compactedPair[T any](t *testing.T, object func(i int) *T, compact func(any) (any, error)) (a, b *T) {
	t.Helper()
	a, b = decoded(t, object(1)), decoded(t, object(2))
	for _, o := range []*T{a, b} {
		if _, err := compact(o); err != nil {
			t.Fatal(err)
		}
	}
	if want := decoded(t, object(1)); !equality.Semantic.DeepEqual(a, want) {
		t.Errorf("transform changed the %T:\n got %+v\nwant %+v", a, a, want)
	}
	return a, b
}

// TestInternerBound: past its bound the vocabulary hands strings back as
// they are, so an unexpectedly large vocabulary grows nothing.
func TestInternerBound(t *testing.T) {
	in := newInterner(2)
	x := in.share(strings.Clone("a"))
	if y := in.share(strings.Clone("a")); unsafe.StringData(x) != unsafe.StringData(y) {
		t.Error("a known string is not shared")
	}
	in.share("b")
	c1, c2 := strings.Clone("c"), strings.Clone("c")
	if got := in.share(c1); unsafe.StringData(got) != unsafe.StringData(c1) || len(in.known) != 2 {
		t.Errorf("past the bound: %d known", len(in.known))
	}
	if got := in.share(c2); unsafe.StringData(got) != unsafe.StringData(c2) {
		t.Error("a string past the bound was kept")
	}
	if in.share("") != "" {
		t.Error("empty string")
	}
}

// TestCacheTransformHostOutsideSite: a status whose host is not part of
// its site (edited by hand) keeps both as they are.
func TestCacheTransformHostOutsideSite(t *testing.T) {
	ct := decoded(t, waitingCrawlTarget(1))
	ct.Status.Host = "elsewhere.example"
	compactCrawlTarget(ct)
	if ct.Status.Host != "elsewhere.example" || ct.Status.Site != "https://www.site-000001.example:443" {
		t.Errorf("host %q, site %q", ct.Status.Host, ct.Status.Site)
	}
	ct.Status.Host, ct.Status.Site = "", ""
	if compactCrawlTarget(ct); ct.Status.Host != "" {
		t.Errorf("empty host became %q", ct.Status.Host)
	}
}
