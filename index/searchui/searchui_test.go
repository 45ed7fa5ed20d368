package searchui

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/index/i18n"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/sqlite"
)

// hostile is what a hostile site puts in its title, description and
// headings: markup that must stay text.
const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`

// newStore is a real SQLite index, filled through ReplaceSite as the
// syncer fills it.
func newStore(t *testing.T, docs ...store.SiteDoc) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, d := range docs {
		if err := s.ReplaceSite(context.Background(), d); err != nil {
			t.Fatalf("ReplaceSite(%s): %v", d.Site, err)
		}
	}
	return s
}

// doc is a site whose pages have the titles given, each about word.
func doc(siteURL string, titles ...string) store.SiteDoc {
	d := store.SiteDoc{Source: "test/" + siteURL, Site: siteURL, CrawledAt: t0}
	for i, title := range titles {
		d.Pages = append(d.Pages, store.Page{URL: fmt.Sprintf("%s/%d.html", siteURL, i), StatusCode: 200, Title: title, Description: "About " + title, FetchedAt: t0})
	}
	return d
}

type response struct {
	status int
	header http.Header
	body   string
}

func serve(t *testing.T, h http.Handler, method, target string, header ...string) response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Result().Body)
	return response{rec.Code, rec.Result().Header, string(b)}
}

func get(t *testing.T, h http.Handler, target string, header ...string) response {
	t.Helper()
	return serve(t, h, http.MethodGet, target, header...)
}

// checkHTML checks what every answer carries: an HTML page of the status
// wanted, the security headers, and a style sheet the CSP allows by hash.
func checkHTML(t *testing.T, target string, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d\n%s", target, r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("%s: Content-Type %q", target, ct)
	}
	if r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: no X-Content-Type-Options: nosniff", target)
	}
	csp := r.header.Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'none';") || strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe") {
		t.Errorf("%s: Content-Security-Policy %q does not forbid scripts", target, csp)
	}
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(r.body)
	if m == nil {
		t.Fatalf("%s: no style sheet", target)
	}
	sum := sha256.Sum256([]byte(m[1]))
	if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, "style-src "+want) {
		t.Errorf("%s: the CSP does not allow the page's style sheet (%s)", target, want)
	}
	if strings.Contains(strings.ToLower(r.body), "<script") {
		t.Errorf("%s: the page has a script element", target)
	}
	if f := regexp.MustCompile(`<form[^>]*>`).FindAllString(r.body, -1); len(f) > 1 || len(f) == 1 && !strings.Contains(f[0], `method="get"`) {
		t.Errorf("%s: forms other than the GET search box: %q", target, f)
	}
}

// hrefs lists the href attributes of links of class-less <a> elements in
// the results list.
func resultLinks(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<div class="result-title"><a href="([^"]*)">`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// resultURLs lists the URLs shown under the results' titles.
func resultURLs(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<div class="url" dir="ltr">([^<]*)</div>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// onePage is whether a results page says it shows n results, with no page
// number and no pager.
func onePage(body string, n int) bool {
	return strings.Contains(body, `<span id="count">`+fmt.Sprintf(english.ResultCount, n)+`</span></p>`) && !strings.Contains(body, `class="pager"`)
}

func TestSearchPage(t *testing.T) {
	bakery := doc("https://bakery.example:443", "Sourdough guide", "Sourdough starter", "Sourdough loaves", "Rye sourdough", hostile+" sourdough")
	mill := doc("http://mill.example:8080", "Stone-ground flour for sourdough")
	h := &Handler{Store: newStore(t, bakery, mill)}

	r := get(t, h, "/")
	checkHTML(t, "/", r, http.StatusOK)
	for _, want := range []string{`<input type="search" id="q" name="q" value=""`, english.NoPageText, `<html lang="en">`, `href="/sites"`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/ does not contain %q", want)
		}
	}

	// Six matches fit one page: crowding leaves no place empty.
	r = get(t, h, "/?q=sourdough")
	checkHTML(t, "/?q=sourdough", r, http.StatusOK)
	links, shown := resultLinks(r.body), resultURLs(r.body)
	if len(links) != 6 || len(shown) != 6 {
		t.Fatalf("page 1 links %q and URLs %q, want all 6 results\n%s", links, shown, r.body)
	}
	// Each result shows its page's URL, not its site's address.
	wantShown := map[string]string{"http://mill.example:8080/0.html": "http://mill.example:8080/0.html"}
	for i := range 5 {
		wantShown[fmt.Sprintf("https://bakery.example:443/%d.html", i)] = fmt.Sprintf("bakery.example/%d.html", i)
	}
	for i, l := range links {
		if want, ok := wantShown[l]; !ok || shown[i] != want {
			t.Errorf("result %d links %q and shows %q; want an original URL shown as %q", i+1, l, shown[i], want)
		}
		delete(wantShown, l)
	}
	if !strings.Contains(r.body, `value="sourdough"`) || !onePage(r.body, 6) {
		t.Errorf("page 1 lacks the query or the count, or has a page number or a next link:\n%s", r.body)
	}
	if r := get(t, h, "/?q=sourdough&page=2"); r.status != http.StatusNotFound {
		t.Errorf("page 2 of 1: %d", r.status)
	}

	// Three matches that only one host gives: one page, all three.
	one := &Handler{Store: newStore(t, doc("https://bakery.example:443", "Rye bread", "Rye rolls", "Dark rye"), mill)}
	r = get(t, one, "/?q=rye")
	if got := resultLinks(r.body); len(got) != 3 || !onePage(r.body, 3) {
		t.Errorf("three results of one host: links %q, or no count of 3 on one page:\n%s", got, r.body)
	}

	// Thirteen matches: the mill's, ranked last, gets a place on page 1
	// (a host gets a third only when no other host's result is left).
	var titles []string
	for i := range 12 {
		titles = append(titles, fmt.Sprintf("Sourdough %d", i))
	}
	crowded := &Handler{Store: newStore(t, doc("https://bakery.example:443", titles...), mill)}
	r = get(t, crowded, "/?q=sourdough")
	if links := resultLinks(r.body); len(links) != PerPage || links[len(links)-1] != "http://mill.example:8080/0.html" {
		t.Errorf("page 1 of 13 results: links %q, want %d ending with the mill's", links, PerPage)
	}
	if !strings.Contains(r.body, fmt.Sprintf(english.ResultCount, 13)) || !strings.Contains(r.body, fmt.Sprintf(english.PageOf, 1, 2)) ||
		!strings.Contains(r.body, `href="/?page=2&amp;q=sourdough" rel="next"`) {
		t.Errorf("page 1 of 13 results lacks the count, the page number or the next link:\n%s", r.body)
	}
	// Every page together holds every result exactly once.
	seen := map[string]bool{}
	for page := 1; page <= 2; page++ {
		r := get(t, crowded, fmt.Sprintf("/?q=sourdough&page=%d", page))
		checkHTML(t, "page", r, http.StatusOK)
		for _, l := range resultLinks(r.body) {
			if seen[l] {
				t.Errorf("%s on two pages", l)
			}
			seen[l] = true
		}
	}
	if len(seen) != 13 {
		t.Errorf("the two pages hold %d results, want 13", len(seen))
	}

	// A hostile title stays text.
	r = get(t, h, "/?q=alert+sourdough")
	if !strings.Contains(r.body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") || strings.Contains(r.body, "<img") {
		t.Errorf("a hostile title is not escaped:\n%s", r.body)
	}

	r = get(t, h, "/?q=croissant")
	checkHTML(t, "no results", r, http.StatusOK)
	if !strings.Contains(r.body, `<p id="no-results">`+fmt.Sprintf(english.NoResults, "croissant")) {
		t.Errorf("no 'no results' for croissant:\n%s", r.body)
	}
	r = get(t, h, "/?q=%3Cb%3Ebold%3C%2Fb%3E")
	if strings.Contains(r.body, "<b>bold") || !strings.Contains(r.body, "&lt;b&gt;bold") {
		t.Errorf("the query is not escaped where it is echoed:\n%s", r.body)
	}
}

// Bad input gets a 400 HTML page that says what is wrong; the same input
// gets a 400 from the JSON API too.
func TestSearchPageBadInput(t *testing.T) {
	h := &Handler{Store: newStore(t, doc("https://bakery.example:443", "Sourdough guide"))}
	for target, want := range map[string]string{
		"/?q=":    english.ErrQueryMissing,
		"/?q=+++": english.ErrQueryMissing,
		"/?q=" + strings.Repeat("a", store.MaxQueryLength+1): fmt.Sprintf(english.ErrQueryTooLong, store.MaxQueryLength),
		"/?q=%ff%fe":          english.ErrQueryNotText,
		"/?q=a%00b":           english.ErrQueryNotText,
		"/?q=a&q=b":           fmt.Sprintf(english.ErrRepeated, "q"),
		"/?q=%zz":             english.ErrMalformed,
		"/?q=bread&page=0":    fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=-1":   fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=+1":   fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=01":   fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=1e3":  fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=1.5":  fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=":     fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=1001": fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=99999999999999999999999999": fmt.Sprintf(english.ErrBadPage, MaxPage),
		"/?q=bread&page=1&page=2":                   fmt.Sprintf(english.ErrRepeated, "page"),
		"/sites?page=x":                             fmt.Sprintf(english.ErrBadPage, MaxPage),
	} {
		r := get(t, h, target)
		checkHTML(t, target, r, http.StatusBadRequest)
		if !strings.Contains(r.body, `role="alert">`+esc(want)+`</p>`) {
			t.Errorf("%s does not say %q:\n%s", target, want, r.body)
		}
	}
	// A page past the last is not there.
	r := get(t, h, "/?q=sourdough&page=2")
	checkHTML(t, "page 2 of 1", r, http.StatusNotFound)
	if !strings.Contains(r.body, esc(fmt.Sprintf(english.ErrNoSuchPage, 2, 1))) {
		t.Errorf("page 2 of 1 does not say so:\n%s", r.body)
	}
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// reader is a backend that answers what a test needs: rows no crawl could
// write (a damaged or hostile row) and failures.
type reader struct {
	results []store.Result
	sites   []store.SiteInfo
	pages   []store.SitePage
	err     error
}

func (r *reader) Search(context.Context, string, int) ([]store.Result, error) {
	return r.results, r.err
}
func (r *reader) Sites(context.Context) ([]store.SiteInfo, error)         { return r.sites, r.err }
func (r *reader) Pages(context.Context, string) ([]store.SitePage, error) { return r.pages, r.err }

// A result whose URL is not http(s) is never a link, whatever its case or
// disguise, and its title is still shown.
func TestOnlyWebAddressesBecomeLinks(t *testing.T) {
	bad := []string{"javascript:alert(1)", "JAVASCRIPT:alert(1)", " javascript:alert(1)", "data:text/html,hi", "//evil.example/", "vbscript:x"}
	var res []store.Result
	for i, u := range bad {
		res = append(res, store.Result{URL: u, Title: fmt.Sprintf("evil%d", i), Site: fmt.Sprintf("https://s%d.example:443", i)})
	}
	res = append(res, store.Result{URL: "https://good.example/", Title: "good", Site: "https://good.example:443"})
	h := &Handler{Store: &reader{results: res, pages: []store.SitePage{{Site: "x", Page: store.Page{URL: "javascript:alert(2)", Title: "evil page"}}}}}
	r := get(t, h, "/?q=evil")
	checkHTML(t, "/?q=evil", r, http.StatusOK)
	if got := resultLinks(r.body); len(got) != 1 || got[0] != "https://good.example/" {
		t.Errorf("result links %q, want only the https one", got)
	}
	for i := range bad {
		if !strings.Contains(r.body, fmt.Sprintf("<span>evil%d</span>", i)) {
			t.Errorf("evil%d is not shown as text", i)
		}
	}
	if regexp.MustCompile(`href="\s*(?i:javascript|data|vbscript|//)`).MatchString(r.body) {
		t.Errorf("an unsafe link made it onto the page:\n%s", r.body)
	}
	r = get(t, h, "/sites/x.example")
	checkHTML(t, "/sites/x.example", r, http.StatusOK)
	if strings.Contains(r.body, `href="javascript`) || !strings.Contains(r.body, "javascript:alert(2) <small>") {
		t.Errorf("a stored javascript: page URL became a link:\n%s", r.body)
	}
}

func TestCappedResultsSaySo(t *testing.T) {
	var docs []store.SiteDoc
	for s := range 6 {
		var titles []string
		for i := range 20 {
			titles = append(titles, fmt.Sprintf("Harbour page %d", i))
		}
		docs = append(docs, doc(fmt.Sprintf("https://site%d.example:443", s), titles...))
	}
	h := &Handler{Store: newStore(t, docs...)}
	r := get(t, h, "/?q=harbour")
	checkHTML(t, "capped", r, http.StatusOK)
	if !strings.Contains(r.body, fmt.Sprintf(english.Capped, store.MaxLimit)) || !strings.Contains(r.body, fmt.Sprintf(english.PageOf, 1, 10)) {
		t.Errorf("120 matches: no word that only the best %d are paged over:\n%s", store.MaxLimit, r.body)
	}
	if r := get(t, h, "/?q=harbour+page+7"); strings.Contains(r.body, `id="capped"`) {
		t.Error("6 matches are said to be capped")
	}
}

func TestLanguage(t *testing.T) {
	h := &Handler{Store: newStore(t, doc("https://bakery.example:443", "Sourdough guide"))}
	for _, tx := range languages {
		for _, target := range []string{"/", "/?q=sourdough", "/?q=", "/sites", "/sites/bakery.example", "/nope"} {
			r := get(t, h, target+sep(target)+"lang="+tx.Tag)
			if r.header.Get("Content-Language") != tx.Tag || !strings.Contains(r.body, `<html lang="`+tx.Tag+`">`) {
				t.Errorf("%s in %s: Content-Language %q", target, tx.Tag, r.header.Get("Content-Language"))
			}
			if target == "/" && !strings.Contains(r.body, esc(tx.NoPageText)) {
				t.Errorf("/ in %s does not say the index keeps no page text", tx.Tag)
			}
			// The choice is kept when the visitor searches or moves on.
			if target == "/" && !strings.Contains(r.body, `<input type="hidden" name="lang" value="`+tx.Tag+`">`) {
				t.Errorf("/ in %s: the form forgets the language", tx.Tag)
			}
			for _, l := range i18n.Languages {
				if !strings.Contains(r.body, `hreflang="`+l.Tag+`"`) {
					t.Errorf("%s in %s does not link to %s", target, tx.Tag, l.Tag)
				}
			}
		}
	}
	r := get(t, h, "/?q=sourdough&lang=nl")
	if !strings.Contains(r.body, `href="/?lang=it&amp;q=sourdough"`) || !strings.Contains(r.body, fmt.Sprintf(dutch.ResultCount, 1)) {
		t.Errorf("Dutch results: no Italian link keeping the query or no Dutch count:\n%s", r.body)
	}
	r = get(t, h, "/", "Accept-Language", "bg-BG,bg;q=0.9")
	if !strings.Contains(r.body, bulgarian.SearchButton) || strings.Contains(r.body, `name="lang"`) || r.header.Get("Vary") != "Accept-Language" {
		t.Errorf("Accept-Language bg: not Bulgarian, or a chosen language that was not chosen")
	}
	// A bad ?lang= falls back, and nothing of it is echoed.
	r = get(t, h, "/?lang=%22%3E%3Cmarquee%3E&q=sourdough", "Accept-Language", "it")
	if !strings.Contains(r.body, `<html lang="it">`) || strings.Contains(r.body, "marquee") {
		t.Errorf("a bad ?lang= is echoed or wins over Accept-Language:\n%s", r.body)
	}
}

func sep(target string) string {
	if strings.Contains(target, "?") {
		return "&"
	}
	return "?"
}

func TestTextsAreComplete(t *testing.T) {
	for _, err := range i18n.CheckTranslations(languages) {
		t.Error(err)
	}
	for _, tx := range languages[1:] {
		if tx.NoPageText == english.NoPageText || tx.ErrQueryMissing == english.ErrQueryMissing {
			t.Errorf("%s: not translated", tx.Tag)
		}
	}
}

// The pages change nothing: any method but GET and HEAD gets a 405.
func TestReadOnly(t *testing.T) {
	h := &Handler{Store: newStore(t, doc("https://bakery.example:443", "Sourdough guide"))}
	for _, target := range []string{"/", "/?q=sourdough", "/sites", "/sites/bakery.example"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, "PURGE"} {
			r := serve(t, h, m, target)
			checkHTML(t, m+" "+target, r, http.StatusMethodNotAllowed)
			if r.header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q", m, target, r.header.Get("Allow"))
			}
		}
		if r := serve(t, h, http.MethodHead, target); r.status != http.StatusOK {
			t.Errorf("HEAD %s: %d", target, r.status)
		}
	}
}

func TestBackendFailures(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
		msg    string
	}{
		{store.ErrUnavailable, http.StatusServiceUnavailable, english.ErrUnavailable},
		{context.DeadlineExceeded, http.StatusServiceUnavailable, english.ErrUnavailable},
		{errors.New(`pq: relation "pages" at db.internal:5432 does not exist`), http.StatusInternalServerError, english.ErrInternal},
	} {
		h := &Handler{Store: &reader{err: tt.err}}
		for _, target := range []string{"/?q=bread", "/sites", "/sites/bakery.example"} {
			r := get(t, h, target)
			checkHTML(t, target, r, tt.status)
			if !strings.Contains(r.body, esc(tt.msg)) || strings.Contains(r.body, "db.internal") {
				t.Errorf("%s with %v: does not say %q, or shows the backend's error:\n%s", target, tt.err, tt.msg, r.body)
			}
			if tt.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
				t.Errorf("%s: 503 without Retry-After", target)
			}
		}
	}
}
