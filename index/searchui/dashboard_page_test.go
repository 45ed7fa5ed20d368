package searchui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/index/store"
)

func targets(ts ...Target) Targets {
	return func(context.Context) ([]Target, error) { return ts, nil }
}

func TestDashboard(t *testing.T) {
	bakery := doc("https://bakery.example:443", "Sourdough guide", "Rye")
	bakery.Pages[0].H1 = []string{hostile}
	bakery.Pages[0].Anchors = []string{"our guide"}
	bakery.BytesReceived, bakery.PagesUnchanged = 6335, 2 // a conditional recrawl
	orphan := doc("http://orphan.example:8080", "Left over")
	h := &Handler{
		Store: newStore(t, bakery, orphan),
		Targets: targets(
			Target{Namespace: "web", Name: "bakery", Site: "https://bakery.example:443", Phase: "Succeeded", Ready: "True", Reason: "Crawled", LastCrawl: t0, NextCrawl: t2},
			Target{Namespace: "web", Name: "newcomer", Site: "https://new.example:443", Phase: "Pending", Ready: "False", Reason: "WaitingForCapacity", Message: hostile},
		),
	}
	r := get(t, h, "/sites")
	checkHTML(t, "/sites", r, http.StatusOK)
	rows := regexp.MustCompile(`(?s)<tr class="site-row">(.*?)</tr>`).FindAllStringSubmatch(r.body, -1)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want the bakery, the newcomer and the orphan:\n%s", len(rows), r.body)
	}
	for i, want := range [][]string{
		{`<a href="http://orphan.example:8080">`, `href="/sites/orphan.example"`, ">1<", english.NoTarget, "2026-11-30 10:00 UTC"},
		{`<a href="https://bakery.example:443">`, `href="/sites/bakery.example"`, ">2<", "<code>web/bakery</code>: Succeeded (Crawled)", "2026-11-30 10:00 UTC", "2026-12-07 10:00 UTC",
			fmt.Sprintf(english.Unchanged, 2), fmt.Sprintf(english.Received, "6335 B")},
		{`href="/sites/new.example"`, english.NotIndexed, english.Never, "<code>web/newcomer</code>: Pending (WaitingForCapacity)", esc(hostile)},
	} {
		for _, w := range want {
			if !strings.Contains(rows[i][1], w) {
				t.Errorf("row %d lacks %q:\n%s", i, w, rows[i][1])
			}
		}
	}

	r = get(t, h, "/sites/bakery.example")
	checkHTML(t, "/sites/bakery.example", r, http.StatusOK)
	for _, w := range []string{"<h1>" + fmt.Sprintf(english.HostTitle, "bakery.example") + "</h1>", `<a href="https://bakery.example:443/0.html">`,
		"h1: " + esc(hostile), "<div>our guide</div>", "About Sourdough guide", "<code>web/bakery</code> Succeeded"} {
		if !strings.Contains(r.body, w) {
			t.Errorf("/sites/bakery.example lacks %q:\n%s", w, r.body)
		}
	}
	// A target not indexed yet has a page that says so; an unknown host
	// has none.
	r = get(t, h, "/sites/new.example")
	checkHTML(t, "/sites/new.example", r, http.StatusOK)
	if !strings.Contains(r.body, english.NothingIndexed) {
		t.Errorf("/sites/new.example does not say nothing is indexed yet:\n%s", r.body)
	}
	r = get(t, h, "/sites/unknown.example")
	checkHTML(t, "/sites/unknown.example", r, http.StatusNotFound)
	if !strings.Contains(r.body, fmt.Sprintf(english.ErrHostUnknown, "unknown.example")) {
		t.Errorf("/sites/unknown.example does not say so:\n%s", r.body)
	}
	// Host names as the JSON API takes them: case and a final dot do not
	// matter; paths, schemes, ports and escapes are not hosts.
	for _, ok := range []string{"/sites/BAKERY.example", "/sites/bakery.example."} {
		if r := get(t, h, ok); r.status != http.StatusOK || !strings.Contains(r.body, "Sourdough guide") {
			t.Errorf("%s: %d", ok, r.status)
		}
	}
	for _, bad := range []string{"/sites/", "/sites/..", "/sites/../etc/passwd", "/sites/%2e%2e%2fetc", "/sites/bakery.example/x", "/sites/bakery.example:443",
		"/sites/https:%2F%2Fbakery.example", "/sites/%3Cscript%3E", "/sites/-bakery.example", "/sites/" + strings.Repeat("a.", 130) + "com"} {
		r := get(t, h, bad)
		checkHTML(t, bad, r, http.StatusBadRequest)
		if !strings.Contains(r.body, esc(english.ErrBadHost)) || strings.Contains(r.body, "<script") {
			t.Errorf("%s does not say it is no host:\n%s", bad, r.body)
		}
	}
}

// The CrawlTargets cannot be listed: the index is still shown, with a
// word that the state is unknown (not that no target exists).
func TestDashboardWithoutState(t *testing.T) {
	h := &Handler{Store: newStore(t, doc("https://bakery.example:443", "Sourdough guide")),
		Targets: func(context.Context) ([]Target, error) { return nil, errors.New("cache not synced") }}
	r := get(t, h, "/sites")
	checkHTML(t, "/sites", r, http.StatusOK)
	if !strings.Contains(r.body, `id="state-unknown"`) || strings.Contains(r.body, english.NoTarget) || !strings.Contains(r.body, `href="/sites/bakery.example"`) {
		t.Errorf("without state:\n%s", r.body)
	}
	if r := get(t, h, "/sites/bakery.example"); r.status != http.StatusOK {
		t.Errorf("/sites/bakery.example without state: %d", r.status)
	}
	h = &Handler{Store: newStore(t)}
	if r := get(t, h, "/sites"); r.status != http.StatusOK || !strings.Contains(r.body, english.NoSites) {
		t.Errorf("empty index: %d\n%s", r.status, r.body)
	}
}

// 100,000 sites do not make one page: SitesPerPage a page, with links on.
func TestDashboardPages(t *testing.T) {
	var sites []store.SiteInfo
	for i := range 2*SitesPerPage + 5 {
		sites = append(sites, store.SiteInfo{Site: fmt.Sprintf("https://s%04d.example:443", i), Host: fmt.Sprintf("s%04d.example", i), Pages: 1})
	}
	h := &Handler{Store: &reader{sites: sites}}
	for page, want := range map[int]int{1: SitesPerPage, 2: SitesPerPage, 3: 5} {
		r := get(t, h, fmt.Sprintf("/sites?page=%d&lang=sk", page))
		checkHTML(t, "sites page", r, http.StatusOK)
		if got := strings.Count(r.body, `<tr class="site-row">`); got != want {
			t.Errorf("page %d: %d rows, want %d", page, got, want)
		}
		if !strings.Contains(r.body, fmt.Sprintf(slovak.PageOf, page, 3)) {
			t.Errorf("page %d does not say which", page)
		}
	}
	if r := get(t, h, "/sites?page=1"); !strings.Contains(r.body, `href="/sites?page=2" rel="next"`) || !strings.Contains(r.body, "s0099.example") || strings.Contains(r.body, "s0100.example") {
		t.Error("page 1 has the wrong sites or no next link")
	}
	checkHTML(t, "/sites?page=4", get(t, h, "/sites?page=4"), http.StatusNotFound)
}

// The dashboard at the design's scale: 100,000 indexed sites, each with
// its CrawlTarget, one page of SitesPerPage rendered.
func BenchmarkDashboard100k(b *testing.B) {
	const n = 100_000
	sites := make([]store.SiteInfo, n)
	ts := make([]Target, n)
	for i := range n {
		s := fmt.Sprintf("https://site%06d.example:443", i)
		sites[i] = store.SiteInfo{Site: s, Host: fmt.Sprintf("site%06d.example", i), Pages: 20, CrawledAt: t0}
		ts[i] = Target{Namespace: "web", Name: fmt.Sprintf("t%06d", i), Site: s, Phase: "Succeeded", Ready: "True", Reason: "Crawled", LastCrawl: t0, NextCrawl: t2}
	}
	h := &Handler{Store: &reader{sites: sites}, Targets: targets(ts...)}
	req := httptest.NewRequest(http.MethodGet, "/sites?page=500", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), `<tr class="site-row">`) != SitesPerPage {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
