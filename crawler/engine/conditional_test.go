package engine

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// lastModified is the modification time of every page of a validated site.
var lastModified = time.Date(2026, 8, 1, 9, 30, 0, 0, time.UTC)

// validatedSite serves n pages (/ and /p1…/p{n-1}), each padded to about
// size bytes of body text, with a strong ETag and a Last-Modified, and
// answers conditional GETs as net/http's file server does. Only the home
// page links to the others, so a crawl that gets a 304 for it must find
// them some other way; with withSitemap, /sitemap.xml lists them all (one
// request of the budget either way: the crawler asks for it).
func validatedSite(tb testing.TB, n, size int, withSitemap bool) *testsite.Site {
	s := testsite.New(tb)
	s.Robots("User-agent: *\nAllow: /\n")
	if withSitemap {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for i := range n {
			fmt.Fprintf(&b, "<url><loc>%s/p%d</loc></url>", s.URL, i)
		}
		b.WriteString("</urlset>")
		sm := strings.Replace(b.String(), s.URL+"/p0<", s.URL+"/<", 1)
		s.Handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, sm)
		})
	}
	var links []string
	for i := 1; i < n; i++ {
		links = append(links, fmt.Sprintf("/p%d", i), fmt.Sprintf("Page %d", i))
	}
	const sentence = "Sourdough, rye and spelt, baked every morning. "
	filler := strings.Repeat(sentence, size/len(sentence)+1)[:size]
	s.Validated("/", testsite.Page("Home", filler, links...), `"home-v1"`, lastModified)
	for i := 1; i < n; i++ {
		s.Validated(fmt.Sprintf("/p%d", i), testsite.Page(fmt.Sprintf("Page %d", i), filler), fmt.Sprintf(`"p%d-v1"`, i), lastModified)
	}
	// The headers a production web server adds to every answer, 304s
	// included, so a 304 weighs what it does in the wild (about 330
	// bytes here) rather than net/http's bare minimum.
	s.Headers(http.Header{
		"Server":                    {"nginx/1.24.0 (Ubuntu)"},
		"Cache-Control":             {"max-age=0, must-revalidate"},
		"Vary":                      {"Accept-Encoding"},
		"X-Content-Type-Options":    {"nosniff"},
		"Strict-Transport-Security": {"max-age=31536000; includeSubDomains"},
		"Connection":                {"keep-alive"},
	})
	return s
}

// previousOf is what the results endpoint would answer after res was
// indexed: every page with the validators it was stored with.
func previousOf(res runreport.Crawl) []runreport.KnownPage {
	var out []runreport.KnownPage
	for _, p := range res.Pages {
		out = append(out, runreport.KnownPage{URL: p.URL, ETag: p.ETag, LastModified: p.LastModified})
	}
	return out
}

func pageByURL(res runreport.Crawl, u string) (runreport.Page, bool) {
	for _, p := range res.Pages {
		if p.URL == u {
			return p, true
		}
	}
	return runreport.Page{}, false
}

// The "done when" of issue 22 item 4: a recrawl of an unchanged site with
// validators gets a 304 for every page, sends the validators it was given
// exactly, spends one request per page, keeps every page, and receives a
// small fraction of the first crawl's bytes.
func TestConditionalRecrawlOfUnchangedSite(t *testing.T) {
	const n = runreport.MaxPages - 1 // and the sitemap: the whole budget
	s := validatedSite(t, n, 20<<10, true)
	first := crawl(t, testConfig(), s.URL)
	if len(first.Pages) != n || first.Stats.PagesUnchanged != 0 {
		t.Fatalf("first crawl: %d pages, %d unchanged; skipped %v", len(first.Pages), first.Stats.PagesUnchanged, first.Skipped)
	}
	home := s.URL + "/"
	if p, _ := pageByURL(first, home); p.ETag != `"home-v1"` || p.LastModified != lastModified.Format(http.TimeFormat) {
		t.Fatalf("home page validators: ETag %q, Last-Modified %q", p.ETag, p.LastModified)
	}
	for _, r := range s.Requests() {
		if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
			t.Fatalf("first crawl sent a validator nobody gave it: %s %v", r.Path, r.Header)
		}
	}
	before := len(s.Requests())
	cfg := testConfig()
	cfg.Previous = previousOf(first)
	again := crawl(t, cfg, s.URL)
	if again.Stats.PagesUnchanged != n || len(again.Pages) != n {
		t.Fatalf("recrawl: %d pages, %d unchanged; skipped %v", len(again.Pages), again.Stats.PagesUnchanged, again.Skipped)
	}
	if got, want := pageURLs(again), pageURLs(first); !sameSet(got, want) {
		t.Errorf("recrawl pages %v, first crawl %v", got, want)
	}
	for _, p := range again.Pages {
		prev, _ := pageByURL(first, p.URL)
		if !p.Unchanged || p.StatusCode != http.StatusNotModified || p.Title != "" || p.ETag != prev.ETag || p.LastModified != prev.LastModified || p.FetchedAt.IsZero() {
			t.Errorf("recrawled page %+v", p)
		}
	}
	pageReqs := 0
	for _, r := range s.Requests()[before:] {
		if r.Path == "/robots.txt" || r.Path == "/sitemap.xml" {
			continue
		}
		pageReqs++
		prev, _ := pageByURL(first, s.URL+r.Path)
		if r.Header.Get("If-None-Match") != prev.ETag || r.Header.Get("If-Modified-Since") != prev.LastModified {
			t.Errorf("%s sent If-None-Match %q, If-Modified-Since %q; want %q, %q", r.Path,
				r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since"), prev.ETag, prev.LastModified)
		}
	}
	if pageReqs != n {
		t.Errorf("recrawl sent %d page requests, want %d (one per page)", pageReqs, n)
	}
	if ratio := float64(again.Stats.BytesReceived) / float64(first.Stats.BytesReceived); ratio > 0.05 {
		t.Errorf("recrawl received %d bytes, %.1f %% of the first crawl's %d", again.Stats.BytesReceived, 100*ratio, first.Stats.BytesReceived)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// A 304 answers a conditional request. One to a request that carried no
// validator says nothing about the page: it is a failed fetch of that URL,
// never a page with empty fields, and is not retried.
func TestNotModifiedWithoutValidatorIsAFailedFetch(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/a", "A", "/b", "B"))
	s.Handle("/a", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	s.Handle("/b", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	cfg := testConfig()
	// /b was indexed before but the site sent no validator for it: the
	// request is unconditional too.
	cfg.Previous = []runreport.KnownPage{{URL: s.URL + "/b"}}
	res := crawl(t, cfg, s.URL)
	for _, u := range []string{s.URL + "/a", s.URL + "/b"} {
		if _, ok := pageByURL(res, u); ok {
			t.Errorf("%s is a page after a 304 to an unconditional request", u)
		}
		if r := skipReason(res, u); r != "HTTP 304 to a request without validators" {
			t.Errorf("%s skipped with %q", u, r)
		}
	}
	if s.Count("/a") != 1 || s.Count("/b") != 1 || res.Stats.PagesUnchanged != 0 {
		t.Errorf("requests /a %d, /b %d (want 1 each); unchanged %d", s.Count("/a"), s.Count("/b"), res.Stats.PagesUnchanged)
	}
}

// The recrawl cannot read the links of a page that answered 304, so the
// pages of the previous run are queued: a site whose only links are on an
// unchanged home page keeps every page. Pages that no longer exist are
// dropped as on any crawl, and each 304 spends one request of the budget.
func TestUnchangedPagesKeepThePreviousPagesInReach(t *testing.T) {
	s := validatedSite(t, 6, 1000, false)
	first := crawl(t, testConfig(), s.URL)
	gone := s.URL + "/p5"
	s.Handle("/p5", http.NotFound)
	cfg := testConfig()
	cfg.Previous = previousOf(first)
	again := crawl(t, cfg, s.URL)
	if len(again.Pages) != 5 || again.Stats.PagesUnchanged != 5 {
		t.Fatalf("recrawl: pages %v, %d unchanged; skipped %v", pageURLs(again), again.Stats.PagesUnchanged, again.Skipped)
	}
	if r := skipReason(again, gone); r != "HTTP 404" {
		t.Errorf("%s skipped with %q", gone, r)
	}

	cfg.MaxPages = 4 // the home page, the sitemap (404), two more
	budget := crawl(t, cfg, s.URL)
	if len(budget.Pages) != 3 || budget.Stats.PagesUnchanged != 3 {
		t.Errorf("budget of 3: pages %v, %d unchanged", pageURLs(budget), budget.Stats.PagesUnchanged)
	}
}

// What a site sends as validators is kept only when it is safe to send
// back: a weak ETag is kept and echoed as it came; an ETag too long,
// with CR, LF, controls or non-ASCII, and a Last-Modified that does not
// parse or lies in the future are not kept, so the next crawl does not
// send them (and fetches the page in full).
func TestHostileValidators(t *testing.T) {
	s := testsite.New(t)
	type serve struct{ etag, lastModified, date string }
	future := time.Now().Add(48 * time.Hour).UTC().Format(http.TimeFormat)
	cases := map[string]serve{
		"/weak":      {etag: `W/"weak-1"`},
		"/long":      {etag: `"` + strings.Repeat("e", 60<<10) + `"`},
		"/nonascii":  {etag: "\"caf\xc3\xa9\""},
		"/unquoted":  {etag: "v1"},
		"/future":    {lastModified: future},
		"/badlm":     {lastModified: "yesterday"},
		"/afterdate": {lastModified: "Sun, 23 Aug 2026 12:00:01 GMT", date: "Sun, 23 Aug 2026 12:00:00 GMT"},
	}
	var links []string
	for path, c := range cases {
		links = append(links, path, path)
		s.Handle(path, func(w http.ResponseWriter, r *http.Request) {
			if c.etag != "" {
				w.Header()["Etag"] = []string{c.etag}
			}
			if c.lastModified != "" {
				w.Header().Set("Last-Modified", c.lastModified)
			}
			if c.date != "" {
				w.Header().Set("Date", c.date)
			}
			if inm := r.Header.Get("If-None-Match"); inm != "" && inm == c.etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, testsite.Page("T"+path[1:], marker))
		})
	}
	// net/http refuses a header value with a control character: the page is
	// a broken response, and the recrawl below still must not send it.
	links = append(links, "/control", "control")
	s.Handle("/control", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Etag"] = []string{"\"a\x01b\""}
		fmt.Fprint(w, testsite.Page("control", marker))
	})
	// 64 KiB of ETag takes the headers over the client's 64 KiB limit: the
	// response is broken, the page skipped, nothing kept.
	links = append(links, "/huge", "huge")
	s.Handle("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"`+strings.Repeat("h", 64<<10)+`"`)
		fmt.Fprint(w, testsite.Page("huge", marker))
	})
	s.HTML("/", testsite.Page("Home", marker, links...))
	first := crawl(t, testConfig(), s.URL)
	for path, c := range cases {
		p, ok := pageByURL(first, s.URL+path)
		if !ok {
			t.Errorf("%s not indexed: %q", path, skipReason(first, s.URL+path))
			continue
		}
		wantETag := ""
		if path == "/weak" {
			wantETag = c.etag
		}
		if p.ETag != wantETag || p.LastModified != "" {
			t.Errorf("%s kept ETag %.40q, Last-Modified %q", path, p.ETag, p.LastModified)
		}
	}
	for _, path := range []string{"/huge", "/control"} {
		if r := skipReason(first, s.URL+path); !strings.HasPrefix(r, "broken response") {
			t.Errorf("%s skipped with %q", path, r)
		}
	}
	before := len(s.Requests())
	cfg := testConfig()
	cfg.Previous = previousOf(first)
	// The results endpoint is the manager's and is checked there too, but
	// the crawler does not echo what it would not have kept either.
	cfg.Previous = append(cfg.Previous,
		runreport.KnownPage{URL: s.URL + "/control", ETag: "\"a\"\r\nX-Injected: 1"},
		runreport.KnownPage{URL: s.URL + "/badlm", LastModified: "yesterday\r\nX-Injected: 1"})
	again := crawl(t, cfg, s.URL)
	for _, r := range s.Requests()[before:] {
		inm, ims := r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")
		if r.Header.Get("X-Injected") != "" || r.Path == "/weak" && inm != `W/"weak-1"` || r.Path != "/weak" && (inm != "" || ims != "") {
			t.Errorf("recrawl of %s sent If-None-Match %.40q, If-Modified-Since %q, X-Injected %q", r.Path, inm, ims, r.Header.Get("X-Injected"))
		}
	}
	if p, _ := pageByURL(again, s.URL+"/weak"); !p.Unchanged || p.ETag != `W/"weak-1"` {
		t.Errorf("weak ETag page on recrawl: %+v", p)
	}
	if again.Stats.PagesUnchanged != 1 {
		t.Errorf("%d pages unchanged, want 1 (/weak)", again.Stats.PagesUnchanged)
	}
}

// A site that changes its validators on every request never answers 304:
// every page is fetched and indexed in full, with the new validators.
func TestValidatorsThatChangeEveryTime(t *testing.T) {
	s := testsite.New(t)
	n := 0
	s.Handle("/", func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, n))
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		if r.Header.Get("If-None-Match") == fmt.Sprintf(`"v%d"`, n) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, testsite.Page("Home", marker))
	})
	res := crawl(t, testConfig(), s.URL)
	for i := 2; i <= 3; i++ {
		cfg := testConfig()
		cfg.Previous = previousOf(res)
		res = crawl(t, cfg, s.URL)
		p, ok := pageByURL(res, s.URL+"/")
		if !ok || p.Unchanged || p.Title != "Home" || p.ETag != fmt.Sprintf(`"v%d"`, i) || res.Stats.PagesUnchanged != 0 {
			t.Errorf("crawl %d: %+v (found %v)", i, p, ok)
		}
	}
}

// A 304 has no body (RFC 9110 §15.4.5). A server that sends one anyway
// must not make the next page on the same connection read those bytes as
// its answer: the page after it is still fetched and indexed.
func TestNotModifiedWithABody(t *testing.T) {
	s := testsite.New(t)
	s.Validated("/", testsite.Page("Home", marker, "/a", "A", "/b", "B"), `"home"`, time.Time{})
	s.Validated("/b", testsite.Page("B", marker), `"b"`, time.Time{})
	s.Handle("/a", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != `"a"` {
			w.Header().Set("ETag", `"a"`)
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, testsite.Page("A", marker))
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		body := "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + testsite.Page("Smuggled", marker)
		fmt.Fprintf(rw, "HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		rw.Flush()
		// Hold the connection open, as a keep-alive server would.
		bufio.NewReader(conn).ReadString('\n')
	})
	first := crawl(t, testConfig(), s.URL)
	cfg := testConfig()
	cfg.Previous = previousOf(first)
	again := crawl(t, cfg, s.URL)
	a, _ := pageByURL(again, s.URL+"/a")
	b, _ := pageByURL(again, s.URL+"/b")
	if !a.Unchanged || !b.Unchanged || len(again.Pages) != 3 {
		t.Errorf("recrawl: /a %+v, /b %+v, pages %v, skipped %v", a, b, pageURLs(again), again.Skipped)
	}
	for _, p := range again.Pages {
		if p.Title == "Smuggled" {
			t.Errorf("the 304's body was read as a page: %+v", p)
		}
	}
}

// Validators belong to the URL that sent them. A page recorded under the
// canonical URL it names keeps none (the canonical URL never sent them);
// the recrawl, which cannot read the unchanged home page's links, asks for
// the canonical URL itself, unconditionally.
func TestValidatorsBelongToTheURLThatSentThem(t *testing.T) {
	s := testsite.New(t)
	s.Validated("/", testsite.Page("Home", marker, "/a", "A"), `"home"`, time.Time{})
	page := `<html><head><title>A</title><link rel="canonical" href="/c"></head><body>` + marker + `</body></html>`
	s.Validated("/a", page, `"a"`, time.Time{})
	s.Validated("/c", page, `"c"`, time.Time{})
	first := crawl(t, testConfig(), s.URL)
	c, ok := pageByURL(first, s.URL+"/c")
	if !ok || c.ETag != "" || c.LastModified != "" {
		t.Fatalf("page recorded under its canonical URL: %+v (found %v); pages %v", c, ok, pageURLs(first))
	}
	before := len(s.Requests())
	cfg := testConfig()
	cfg.Previous = previousOf(first)
	again := crawl(t, cfg, s.URL)
	for _, r := range s.Requests()[before:] {
		if r.Path != "/" && (r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "") {
			t.Errorf("%s sent If-None-Match %q, If-Modified-Since %q", r.Path, r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since"))
		}
	}
	if !sameSet(pageURLs(again), pageURLs(first)) {
		t.Errorf("recrawl pages %v, first crawl %v; skipped %v", pageURLs(again), pageURLs(first), again.Skipped)
	}

	// Now /c answers 304 before /a is reached (a sitemap lists both): /a,
	// which names /c canonical, is that unchanged page, not a page of its
	// own beside it.
	s.Handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%[1]s/c</loc></url><url><loc>%[1]s/a</loc></url></urlset>`, s.URL)
	})
	cfg.Previous = previousOf(again)
	third := crawl(t, cfg, s.URL)
	if c, _ := pageByURL(third, s.URL+"/c"); !c.Unchanged || len(third.Pages) != 2 {
		t.Errorf("third crawl: /c %+v, pages %v, skipped %v", c, pageURLs(third), third.Skipped)
	}
	if r := skipReason(third, s.URL+"/a"); r != "duplicate of "+s.URL+"/c (rel=canonical)" {
		t.Errorf("/a skipped with %q", r)
	}
}
