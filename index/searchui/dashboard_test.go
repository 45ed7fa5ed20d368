package searchui

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index/store"
)

var (
	t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
	t2 = t0.Add(168 * time.Hour)
)

func TestTargetOf(t *testing.T) {
	ct := &crawlv1.CrawlTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "bakery"},
		Spec:       crawlv1.CrawlTargetSpec{URL: "https://bakery.example/", CrawlPolicy: crawlv1.CrawlPolicySuspended},
		Status: crawlv1.CrawlTargetStatus{
			Phase: crawlv1.PhaseSucceeded, Site: "https://bakery.example",
			LastCrawlTime: &metav1.Time{Time: t0}, NextCrawlTime: &metav1.Time{Time: t2},
			Conditions: []metav1.Condition{
				{Type: "Reconciling", Status: metav1.ConditionFalse, Reason: "Other"},
				{Type: crawlv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Crawled", Message: "20 pages"},
			},
		},
	}
	want := Target{Namespace: "web", Name: "bakery", Site: "https://bakery.example", Phase: "Succeeded",
		Ready: "True", Reason: "Crawled", Message: "20 pages", Suspended: true, LastCrawl: t0, NextCrawl: t2}
	if got := TargetOf(ct); !reflect.DeepEqual(got, want) {
		t.Errorf("TargetOf = %+v, want %+v", got, want)
	}
	// Before the operator's first status: the site comes from spec.url.
	fresh := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "new"}, Spec: crawlv1.CrawlTargetSpec{URL: "http://New.Example:80/x"}}
	if got := TargetOf(fresh); got.Site != "http://new.example:80" || got.Ready != "" || !got.LastCrawl.IsZero() {
		t.Errorf("TargetOf(no status) = %+v", got)
	}
}

func TestJoin(t *testing.T) {
	indexed := store.SiteInfo{Site: "https://a.example", Host: "a.example", Pages: 12, CrawledAt: t0}
	owner := Target{Namespace: "web", Name: "a", Site: "https://a.example", Phase: "Succeeded", LastCrawl: t1, NextCrawl: t2}
	dup := Target{Namespace: "alpha", Name: "a-again", Site: "https://a.example", Phase: "Duplicate", NextCrawl: t1}
	waiting := Target{Namespace: "web", Name: "b", Site: "https://b.example", Phase: "Waiting", LastCrawl: t0}
	broken := Target{Namespace: "web", Name: "c", Phase: "Failed"}
	orphan := store.SiteInfo{Site: "http://z.example:8080", Host: "z.example", Pages: 3, CrawledAt: t1}

	tests := []struct {
		name    string
		sites   []store.SiteInfo
		targets []Target
		want    []SiteRow
	}{
		{"nothing", nil, nil, []SiteRow{}},
		{"indexed, its target's state; last crawl is the index's",
			[]store.SiteInfo{indexed}, []Target{owner},
			[]SiteRow{{Site: "https://a.example", Host: "a.example", Indexed: true, Pages: 12, CrawledAt: t0, LastCrawl: t0, NextCrawl: t2, Targets: []Target{owner}}}},
		{"indexed site without a CrawlTarget (namespaced mode, target deleted)",
			[]store.SiteInfo{orphan}, nil,
			[]SiteRow{{Site: "http://z.example:8080", Host: "z.example", Indexed: true, Pages: 3, CrawledAt: t1, LastCrawl: t1}}},
		{"target not indexed yet: a row of its own, its own last crawl",
			nil, []Target{waiting},
			[]SiteRow{{Site: "https://b.example", Host: "b.example", LastCrawl: t0, Targets: []Target{waiting}}}},
		{"two targets of one site: both, sorted; the earliest next crawl",
			[]store.SiteInfo{indexed}, []Target{owner, dup},
			[]SiteRow{{Site: "https://a.example", Host: "a.example", Indexed: true, Pages: 12, CrawledAt: t0, LastCrawl: t0, NextCrawl: t1, Targets: []Target{dup, owner}}}},
		{"a target without a site still shows; rows sorted by site",
			[]store.SiteInfo{orphan, indexed}, []Target{waiting, broken},
			[]SiteRow{
				{Targets: []Target{broken}},
				{Site: "http://z.example:8080", Host: "z.example", Indexed: true, Pages: 3, CrawledAt: t1, LastCrawl: t1},
				{Site: "https://a.example", Host: "a.example", Indexed: true, Pages: 12, CrawledAt: t0, LastCrawl: t0},
				{Site: "https://b.example", Host: "b.example", LastCrawl: t0, Targets: []Target{waiting}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Join(tt.sites, tt.targets); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Join =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
	rows := Join([]store.SiteInfo{indexed, orphan, {Site: "http://a.example", Host: "a.example", Pages: 1}}, nil)
	if got := OnHost(rows, "a.example"); len(got) != 2 || got[0].Site != "http://a.example" || got[1].Site != "https://a.example" {
		t.Errorf("OnHost(a.example) = %+v", got)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{
		-1: "", 0: "", 1: "1 B", 999: "999 B", 9994: "9994 B", 9995: "10 kB", 6335: "6335 B", 63_350: "63 kB",
		1_234_567: "1235 kB", 12_345_678: "12 MB", 1 << 40: "1100 GB",
	} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
