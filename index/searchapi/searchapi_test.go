package searchapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/sqlite"
)

var t0 = time.Date(2026, 8, 23, 10, 0, 0, 0, time.UTC)

// newHandler serves a SQLite store holding a.example (12 pages about
// otters) and b.example (one page, linked from a.example).
func newHandler(t testing.TB) *Handler {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := store.SiteDoc{Source: "ns/a", Site: "https://a.example:443", CrawledAt: t0,
		Links: []store.Link{{URL: "https://b.example/", Anchors: []string{"beaver lodge"}}}}
	for i := range 12 {
		a.Pages = append(a.Pages, store.Page{URL: fmt.Sprintf("https://a.example/%02d", i), StatusCode: 200,
			Title: fmt.Sprintf("Otter %d", i), Description: "About otters", FetchedAt: t0})
	}
	b := store.SiteDoc{Source: "ns/b", Site: "https://b.example:443", Pages: []store.Page{{
		URL: "https://b.example/", StatusCode: 200, Title: "Beavers", Lang: "en", H1: []string{"Dams"}, H2: []string{"Lodges"},
		Anchors: []string{"home"},
	}}}
	for _, d := range []store.SiteDoc{a, b} {
		if err := st.ReplaceSite(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return &Handler{Store: st}
}

func do(h http.Handler, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

// decode reads a JSON body strictly into v.
func decode(t *testing.T, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("body does not decode into %T: %v", v, err)
	}
}

func search(t *testing.T, h http.Handler, query string) SearchResponse {
	t.Helper()
	rec := do(h, "GET", "/api/v1/search?"+query)
	if rec.Code != http.StatusOK {
		t.Fatalf("search %s = %d %s", query, rec.Code, rec.Body)
	}
	var out SearchResponse
	decode(t, rec, &out)
	return out
}

func TestSearch(t *testing.T) {
	h := newHandler(t)
	got := search(t, h, "q=beaver")
	want := []SearchResult{{URL: "https://b.example/", Title: "Beavers", Description: "", Site: "https://b.example:443"}}
	if got.Query != "beaver" || fmt.Sprint(got.Results) != fmt.Sprint(want) {
		t.Errorf("search = %+v, want %+v", got, want)
	}
	for query, n := range map[string]int{"q=otter": store.DefaultLimit, "q=otter&limit=3": 3, "q=otter&limit=100": 12, "q=otter&limit=1": 1} {
		if got := search(t, h, query); len(got.Results) != n {
			t.Errorf("%s: %d results, want %d", query, len(got.Results), n)
		}
	}
	// Results come best first: "otter 3" matches the title twice over.
	if got := search(t, h, "q="+url.QueryEscape("otter 3")); len(got.Results) != 1 || got.Results[0].URL != "https://a.example/03" {
		t.Errorf("two-word search = %+v", got.Results)
	}
	if rec := do(h, "HEAD", "/api/v1/search?q=otter"); rec.Code != http.StatusOK {
		t.Errorf("HEAD = %d", rec.Code)
	}
}

func TestBadInputIs400WithAnError(t *testing.T) {
	h := newHandler(t)
	for _, query := range []string{
		"", "q=", "q=%20%20", "q=" + strings.Repeat("a", store.MaxQueryLength+1), "q=%ff%fe", "q=a%00b", "q=a&q=b",
		"q=otter&limit=abc", "q=otter&limit=-1", "q=otter&limit=0", "q=otter&limit=101", "q=otter&limit=1e3",
		"q=otter&limit=99999999999999999999", "q=otter&limit=", "q=otter&limit=%205", "q=otter&limit=1&limit=2",
		"q=%zz", "q=otter;limit=5", "q=%C2%A0",
	} {
		rec := do(h, "GET", "/api/v1/search?"+query)
		var e Error
		if rec.Code != http.StatusBadRequest {
			t.Errorf("search?%s = %d, want 400", query, rec.Code)
			continue
		}
		decode(t, rec, &e)
		if e.Error == "" {
			t.Errorf("search?%s: empty error message", query)
		}
	}
	// The longest allowed query is fine.
	search(t, h, "q="+strings.Repeat("a", store.MaxQueryLength))
}

// Whatever a user types is text, never query syntax.
func TestQuerySyntaxNeverFails(t *testing.T) {
	h := newHandler(t)
	for _, q := range []string{`"`, `""`, `*`, `OR`, `AND NOT`, `-`, `-otter`, `otter*`, `NEAR(otter beaver)`, `title:otter`,
		`'`, `\`, `(`, `)`, `{`, `^`, `otter OR`, `!otter`, `a & b | c`, `:*`, `%`, `?`, "🦦", "日本語"} {
		rec := do(h, "GET", "/api/v1/search?q="+url.QueryEscape(q))
		if rec.Code != http.StatusOK {
			t.Errorf("q=%q = %d %s", q, rec.Code, rec.Body)
		}
	}
	if got := search(t, h, "q="+url.QueryEscape(`"otter`)); len(got.Results) != store.DefaultLimit {
		t.Errorf(`q="otter found %d`, len(got.Results))
	}
}

func TestSites(t *testing.T) {
	rec := do(newHandler(t), "GET", "/api/v1/sites")
	var got SitesResponse
	decode(t, rec, &got)
	if len(got.Sites) != 2 || got.Sites[0].Site != "https://a.example:443" || got.Sites[0].Pages != 12 ||
		got.Sites[0].CrawledAt == nil || !got.Sites[0].CrawledAt.Equal(t0) || got.Sites[1].CrawledAt != nil {
		t.Errorf("sites = %+v", got.Sites)
	}
}

func TestPages(t *testing.T) {
	h := newHandler(t)
	for _, host := range []string{"b.example", "B.Example", "b.example."} {
		rec := do(h, "GET", "/api/v1/sites/"+host+"/pages")
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", host, rec.Code, rec.Body)
		}
		var got PagesResponse
		decode(t, rec, &got)
		want := Page{URL: "https://b.example/", Site: "https://b.example:443", StatusCode: 200, Title: "Beavers", Lang: "en",
			Headings:       Headings{H1: []string{"Dams"}, H2: []string{"Lodges"}, H3: []string{}},
			InboundAnchors: []string{"home", "beaver lodge"}}
		if got.Host != "b.example" || len(got.Pages) != 1 || fmt.Sprintf("%+v", got.Pages[0]) != fmt.Sprintf("%+v", want) {
			t.Errorf("%s: pages = %+v, want %+v", host, got, want)
		}
	}
	// Lists are [] rather than null, so clients need no special case.
	if body := do(h, "GET", "/api/v1/sites/b.example/pages").Body.String(); !strings.Contains(body, `"h3":[]`) {
		t.Errorf("empty list not rendered as []: %s", body)
	}
	for target, want := range map[string]int{
		"/api/v1/sites/unknown.example/pages":                  404,
		"/api/v1/sites/a_b.example/pages":                      400,
		"/api/v1/sites/-a.example/pages":                       400,
		"/api/v1/sites/a..example/pages":                       400,
		"/api/v1/sites/a.example:443/pages":                    400,
		"/api/v1/sites/" + strings.Repeat("a", 254) + "/pages": 400,
		"/api/v1/sites//pages":                                 400,
		"/api/v1/sites/a/b/pages":                              400,
		"/api/v1/sites/a.example%2Fx/pages":                    400,
	} {
		rec := do(h, "GET", target)
		var e Error
		if rec.Code != want {
			t.Errorf("%s = %d, want %d", target, rec.Code, want)
			continue
		}
		decode(t, rec, &e)
		if e.Error == "" {
			t.Errorf("%s: empty error message", target)
		}
	}
}

func TestRouting(t *testing.T) {
	h := newHandler(t)
	for _, tc := range []struct {
		method, target string
		want           int
	}{
		{"GET", "/api/v1/search/?q=otter", 404},
		{"GET", "/api/v1//search?q=otter", 404},
		{"GET", "/api/v1/sites/", 404},
		{"GET", "/api/v1/sites/a.example", 404},
		{"GET", "/api/v1/sites/a.example/pages/", 404},
		{"GET", "/api/v2/search?q=otter", 404},
		{"GET", "/api/v1/", 404},
		{"POST", "/api/v1/search?q=otter", 405},
		{"DELETE", "/api/v1/sites", 405},
		{"PUT", "/api/v1/sites/a.example/pages", 405},
	} {
		rec := do(h, tc.method, tc.target)
		if rec.Code != tc.want || rec.Header().Get("Location") != "" || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s = %d %v, want %d with a JSON error and no redirect", tc.method, tc.target, rec.Code, rec.Header(), tc.want)
		}
	}
}

// failing is a backend that errors, panics or hangs.
type failing struct{ mode string }

func (f failing) fail(ctx context.Context) error {
	switch f.mode {
	case "panic":
		panic("boom")
	case "slow":
		<-ctx.Done()
		return fmt.Errorf("query: %w", ctx.Err())
	}
	return errors.New(`pq: relation "pages" does not exist at 10.0.0.5`)
}
func (f failing) Search(ctx context.Context, _ string, _ int) ([]store.Result, error) {
	return nil, f.fail(ctx)
}
func (f failing) Sites(ctx context.Context) ([]store.SiteInfo, error) { return nil, f.fail(ctx) }
func (f failing) Pages(ctx context.Context, _ string) ([]store.SitePage, error) {
	return nil, f.fail(ctx)
}

func TestBackendFailures(t *testing.T) {
	for mode, want := range map[string]int{"error": 500, "panic": 500, "slow": 503} {
		h := &Handler{Store: failing{mode}}
		for _, target := range []string{"/api/v1/search?q=x", "/api/v1/sites", "/api/v1/sites/x.example/pages"} {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil).WithContext(ctx))
			cancel()
			if rec.Code != want {
				t.Errorf("%s %s = %d, want %d", mode, target, rec.Code, want)
			}
			if strings.Contains(rec.Body.String(), "10.0.0.5") || strings.Contains(rec.Body.String(), "relation") {
				t.Errorf("%s %s leaks backend details: %s", mode, target, rec.Body)
			}
		}
	}
}

// FuzzSearch feeds arbitrary queries and limits: the answer is a 200 or a
// 400, never a 500 or a panic.
func FuzzSearch(f *testing.F) {
	h := newHandler(f)
	for _, seed := range []string{"otter", `"`, "*", "OR", "-", "NEAR(", "\x00", "\xff", "a:b", "日本"} {
		f.Add(seed, "10")
	}
	f.Add("otter", "-5")
	f.Add("otter", "1000000000000")
	f.Fuzz(func(t *testing.T, q, limit string) {
		target := "/api/v1/search?q=" + url.QueryEscape(q) + "&limit=" + url.QueryEscape(limit)
		if rec := do(h, "GET", target); rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Errorf("q=%q limit=%q = %d %s", q, limit, rec.Code, rec.Body)
		}
	})
}
