package syncer

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/sqlite"
)

func TestPlanStart(t *testing.T) {
	si := func(name, siteURL, run string, complete bool, pages int32) crawlv1.SiteIndex {
		return crawlv1.SiteIndex{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:       crawlv1.SiteIndexSpec{Site: siteURL},
			Status:     crawlv1.SiteIndexStatus{Run: run, Complete: complete, Stats: crawlv1.IndexStats{Pages: pages}},
		}
	}
	held := func(name, siteURL, run string) store.SourceRun {
		return store.SourceRun{Source: "ns/" + name, Site: siteURL, Run: run}
	}
	excluded := func(host string) bool { return strings.HasSuffix(host, "blocked.example") }
	tests := []struct {
		name          string
		held          []store.SourceRun
		sis           []crawlv1.SiteIndex
		remove, crawl []string
	}{
		{name: "agree: nothing to do",
			held: []store.SourceRun{held("a", "https://a.example:443", "a-1"), held("b", "http://b.example:80", "b-3")},
			sis:  []crawlv1.SiteIndex{si("a", "https://a.example:443", "a-1", true, 5), si("b", "http://b.example:80", "b-3", true, 2)}},
		{name: "spec.site written another way is the same site",
			held: []store.SourceRun{held("a", "https://a.example:443", "a-1")},
			sis:  []crawlv1.SiteIndex{si("a", "HTTPS://A.example", "a-1", true, 5)}},
		{name: "SiteIndex gone: its rows go",
			held:   []store.SourceRun{held("gone", "https://g.example:443", "g-1")},
			remove: []string{"gone"}},
		{name: "malformed source names are left alone",
			held: []store.SourceRun{{Source: "no-slash", Site: "https://x.example:443"}, {Source: "ns/", Site: "https://y.example:443"}}},
		{name: "site moved: the old site's rows go; the new site is crawled by its target",
			held:   []store.SourceRun{held("a", "https://old.example:443", "a-1")},
			sis:    []crawlv1.SiteIndex{si("a", "https://new.example:443", "", false, 0)},
			remove: []string{"a"}},
		{name: "a plain-HTTP site that upgraded to https keeps its https rows",
			held: []store.SourceRun{held("up", "https://up.example:443", "up-1")},
			sis:  []crawlv1.SiteIndex{si("up", "http://up.example:80", "up-1", true, 4)}},
		{name: "an https site's rows are no plain-HTTP target's, nor another port's",
			held:   []store.SourceRun{held("down", "http://down.example:80", "d-1"), held("port", "https://port.example:443", "p-1")},
			sis:    []crawlv1.SiteIndex{si("down", "https://down.example:443", "d-1", true, 4), si("port", "http://port.example:8080", "p-1", true, 4)},
			remove: []string{"down", "port"}, crawl: []string{"down", "port"}},
		{name: "excluded site: rows go, no crawl asked for",
			held:   []store.SourceRun{held("x", "https://www.blocked.example:443", "x-1")},
			sis:    []crawlv1.SiteIndex{si("x", "https://www.blocked.example:443", "x-1", true, 3), si("y", "https://blocked.example:443", "y-1", true, 3)},
			remove: []string{"x"}},
		{name: "backend emptied: crawls asked for where pages were indexed",
			sis: []crawlv1.SiteIndex{si("a", "https://a.example:443", "a-1", true, 5), si("none", "https://n.example:443", "n-1", true, 0),
				si("first", "https://f.example:443", "f-1", false, 2), si("new", "https://new.example:443", "", false, 0)},
			crawl: []string{"a"}},
		{name: "backend restored from an older backup: a crawl is asked for",
			held:  []store.SourceRun{held("a", "https://a.example:443", "a-1")},
			sis:   []crawlv1.SiteIndex{si("a", "https://a.example:443", "a-2", true, 5)},
			crawl: []string{"a"}},
		{name: "rows from before runs were recorded are taken as held",
			held: []store.SourceRun{held("a", "https://a.example:443", "")},
			sis:  []crawlv1.SiteIndex{si("a", "https://a.example:443", "a-2", true, 5)}},
		{name: "a recrawl's progress does not count: the complete run is compared",
			held: []store.SourceRun{held("a", "https://a.example:443", "a-1")},
			sis: []crawlv1.SiteIndex{func() crawlv1.SiteIndex {
				s := si("a", "https://a.example:443", "a-1", true, 5)
				s.Status.Progress = &crawlv1.CrawlProgress{Run: "a-2", Pages: 3}
				return s
			}()}},
		{name: "invalid spec.site: rows go",
			held:   []store.SourceRun{held("bad", "https://b.example:443", "b-1")},
			sis:    []crawlv1.SiteIndex{si("bad", "ftp://b.example", "b-1", true, 1)},
			remove: []string{"bad"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := planStart(tt.held, tt.sis, excluded)
			if got := names(plan.remove); !slices.Equal(got, tt.remove) {
				t.Errorf("remove = %v, want %v", got, tt.remove)
			}
			if got := names(plan.recrawl); !slices.Equal(got, tt.crawl) {
				t.Errorf("recrawl = %v, want %v", got, tt.crawl)
			}
		})
	}
}

func names(keys []types.NamespacedName) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.Name)
	}
	return out
}

// BenchmarkStartCheck is a manager start with 20,000 SiteIndexes the
// backend already holds: one query of the backend (SQLite) and the
// comparison with the SiteIndexes as the cache holds them. The informer's
// initial list of the SiteIndexes is the API server's part, measured by
// the cluster-level benchmark.
func BenchmarkStartCheck(b *testing.B) {
	const n = 20000
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "index.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sis := make([]crawlv1.SiteIndex, n)
	for i := range sis {
		name := fmt.Sprintf("site-%05d", i)
		site := fmt.Sprintf("https://www.%s.example:443", name)
		run := name + "-crawl-3"
		sis[i] = crawlv1.SiteIndex{
			ObjectMeta: metav1.ObjectMeta{Namespace: "sites", Name: name},
			Spec:       crawlv1.SiteIndexSpec{Site: site},
			Status:     crawlv1.SiteIndexStatus{Run: run, Complete: true, Stats: crawlv1.IndexStats{Pages: 20}},
		}
		if err := st.ReplaceSite(context.Background(), store.SiteDoc{Source: SourceOf("sites", name), Site: site, Run: run}); err != nil {
			b.Fatal(err)
		}
	}
	none := func(string) bool { return false }
	b.ResetTimer()
	for b.Loop() {
		held, err := st.Sources(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		plan := planStart(held, sis, none)
		if len(plan.remove)+len(plan.recrawl) != 0 || len(held) != n {
			b.Fatalf("%d held, plan %d removals, %d crawls", len(held), len(plan.remove), len(plan.recrawl))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/site")
}
