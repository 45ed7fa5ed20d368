// Package storetest is the contract every store.Store backend must pass,
// and the search benchmark they share. Backends call Run from a test and
// BenchmarkSearch from a benchmark.
package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store"
)

// Backend is how the suite gets at one backend.
type Backend struct {
	// Open returns a new, empty store that the backend closes and removes
	// in t.Cleanup.
	Open func(t *testing.T) store.Store
	// Dump returns every table of s with all its rows, so the suite can
	// check that nothing beyond the promised fields is stored.
	Dump func(t *testing.T, s store.Store) Dump
}

// Dump is the content of a database: table name to table.
type Dump map[string]Table

// Table is one dumped table. Values are strings, integers or nil.
type Table struct {
	Columns []string
	Rows    [][]any
}

// Run runs the contract suite.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"ReplaceThenSearch", testReplaceThenSearch},
		{"ReplaceIsIdempotent", testReplaceIsIdempotent},
		{"ReplaceDropsPagesGoneFromTheSite", testReplaceDropsOldPages},
		{"SourceMovingToAnotherSite", testSourceMoves},
		{"InvalidDocumentsAreRefused", testInvalidDocuments},
		{"RankingWeightsTitleHeadingsAnchorsDescription", testRanking},
		{"EveryTermMustMatch", testAllTerms},
		{"QuerySyntaxIsInert", testQuerySyntax},
		{"Limits", testLimits},
		{"NonLatinText", testNonLatin},
		{"CaseAndDiacriticsFolding", testFolding},
		{"Stemming", testStemming},
		{"LanguageIsKept", testLanguageIsKept},
		{"SmallCorpusExactRanking", testSmallCorpus},
		{"NULAndInvalidUTF8", testBadText},
		{"CrossSiteAnchors", testCrossSiteAnchors},
		{"DeleteSource", testDeleteSource},
		{"SourcesWithRuns", testSourcesWithRuns},
		{"PurgeDomainAndSubdomains", testPurgeDomain},
		{"SitesAndPages", testSitesAndPages},
		{"ConcurrentWritersAndReaders", testConcurrent},
		{"ConditionalRecrawl", testConditionalRecrawl},
		{"HostileValidatorsNotStored", testHostileValidatorsNotStored},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.Open(t)) })
	}
	t.Run("OnlyPromisedFieldsAreStored", func(t *testing.T) { testOnlyPromisedFields(t, b) })
}

var (
	t0  = time.Date(2026, 8, 23, 10, 0, 0, 0, time.UTC)
	ctx = context.Background()
)

// doc builds a site document from pages given as URL path → title.
func doc(source, siteURL string, pages ...store.Page) store.SiteDoc {
	return store.SiteDoc{Source: source, Site: siteURL, CrawledAt: t0, Pages: pages}
}

func page(url, title string) store.Page {
	return store.Page{URL: url, StatusCode: 200, Title: title, FetchedAt: t0}
}

func replace(t *testing.T, s store.Store, d store.SiteDoc) {
	t.Helper()
	if err := s.ReplaceSite(ctx, d); err != nil {
		t.Fatalf("ReplaceSite(%s): %v", d.Site, err)
	}
}

func search(t *testing.T, s store.Store, q string) []string {
	t.Helper()
	res, err := s.Search(ctx, q, store.MaxLimit)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	urls := make([]string, len(res))
	for i, r := range res {
		urls[i] = r.URL
	}
	return urls
}

func wantURLs(t *testing.T, s store.Store, q string, want ...string) {
	t.Helper()
	got := search(t, s, q)
	if len(want) == 0 {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Search(%q) = %q, want %q", q, got, want)
	}
}

func pagesOf(t *testing.T, s store.Store, host string) []store.SitePage {
	t.Helper()
	ps, err := s.Pages(ctx, host)
	if err != nil {
		t.Fatalf("Pages(%s): %v", host, err)
	}
	return ps
}

func testReplaceThenSearch(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/a", "https://a.example:443",
		store.Page{URL: "https://a.example/", StatusCode: 200, Title: "Otter habitats", Description: "Where otters live."},
		page("https://a.example/b", "Beavers"),
	))
	res, err := s.Search(ctx, "otter", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Result{{URL: "https://a.example/", Title: "Otter habitats", Description: "Where otters live.", Site: "https://a.example:443"}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Search = %+v, want %+v", res, want)
	}
	wantURLs(t, s, "OTTER Habitats", "https://a.example/")
	wantURLs(t, s, "nothing-like-this")
}

func testReplaceIsIdempotent(t *testing.T, s store.Store) {
	d := doc("ns/a", "https://a.example:443", page("https://a.example/", "Otter"), page("https://a.example/x", "Otter x"))
	d.Links = []store.Link{{URL: "https://b.example/", Anchors: []string{"otter friends"}}}
	replace(t, s, d)
	sites1, _ := s.Sites(ctx)
	pages1 := pagesOf(t, s, "a.example")
	replace(t, s, d)
	sites2, _ := s.Sites(ctx)
	pages2 := pagesOf(t, s, "a.example")
	if !reflect.DeepEqual(sites1, sites2) || !reflect.DeepEqual(pages1, pages2) {
		t.Errorf("second replace changed the site:\n%+v\n%+v\nvs\n%+v\n%+v", sites1, pages1, sites2, pages2)
	}
	wantURLs(t, s, "otter", "https://a.example/", "https://a.example/x")
}

func testReplaceDropsOldPages(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/a", "https://a.example:443", page("https://a.example/", "Otter"), page("https://a.example/old", "Walrus")))
	replace(t, s, doc("ns/a", "https://a.example:443", page("https://a.example/", "Otter")))
	wantURLs(t, s, "walrus")
	if ps := pagesOf(t, s, "a.example"); len(ps) != 1 {
		t.Errorf("Pages = %+v, want only the home page", ps)
	}
}

func testSourceMoves(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/a", "http://a.example:80", page("http://a.example/", "Plain otter")))
	replace(t, s, doc("ns/a", "https://a.example:443", page("https://a.example/", "Secure otter")))
	wantURLs(t, s, "otter", "https://a.example/")
	sites, err := s.Sites(ctx)
	if err != nil || len(sites) != 1 || sites[0].Site != "https://a.example:443" {
		t.Errorf("Sites = %+v, %v; want only the new site", sites, err)
	}
}

func testInvalidDocuments(t *testing.T, s store.Store) {
	for name, d := range map[string]store.SiteDoc{
		"page of another site": doc("ns/a", "https://a.example:443", page("https://b.example/", "x")),
		"page of another port": doc("ns/a", "https://a.example:443", page("https://a.example:8443/", "x")),
		"site not normalised":  doc("ns/a", "https://A.example", page("https://a.example/", "x")),
		"no source":            doc("", "https://a.example:443"),
		"duplicate page":       doc("ns/a", "https://a.example:443", page("https://a.example/", "x"), page("https://a.example/", "y")),
		"link to itself":       {Source: "ns/a", Site: "https://a.example:443", Links: []store.Link{{URL: "https://a.example/x"}}},
	} {
		if err := s.ReplaceSite(ctx, d); err == nil {
			t.Errorf("%s: ReplaceSite accepted %+v", name, d)
		}
	}
	if sites, _ := s.Sites(ctx); len(sites) != 0 {
		t.Errorf("refused documents left sites behind: %+v", sites)
	}
}

// Each page carries the word in one field only; every page has the same
// amount of text, so only the field's weight decides the order.
func testRanking(t *testing.T, s store.Store) {
	filler := "lorem ipsum dolor"
	p := func(path string) store.Page {
		return store.Page{URL: "https://r.example/" + path, Title: filler, Description: filler,
			H1: []string{filler}, Anchors: []string{filler}}
	}
	title, heading, anchor, desc := p("title"), p("heading"), p("anchor"), p("description")
	title.Title = "kingfisher " + filler
	heading.H1 = []string{"kingfisher " + filler}
	anchor.Anchors = []string{"kingfisher " + filler}
	desc.Description = "kingfisher " + filler
	// Written in reverse of the expected order, so insertion order cannot
	// produce the right answer by chance.
	replace(t, s, doc("ns/r", "https://r.example:443", desc, anchor, heading, title))
	wantURLs(t, s, "kingfisher", title.URL, heading.URL, anchor.URL, desc.URL)

	// Link texts from another site weigh like the page's own.
	replace(t, s, doc("ns/q", "https://q.example:443", store.Page{URL: "https://q.example/", Title: filler, Description: "heron " + filler}))
	other := doc("ns/o", "https://o.example:443")
	other.Links = []store.Link{{URL: anchor.URL, Anchors: []string{"heron"}}}
	replace(t, s, other)
	wantURLs(t, s, "heron", anchor.URL, "https://q.example/")
}

func testAllTerms(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/a", "https://a.example:443",
		page("https://a.example/1", "red kite"), page("https://a.example/2", "red fox"), page("https://a.example/3", "kite surfing")))
	wantURLs(t, s, "red kite", "https://a.example/1")
	wantURLs(t, s, "kite", "https://a.example/1", "https://a.example/3")
}

func testQuerySyntax(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/a", "https://a.example:443",
		page("https://a.example/1", "This or that"),
		page("https://a.example/2", `Say "hello" to e-mail*`),
		page("https://a.example/3", "NEAR the title: column")))
	for _, q := range []string{`"`, `""`, `*`, `-`, `OR`, `AND`, `NOT`, `a OR`, `(`, `)`, `'`, `\`, `&|!`, `^x`, `:*`,
		`title:x`, `NEAR(a b)`, `{a b}`, `a + b`, `'; DROP TABLE pages; --`, `$1`, `?`, `%`, `_`, "\x00", "\u00a0", "é́"} {
		if _, err := s.Search(ctx, q, 10); err != nil {
			t.Errorf("Search(%q) = %v, want no error", q, err)
		}
	}
	wantURLs(t, s, "OR", "https://a.example/1")
	wantURLs(t, s, `"hello`, "https://a.example/2")
	wantURLs(t, s, `e-mail*`, "https://a.example/2")
	wantURLs(t, s, `NEAR(title`, "https://a.example/3")
	wantURLs(t, s, `title:column`, "https://a.example/3")
	wantURLs(t, s, `-that`, "https://a.example/1")
	wantURLs(t, s, `***`)
}

func testLimits(t *testing.T, s store.Store) {
	var pages []store.Page
	for i := range 5 {
		pages = append(pages, page(fmt.Sprintf("https://a.example/%d", i), "puffin"))
	}
	replace(t, s, doc("ns/a", "https://a.example:443", pages...))
	res, err := s.Search(ctx, "puffin", 2)
	if err != nil || len(res) != 2 {
		t.Errorf("Search limit 2 = %d results, %v", len(res), err)
	}
	for _, limit := range []int{0, -1, store.MaxLimit + 1} {
		if _, err := s.Search(ctx, "puffin", limit); !errors.Is(err, store.ErrBadQuery) {
			t.Errorf("Search limit %d = %v, want ErrBadQuery", limit, err)
		}
	}
	if _, err := s.Search(ctx, strings.Repeat("a", store.MaxQueryLength+1), 10); !errors.Is(err, store.ErrBadQuery) {
		t.Errorf("Search of an over-long query = %v, want ErrBadQuery", err)
	}
	if _, err := s.Search(ctx, strings.Repeat("a ", store.MaxQueryLength/2), 10); err != nil {
		t.Errorf("Search of a query of the longest length = %v", err)
	}
}

func testNonLatin(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/a", "https://a.example:443",
		page("https://a.example/bg", "Търсачка за сайтове"),
		page("https://a.example/sk", "Vyhľadávač stránok"),
		page("https://a.example/nl", "Zoekmachine voor websites")))
	wantURLs(t, s, "търсачка", "https://a.example/bg")
	wantURLs(t, s, "ТЪРСАЧКА", "https://a.example/bg")
	wantURLs(t, s, "vyhľadávač", "https://a.example/sk")
	wantURLs(t, s, "zoekmachine", "https://a.example/nl")
}

func testCrossSiteAnchors(t *testing.T, s store.Store) {
	b := doc("ns/b", "https://b.example:443", store.Page{URL: "https://b.example/nest", Title: "Nest boxes", Anchors: []string{"our nests"}})
	a := doc("ns/a", "https://a.example:443", page("https://a.example/", "Birding links"))
	a.Links = []store.Link{
		{URL: "https://b.example/nest", Anchors: []string{"wren houses", "our nests"}},
		{URL: "https://c.example/not-indexed-yet", Anchors: []string{"swift towers"}},
	}
	ext := func(host string) []string {
		ps := pagesOf(t, s, host)
		return ps[0].ExternalAnchors
	}

	// B first, then A links to it: A's text reaches B's page.
	replace(t, s, b)
	replace(t, s, a)
	wantURLs(t, s, "wren", "https://b.example/nest")
	if got := ext("b.example"); !slices.Equal(got, []string{"wren houses"}) {
		t.Errorf("external anchors of B = %q, want [wren houses] (own text not repeated)", got)
	}
	// C is indexed after A: it picks up A's text on arrival.
	replace(t, s, doc("ns/c", "https://c.example:443", page("https://c.example/not-indexed-yet", "Towers")))
	wantURLs(t, s, "swift", "https://c.example/not-indexed-yet")
	// B re-crawled: it keeps A's text.
	replace(t, s, b)
	wantURLs(t, s, "wren", "https://b.example/nest")

	// A stops linking to B: the text goes.
	a.Links = a.Links[1:]
	replace(t, s, a)
	wantURLs(t, s, "wren")
	if got := ext("b.example"); len(got) != 0 {
		t.Errorf("external anchors of B after A dropped the link = %q", got)
	}
	// A deleted: C loses A's text.
	if _, err := s.DeleteSource(ctx, "ns/a"); err != nil {
		t.Fatal(err)
	}
	wantURLs(t, s, "swift")
	wantURLs(t, s, "towers", "https://c.example/not-indexed-yet")
}

func testDeleteSource(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/a", "https://a.example:443", page("https://a.example/", "Otter"), page("https://a.example/2", "Otter 2")))
	replace(t, s, doc("ns/b", "https://b.example:443", page("https://b.example/", "Otter")))
	n, err := s.DeleteSource(ctx, "ns/a")
	if err != nil || n != 2 {
		t.Errorf("DeleteSource = %d, %v; want 2", n, err)
	}
	wantURLs(t, s, "otter", "https://b.example/")
	wantSources(t, s, store.SourceRun{Source: "ns/b", Site: "https://b.example:443"})
	if n, err := s.DeleteSource(ctx, "ns/a"); err != nil || n != 0 {
		t.Errorf("second DeleteSource = %d, %v; want 0, nil", n, err)
	}
	// keep spares the source's current site: a SiteIndex moved to
	// another site loses the old one's rows, never the new one's; one
	// whose plain-HTTP site upgrades to https keeps either.
	if n, err := s.DeleteSource(ctx, "ns/b", "https://b.example:443"); err != nil || n != 0 {
		t.Errorf("DeleteSource keeping the only site = %d, %v; want 0, nil", n, err)
	}
	if n, err := s.DeleteSource(ctx, "ns/b", "http://b.example:80", "https://b.example:443"); err != nil || n != 0 {
		t.Errorf("DeleteSource keeping the site among two = %d, %v; want 0, nil", n, err)
	}
	wantURLs(t, s, "otter", "https://b.example/")
	if n, err := s.DeleteSource(ctx, "ns/b", "http://b.example:80"); err != nil || n != 1 {
		t.Errorf("DeleteSource keeping another site = %d, %v; want 1", n, err)
	}
	wantURLs(t, s, "otter")
}

// testSourcesWithRuns: the backend tells which run each source's rows come
// from, in one list, so a starting manager can compare without writing.
func testSourcesWithRuns(t *testing.T, s store.Store) {
	if got, err := s.Sources(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Sources of an empty backend = %v, %v", got, err)
	}
	a := doc("ns/a", "https://a.example:443", page("https://a.example/", "Otter"))
	a.Run = "a-1"
	replace(t, s, a)
	b := doc("ns/b", "http://b.example:80")
	b.Run = "b-7" // a run that indexed nothing is still held
	replace(t, s, b)
	wantSources(t, s,
		store.SourceRun{Source: "ns/a", Site: "https://a.example:443", Run: "a-1"},
		store.SourceRun{Source: "ns/b", Site: "http://b.example:80", Run: "b-7"})
	a.Run = "a-2"
	replace(t, s, a)
	// The source moves to another site: the old site goes with its run.
	moved := doc("ns/b", "https://c.example:443", page("https://c.example/", "Heron"))
	moved.Run = "b-8"
	replace(t, s, moved)
	wantSources(t, s,
		store.SourceRun{Source: "ns/a", Site: "https://a.example:443", Run: "a-2"},
		store.SourceRun{Source: "ns/b", Site: "https://c.example:443", Run: "b-8"})
}

func wantSources(t *testing.T, s store.Store, want ...store.SourceRun) {
	t.Helper()
	got, err := s.Sources(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Sources = %+v, %v; want %+v", got, err, want)
	}
}

func testPurgeDomain(t *testing.T, s store.Store) {
	for _, d := range []store.SiteDoc{
		doc("ns/1", "https://example.com:443", page("https://example.com/", "gannet"), page("https://example.com/2", "gannet")),
		doc("ns/2", "http://example.com:80", page("http://example.com/", "gannet")),
		doc("ns/3", "https://www.example.com:443", page("https://www.example.com/", "gannet")),
		doc("ns/4", "https://deep.sub.example.com:8443", page("https://deep.sub.example.com:8443/", "gannet")),
		doc("ns/5", "https://notexample.com:443", page("https://notexample.com/", "gannet")),
		doc("ns/6", "https://example.com.evil.net:443", page("https://example.com.evil.net/", "gannet")),
	} {
		replace(t, s, d)
	}
	// A site outside the domain links into it and is linked from it.
	outside := doc("ns/7", "https://other.org:443", page("https://other.org/", "cormorant"))
	outside.Links = []store.Link{{URL: "https://www.example.com/", Anchors: []string{"shag colony"}}}
	replace(t, s, outside)
	inside := doc("ns/8", "https://blog.example.com:443", page("https://blog.example.com/", "blog"))
	inside.Links = []store.Link{{URL: "https://other.org/", Anchors: []string{"petrel"}}}
	replace(t, s, inside)
	wantURLs(t, s, "petrel", "https://other.org/")

	removed, err := s.PurgeDomain(ctx, "example.com")
	want := store.Removed{"ns/1": 2, "ns/2": 1, "ns/3": 1, "ns/4": 1, "ns/8": 1}
	if err != nil || !reflect.DeepEqual(removed, want) || removed.Total() != 6 {
		t.Fatalf("PurgeDomain = %v, %v; want %v, 6 pages", removed, err, want)
	}
	wantURLs(t, s, "gannet", "https://example.com.evil.net/", "https://notexample.com/")
	// Texts the domain wrote about others are gone with it.
	wantURLs(t, s, "petrel")
	// Texts others wrote about the domain are gone too: were the domain
	// indexed again, it would not get them back.
	replace(t, s, doc("ns/3", "https://www.example.com:443", page("https://www.example.com/", "gannet")))
	wantURLs(t, s, "shag")
	if n, err := s.PurgeDomain(ctx, "example.com"); err != nil || !reflect.DeepEqual(n, store.Removed{"ns/3": 1}) {
		t.Errorf("second PurgeDomain = %v, %v; want ns/3: 1", n, err)
	}
	if n, err := s.PurgeDomain(ctx, "example.com"); err != nil || n.Total() != 0 {
		t.Errorf("third PurgeDomain = %v, %v; want nothing", n, err)
	}
	for _, h := range []string{"example.com", "www.example.com", "deep.sub.example.com", "blog.example.com"} {
		if _, err := s.Pages(ctx, h); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Pages(%s) after purge = %v, want ErrNotFound", h, err)
		}
	}
}

func testSitesAndPages(t *testing.T, s store.Store) {
	full := store.Page{
		URL: "https://a.example/full", StatusCode: 203, Title: "Full", Description: "Every field",
		H1: []string{"One"}, H2: []string{"Two a", "Two b"}, H3: []string{"Three"},
		Anchors: []string{"full page"}, FetchedAt: t0.Add(1500 * time.Millisecond),
	}
	replace(t, s, doc("ns/a", "https://a.example:443", page("https://a.example/", "Home"), full))
	replace(t, s, doc("ns/a2", "http://a.example:8080", page("http://a.example:8080/", "Alt")))
	replace(t, s, doc("ns/empty", "https://empty.example:443"))

	sites, err := s.Sites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.SiteInfo{
		{Site: "http://a.example:8080", Host: "a.example", Pages: 1, CrawledAt: t0},
		{Site: "https://a.example:443", Host: "a.example", Pages: 2, CrawledAt: t0},
		{Site: "https://empty.example:443", Host: "empty.example", Pages: 0, CrawledAt: t0},
	}
	if !reflect.DeepEqual(sites, want) {
		t.Errorf("Sites =\n%+v\nwant\n%+v", sites, want)
	}
	ps := pagesOf(t, s, "a.example")
	var urls []string
	for _, p := range ps {
		urls = append(urls, p.URL)
	}
	if !slices.Equal(urls, []string{"http://a.example:8080/", "https://a.example/", "https://a.example/full"}) {
		t.Errorf("Pages URLs = %q", urls)
	}
	got := ps[2]
	if got.Site != "https://a.example:443" || !reflect.DeepEqual(got.Page, full) {
		t.Errorf("page round trip:\n got %+v\nwant %+v", got, store.SitePage{Site: "https://a.example:443", Page: full})
	}
	if ps := pagesOf(t, s, "empty.example"); len(ps) != 0 {
		t.Errorf("Pages of a site without pages = %+v", ps)
	}
	if _, err := s.Pages(ctx, "unknown.example"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Pages(unknown) = %v, want ErrNotFound", err)
	}
}

func testConcurrent(t *testing.T, s store.Store) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Go(func() {
			st := fmt.Sprintf("https://s%d.example:443", i)
			for j := range 4 {
				d := doc(fmt.Sprintf("ns/s%d", i), st, page(fmt.Sprintf("https://s%d.example/", i), fmt.Sprintf("albatross %d", j)))
				d.Links = []store.Link{{URL: fmt.Sprintf("https://s%d.example/", (i+1)%8), Anchors: []string{"albatross"}}}
				if err := s.ReplaceSite(ctx, d); err != nil {
					errs <- err
				}
				if _, err := s.Search(ctx, "albatross", 10); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := search(t, s, "albatross"); len(got) != 8 {
		t.Errorf("after concurrent writes, %d pages match, want 8", len(got))
	}
}

func testBadText(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/a", "https://a.example:443", store.Page{
		URL: "https://a.example/", Title: "nul\x00byte bad\xffutf8", H1: []string{"x\x00y"}, Anchors: []string{"\xfe"},
	}))
	wantURLs(t, s, "nulbyte", "https://a.example/")
	wantURLs(t, s, "utf8", "https://a.example/")
	if got := pagesOf(t, s, "a.example")[0]; got.Title != "nulbyte bad\uFFFDutf8" || got.H1[0] != "xy" {
		t.Errorf("stored page = %+v, want NUL removed and bad UTF-8 replaced", got.Page)
	}
}

// CheckUpgraded checks a store opened on a database its previous schema
// wrote, holding one page https://a.example/ titled "Káva" with the inbound
// anchor "otter den": the upgrade must have built its search index, folded
// ("kava") and from the anchors ("otter").
func CheckUpgraded(t *testing.T, s store.Store) {
	t.Helper()
	for _, q := range []string{"kava", "otter"} {
		if res, err := s.Search(context.Background(), q, 10); err != nil || len(res) != 1 || res[0].URL != "https://a.example/" {
			t.Errorf("after upgrade, Search(%q) = %+v, %v", q, res, err)
		}
	}
}

// DB is the database under a SQL backend (sqlite or postgres), for tests
// that inspect its tables.
func DB(t testing.TB, s store.Store) *sql.DB {
	t.Helper()
	withDB, ok := s.(interface{ DB() *sql.DB })
	if !ok {
		t.Fatalf("%T is not a SQL backend", s)
	}
	return withDB.DB()
}
