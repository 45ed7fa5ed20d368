package storetest

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store"
)

// testConditionalRecrawl: a crawl whose pages answered 304 keeps what the
// index holds of them (store.Carry), with the crawl's fetch time; pages
// that changed are replaced; an unchanged page the index does not hold is
// not invented; link texts the crawl could not read stay; the validators
// are listed for the next crawl, and the crawl's stats shown per site.
func testConditionalRecrawl(t *testing.T, s store.Store) {
	const src, site = "ns/a", "https://a.example:443"
	home := store.Page{
		URL: "https://a.example/", StatusCode: 200, Title: "Otter habitats", Description: "Where otters live.",
		H1: []string{"Otters"}, H2: []string{"Rivers"}, Anchors: []string{"home"}, FetchedAt: t0, Lang: "en",
		ETag: `"home-1"`, LastModified: "Sat, 01 Aug 2026 09:30:00 GMT",
	}
	news := store.Page{URL: "https://a.example/news", StatusCode: 200, Title: "Beaver news", Anchors: []string{"news"}, FetchedAt: t0, ETag: `W/"news-1"`}
	plain := page("https://a.example/plain", "Plain page") // the site sent no validator
	first := doc(src, site, home, news, plain)
	first.Links = []store.Link{{URL: "https://b.example/dams", Anchors: []string{"dam builders"}}}
	replace(t, s, first)
	replace(t, s, doc("ns/b", "https://b.example:443", page("https://b.example/dams", "Dams")))

	if got := validators(t, s, src, site); !reflect.DeepEqual(got, []store.Validators{
		{URL: home.URL, ETag: home.ETag, LastModified: home.LastModified},
		{URL: news.URL, ETag: news.ETag},
		{URL: plain.URL},
	}) {
		t.Errorf("Validators after the first crawl = %+v", got)
	}
	for _, other := range [][2]string{{"ns/other", site}, {src, "https://b.example:443"}, {"ns/none", "https://none.example:443"}} {
		if got := validators(t, s, other[0], other[1]); len(got) != 0 {
			t.Errorf("Validators(%s, %s) = %+v, want none", other[0], other[1], got)
		}
	}

	// The recrawl: the home page answered 304 (no body: no texts, and its
	// links unread), the news page changed, and a page the index never
	// held claims to be unchanged.
	t1 := t0.Add(24 * time.Hour)
	again := doc(src, site,
		store.Page{URL: home.URL, StatusCode: 304, FetchedAt: t1, ETag: home.ETag, Unchanged: true},
		store.Page{URL: news.URL, StatusCode: 200, Title: "Beaver news today", Anchors: []string{"latest"}, FetchedAt: t1, ETag: `W/"news-2"`},
		store.Page{URL: "https://a.example/ghost", StatusCode: 304, FetchedAt: t1, ETag: `"ghost"`, Unchanged: true},
	)
	again.BytesReceived, again.PagesUnchanged = 12345, 2
	replace(t, s, again)

	got := map[string]store.Page{}
	for _, p := range pagesOf(t, s, "a.example") {
		got[p.URL] = p.Page
	}
	wantHome := home
	wantHome.FetchedAt = t1
	if !reflect.DeepEqual(got[home.URL], wantHome) {
		t.Errorf("unchanged page:\n got %+v\nwant %+v", got[home.URL], wantHome)
	}
	if n := got[news.URL]; n.Title != "Beaver news today" || n.ETag != `W/"news-2"` || !slices.Equal(n.Anchors, []string{"latest", "news"}) {
		t.Errorf("changed page: %+v (anchors: the crawl's, then the stored ones it could not see)", n)
	}
	if _, ok := got["https://a.example/ghost"]; ok || len(got) != 2 {
		t.Errorf("pages after the recrawl: %v (an unchanged page the index did not hold has no fields to keep)", slices.Sorted(maps.Keys(got)))
	}
	wantURLs(t, s, "otter", home.URL)
	// The home page's link to another site was not read this time: its
	// text stays on the other site's page.
	wantURLs(t, s, "dam builders", "https://b.example/dams")
	sites, err := s.Sites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sites[0].Site != site || sites[0].BytesReceived != 12345 || sites[0].PagesUnchanged != 2 || sites[0].Pages != 2 {
		t.Errorf("Sites()[0] = %+v", sites[0])
	}

	// Written twice (the endpoint retried), the same document gives the
	// same pages.
	replace(t, s, again)
	for _, p := range pagesOf(t, s, "a.example") {
		if !reflect.DeepEqual(p.Page, got[p.URL]) {
			t.Errorf("after writing the same recrawl again: %+v, was %+v", p.Page, got[p.URL])
		}
	}

	// A crawl that read every page replaces everything, link texts too.
	full := doc(src, site, page(home.URL, "Otter habitats"))
	replace(t, s, full)
	wantURLs(t, s, "dam builders")
	if got := validators(t, s, src, site); !reflect.DeepEqual(got, []store.Validators{{URL: home.URL}}) {
		t.Errorf("Validators after a full crawl without validators = %+v", got)
	}
}

// A validator that could break out of a header, or is too long, is not
// stored, whoever hands it to the backend.
func testHostileValidatorsNotStored(t *testing.T, s store.Store) {
	p := page("https://a.example/", "Home")
	p.ETag, p.LastModified = "\"a\"\r\nSet-Cookie: x=1", "yesterday"
	replace(t, s, doc("ns/a", "https://a.example:443", p))
	if got := validators(t, s, "ns/a", "https://a.example:443"); !reflect.DeepEqual(got, []store.Validators{{URL: p.URL}}) {
		t.Errorf("Validators = %+v, want none kept", got)
	}
}

func validators(t *testing.T, s store.Store, source, site string) []store.Validators {
	t.Helper()
	v, err := s.Validators(ctx, source, site)
	if err != nil {
		t.Fatalf("Validators(%s, %s): %v", source, site, err)
	}
	return v
}

// ValidatorsUpgradeRows are the rows a test writes into a database at
// schema version 3 (before validators) before it opens it with this
// code: one site written from "ns/a" with one page, titled "Káva".
var ValidatorsUpgradeRows = []string{
	`INSERT INTO sites (site, host, source, crawled_at, run) VALUES ('https://a.example:443', 'a.example', 'ns/a', 1, 'run-1')`,
	`INSERT INTO pages (site, url, status_code, title, description, h1, h2, h3, anchors, ext_anchors, fetched_at, lang)
		VALUES ('https://a.example:443', 'https://a.example/', 200, 'Káva', '', '[]', '[]', '[]', '["otter den"]', '[]', 1, 'sk')`,
}

// CheckUpgradedToValidators checks a store opened on a database written
// at schema version 3 with ValidatorsUpgradeRows: the page has no
// validators (none was ever received, none is invented), the site no
// stats, and a recrawl that finds the page unchanged keeps it.
func CheckUpgradedToValidators(t *testing.T, s store.Store) {
	t.Helper()
	const src, site, u = "ns/a", "https://a.example:443", "https://a.example/"
	if got := validators(t, s, src, site); !reflect.DeepEqual(got, []store.Validators{{URL: u}}) {
		t.Errorf("Validators after the upgrade = %+v", got)
	}
	sites, err := s.Sites(ctx)
	if err != nil || len(sites) != 1 || sites[0].BytesReceived != 0 || sites[0].PagesUnchanged != 0 {
		t.Errorf("Sites after the upgrade = %+v, %v", sites, err)
	}
	d := doc(src, site, store.Page{URL: u, StatusCode: 304, FetchedAt: t0, ETag: `"k1"`, Unchanged: true})
	replace(t, s, d)
	ps := pagesOf(t, s, "a.example")
	if len(ps) != 1 || ps[0].Title != "Káva" || ps[0].Lang != "sk" || ps[0].ETag != `"k1"` || !ps[0].FetchedAt.Equal(t0) {
		t.Errorf("pages after an unchanged recrawl of the upgraded site = %+v", ps)
	}
}
