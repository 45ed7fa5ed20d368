package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/politeness"
	"github.com/lohisoft/crawl-operator/crawler/robots"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

const marker = "BODY-TEXT-MARKER-7f3a9c"

// testConfig is a fast config for loopback sites.
func testConfig() Config {
	return Config{
		Delay:   5 * time.Millisecond,
		Fetch:   fetch.Config{Dialer: fetch.Dialer{AllowPrivate: true}, TotalTimeout: 5 * time.Second},
		Backoff: politeness.Backoff{Base: 20 * time.Millisecond, Max: time.Second},
		Timeout: 60 * time.Second,
	}
}

func crawl(t *testing.T, cfg Config, start string) runreport.Crawl {
	t.Helper()
	res, err := Crawl(context.Background(), cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func pageURLs(res runreport.Crawl) []string {
	var out []string
	for _, p := range res.Pages {
		out = append(out, p.URL)
	}
	return out
}

func skipReason(res runreport.Crawl, url string) string {
	for _, s := range res.Skipped {
		if s.URL == url {
			return s.Reason
		}
	}
	return ""
}

// The "done when" test: a local site crawled with --delay 200ms never has
// two requests in flight, never starts two less than 200 ms apart, never
// fetches a disallowed URL, and spends exactly the budget: 20 requests, the
// site's /sitemap.xml (here a 404) and 19 pages.
func TestPolitenessBudgetAndRobots(t *testing.T) {
	s := testsite.New(t)
	s.Robots("User-agent: *\nDisallow: /private/\n\nUser-agent: OtherBot\nDisallow: /\n")
	var links []string
	for i := 0; i < 25; i++ {
		links = append(links, fmt.Sprintf("/p%d", i), fmt.Sprintf("Page %d", i))
		links = append(links, fmt.Sprintf("/private/%d", i), "secret")
	}
	s.HTML("/", testsite.Page("Home", marker, links...))
	for i := 0; i < 25; i++ {
		s.HTML(fmt.Sprintf("/p%d", i), testsite.Page(fmt.Sprintf("P%d", i), marker, "/", "home", fmt.Sprintf("/p%d", (i+1)%25), "next"))
		s.HTML(fmt.Sprintf("/private/%d", i), testsite.Page("private", marker))
	}
	cfg := testConfig()
	cfg.Delay = 200 * time.Millisecond
	res := crawl(t, cfg, s.URL+"/")

	reqs := s.Requests()
	if s.MaxInFlight() != 1 {
		t.Errorf("max requests in flight = %d, want 1", s.MaxInFlight())
	}
	slices.SortFunc(reqs, func(a, b testsite.Request) int { return a.Start.Compare(b.Start) })
	for i := 1; i < len(reqs); i++ {
		if gap := reqs[i].Start.Sub(reqs[i-1].Start); gap < 200*time.Millisecond {
			t.Errorf("requests %s and %s started %v apart", reqs[i-1].Path, reqs[i].Path, gap)
		}
	}
	for _, r := range reqs {
		if strings.HasPrefix(r.Path, "/private/") {
			t.Errorf("disallowed URL fetched: %s", r.Path)
		}
		if ua := r.Header.Get("User-Agent"); ua != DefaultUserAgent {
			t.Errorf("%s sent with User-Agent %q", r.Path, ua)
		}
	}
	if n := s.Count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times", n)
	}
	if n := s.PageRequests(); n != runreport.MaxPages {
		t.Errorf("page requests = %d, want exactly %d", n, runreport.MaxPages)
	}
	if len(res.Pages) != runreport.MaxPages-1 {
		t.Errorf("pages = %d, want %d", len(res.Pages), runreport.MaxPages-1)
	}
	if n := s.Count("/sitemap.xml"); n != 1 || skipReason(res, s.URL+"/sitemap.xml") != "sitemap: HTTP 404" {
		t.Errorf("sitemap requested %d times, skipped with %q", n, skipReason(res, s.URL+"/sitemap.xml"))
	}
	if res.Robots.Status != 200 || res.Robots.FetchedAt.IsZero() {
		t.Errorf("robots %+v", res.Robots)
	}
	if res.Site != s.URL || res.UserAgent != DefaultUserAgent {
		t.Errorf("site %q ua %q", res.Site, res.UserAgent)
	}
	if r := skipReason(res, s.URL+"/private/0"); r != "disallowed by robots.txt" {
		t.Errorf("private page skip reason %q", r)
	}
	budgetSkips := 0
	for _, sk := range res.Skipped {
		if sk.Reason == "crawl budget exhausted" {
			budgetSkips++
		}
	}
	if want := 25 + 1 - (runreport.MaxPages - 1); budgetSkips != want {
		t.Errorf("budget skips = %d, want %d", budgetSkips, want)
	}
	if out, _ := json.Marshal(res); bytes.Contains(out, []byte(marker)) {
		t.Error("body text in the result")
	}
}

// Every allowed page is fetched when the site fits in the budget; fragments
// and duplicate spellings collapse to one request.
func TestFetchesEveryAllowedPageOnce(t *testing.T) {
	s := testsite.New(t)
	s.Robots("User-agent: LohiSoftBot\nDisallow: /no\nAllow: /no/but-yes\n")
	s.HTML("/", testsite.Page("Home", marker, "/a#one", "A1", "/a#two", "A2", "/%61", "A3", "http://"+s.Listener.Addr().String()+"/a", "A4", "/b", "B", "/no", "N", "/no/but-yes", "Y", "/missing", "M"))
	s.HTML("/a", testsite.Page("A", marker, "/c?x=1", "C"))
	s.HTML("/b", testsite.Page("B", marker, "/a", "A again"))
	s.HTML("/c", testsite.Page("C", marker))
	s.HTML("/no/but-yes", testsite.Page("Y", marker))
	res := crawl(t, testConfig(), s.URL)
	want := []string{s.URL + "/", s.URL + "/a", s.URL + "/b", s.URL + "/no/but-yes", s.URL + "/c?x=1"}
	if got := pageURLs(res); !slices.Equal(got, want) {
		t.Errorf("pages %v, want %v (breadth-first)", got, want)
	}
	if n := s.Count("/a"); n != 1 {
		t.Errorf("/a fetched %d times", n)
	}
	if n := s.Count("/no"); n != 0 {
		t.Error("disallowed /no fetched")
	}
	if r := skipReason(res, s.URL+"/missing"); r != "HTTP 404" {
		t.Errorf("404 reason %q", r)
	}
}

func TestInboundAnchors(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", `<html><body><a href="/x">Alpha</a> <a href="/x"><img alt="Logo X"></a> <a href="/old">Old name</a> <a href="/x">Alpha</a></body></html>`)
	s.HTML("/y", `<a href="/x">Beta</a>`)
	s.HTML("/x", `<title>X</title><a href="/y">Why</a>`)
	s.Redirect("/old", "/x", http.StatusMovedPermanently)
	res := crawl(t, testConfig(), s.URL)
	var x *runreport.Page
	for i := range res.Pages {
		if res.Pages[i].URL == s.URL+"/x" {
			x = &res.Pages[i]
		}
		if res.Pages[i].InboundAnchors == nil {
			t.Errorf("%s: nil inboundAnchors", res.Pages[i].URL)
		}
	}
	if x == nil {
		t.Fatalf("no /x page: %v", pageURLs(res))
	}
	want := []string{"Alpha", "Logo X", "Beta", "Old name"}
	got := slices.Clone(x.InboundAnchors)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("inbound anchors of /x = %q, want %q", x.InboundAnchors, want)
	}
	if n := s.Count("/x"); n != 1 {
		t.Errorf("/x fetched %d times", n)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	s := testsite.New(t)
	var mu sync.Mutex
	calls := 0
	s.Handle("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, testsite.Page("OK", marker))
	})
	res := crawl(t, testConfig(), s.URL)
	reqs := pathRequests(s, "/")
	if len(reqs) != 2 {
		t.Fatalf("/ requested %d times, want 2", len(reqs))
	}
	if gap := reqs[1].Start.Sub(reqs[0].Start); gap < time.Second {
		t.Errorf("retried after %v, Retry-After asked 1s", gap)
	}
	if len(res.Pages) != 1 || res.RetryAfter != "" {
		t.Errorf("pages %v retryAfter %q", pageURLs(res), res.RetryAfter)
	}
}

func pathRequests(s *testsite.Site, path string) []testsite.Request {
	var out []testsite.Request
	for _, r := range s.Requests() {
		if r.Path == path {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b testsite.Request) int { return a.Start.Compare(b.Start) })
	return out
}

func TestRetryAfterHTTPDate(t *testing.T) {
	s := testsite.New(t)
	var mu sync.Mutex
	var until time.Time
	s.Handle("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if until.IsZero() {
			// HTTP-dates have one-second resolution: the bot must wait
			// until that second, however much of it has passed.
			until = time.Now().Add(2 * time.Second).Truncate(time.Second)
			w.Header().Set("Retry-After", until.UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, testsite.Page("OK", marker))
	})
	res := crawl(t, testConfig(), s.URL)
	reqs := pathRequests(s, "/")
	if len(reqs) != 2 {
		t.Fatalf("/ requested %d times, want 2", len(reqs))
	}
	if reqs[1].Start.Before(until) {
		t.Errorf("retried at %v, before Retry-After date %v", reqs[1].Start, until)
	}
	if len(res.Pages) != 1 {
		t.Errorf("pages %v", pageURLs(res))
	}
}

func TestServerErrorsBackOffExponentiallyThenGiveUp(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/broken", "broken", "/later", "later"))
	s.Handle("/broken", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "oops", http.StatusInternalServerError)
	})
	s.HTML("/later", testsite.Page("Later", marker))
	cfg := testConfig()
	cfg.Backoff = politeness.Backoff{Base: 100 * time.Millisecond, Max: 10 * time.Second}
	before := time.Now()
	res := crawl(t, cfg, s.URL)
	reqs := pathRequests(s, "/broken")
	if len(reqs) != 3 {
		t.Fatalf("/broken requested %d times, want 3 attempts", len(reqs))
	}
	if g := reqs[1].Start.Sub(reqs[0].Start); g < 100*time.Millisecond {
		t.Errorf("first back-off %v < 100ms", g)
	}
	if g := reqs[2].Start.Sub(reqs[1].Start); g < 200*time.Millisecond {
		t.Errorf("second back-off %v < 200ms (not exponential)", g)
	}
	if s.Count("/later") != 0 {
		t.Error("crawl went on after giving up on the site")
	}
	ra, err := time.Parse(time.RFC3339, res.RetryAfter)
	if err != nil {
		t.Fatalf("retryAfter %q: %v", res.RetryAfter, err)
	}
	if ra.Before(before.Truncate(time.Second)) {
		t.Errorf("retryAfter %v is in the past", ra)
	}
	if r := skipReason(res, s.URL+"/broken"); !strings.Contains(r, "HTTP 500") {
		t.Errorf("skip reason %q", r)
	}
	if len(res.Pages) != 1 {
		t.Errorf("pages %v", pageURLs(res))
	}
}

func TestLongRetryAfterEndsCrawlWithRetryAfter(t *testing.T) {
	s := testsite.New(t)
	s.Handle("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	start := time.Now()
	res := crawl(t, testConfig(), s.URL)
	if n := s.Count("/"); n != 1 {
		t.Errorf("/ requested %d times, want 1", n)
	}
	ra, err := time.Parse(time.RFC3339, res.RetryAfter)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Before(start.Add(3599 * time.Second)) {
		t.Errorf("retryAfter %v earlier than the server asked", ra)
	}
}

func TestRobotsStatusHandling(t *testing.T) {
	cases := []struct {
		name       string
		robots     http.HandlerFunc
		wantStatus int
		wantPages  int
		wantRetry  bool
		robotsReqs int
	}{
		{"404 allows all", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, 404, 2, false, 1},
		{"401 allows all", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }, 401, 2, false, 1},
		{"503 disallows all", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }, 503, 0, true, 3},
		{"500 disallows all", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, 500, 0, true, 3},
		{"429 disallows all", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }, 429, 0, true, 3},
		{"unreachable disallows all", func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		}, 0, 0, true, 3},
		{"redirect followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/real-robots.txt", http.StatusMovedPermanently)
		}, 200, 1, false, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testsite.New(t)
			s.Handle("/robots.txt", c.robots)
			s.Handle("/real-robots.txt", func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, "User-agent: *\nDisallow: /b\n")
			})
			s.HTML("/", testsite.Page("Home", marker, "/b", "B"))
			s.HTML("/b", testsite.Page("B", marker))
			res := crawl(t, testConfig(), s.URL)
			if res.Robots.Status != c.wantStatus {
				t.Errorf("robots status %d, want %d", res.Robots.Status, c.wantStatus)
			}
			if len(res.Pages) != c.wantPages || s.PageRequests()-s.Count("/real-robots.txt")-s.Count("/sitemap.xml") != c.wantPages {
				t.Errorf("pages %v, page requests %d, want %d", pageURLs(res), s.PageRequests(), c.wantPages)
			}
			if sitemaps := s.Count("/sitemap.xml"); (sitemaps == 1) != (c.wantPages > 0) {
				t.Errorf("sitemap requested %d times", sitemaps)
			}
			if (res.RetryAfter != "") != c.wantRetry {
				t.Errorf("retryAfter %q", res.RetryAfter)
			}
			if n := s.Count("/robots.txt"); n != c.robotsReqs {
				t.Errorf("robots.txt requested %d times, want %d", n, c.robotsReqs)
			}
			if c.wantPages == 0 && skipReason(res, s.URL+"/") == "" {
				t.Errorf("start URL not reported as skipped: %+v", res.Skipped)
			}
		})
	}
}

func TestRedirects(t *testing.T) {
	other := testsite.New(t)
	other.HTML("/", testsite.Page("Elsewhere", marker))
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/loop-a", "loop", "/self", "self", "/away", "away", "/moved", "moved", "/chain0", "chain"))
	s.Redirect("/loop-a", "/loop-b", http.StatusFound)
	s.Redirect("/loop-b", "/loop-a", http.StatusFound)
	s.Redirect("/self", "/self", http.StatusFound)
	s.Redirect("/away", other.URL+"/", http.StatusFound)
	s.Redirect("/moved", "/new-home", http.StatusMovedPermanently)
	s.HTML("/new-home", testsite.Page("New", marker))
	for i := 0; i < 7; i++ {
		s.Redirect(fmt.Sprintf("/chain%d", i), fmt.Sprintf("/chain%d", i+1), http.StatusFound)
	}
	res := crawl(t, testConfig(), s.URL)
	if other.PageRequests()+other.Count("/robots.txt") != 0 {
		t.Error("off-site redirect was followed")
	}
	if n := s.Count("/loop-a") + s.Count("/loop-b"); n != 2 {
		t.Errorf("redirect loop took %d requests, want 2", n)
	}
	if n := s.Count("/self"); n != 1 {
		t.Errorf("self redirect requested %d times", n)
	}
	if !slices.Contains(pageURLs(res), s.URL+"/new-home") {
		t.Errorf("redirect target not indexed: %v", pageURLs(res))
	}
	if r := skipReason(res, s.URL+"/moved"); r != "HTTP 301: redirects to "+s.URL+"/new-home" {
		t.Errorf("redirect source reason %q", r)
	}
	if r := skipReason(res, s.URL+"/away"); !strings.Contains(r, "off-site") {
		t.Errorf("off-site redirect reason %q", r)
	}
	if n := s.Count("/chain" + fmt.Sprint(MaxRedirects+1)); n != 0 {
		t.Errorf("followed more than %d redirects", MaxRedirects)
	}
	if r := skipReason(res, s.URL+"/chain"+fmt.Sprint(MaxRedirects)); r != "too many redirects" {
		t.Errorf("chain reason %q, skipped %+v", r, res.Skipped)
	}
	// Every request was a page request within budget.
	if s.PageRequests() > runreport.MaxPages {
		t.Errorf("page requests %d over budget", s.PageRequests())
	}
}

func TestRedirectsCountAgainstBudget(t *testing.T) {
	s := testsite.New(t)
	s.Redirect("/", "/home", http.StatusMovedPermanently)
	s.HTML("/home", testsite.Page("Home", marker, "/p1", "1", "/p2", "2", "/p3", "3"))
	for i := 1; i <= 3; i++ {
		s.HTML(fmt.Sprintf("/p%d", i), testsite.Page("P", marker))
	}
	cfg := testConfig()
	cfg.MaxPages = 3
	res := crawl(t, cfg, s.URL)
	if n := s.PageRequests(); n != 3 {
		t.Errorf("page requests %d, want 3 (redirect counted)", n)
	}
	if got := pageURLs(res); !slices.Equal(got, []string{s.URL + "/home", s.URL + "/p1"}) {
		t.Errorf("pages %v", got)
	}
	if s.Count("/robots.txt") != 1 {
		t.Error("robots.txt not fetched once")
	}
}

func TestOffSiteLinksRecordedNotFetched(t *testing.T) {
	other := testsite.New(t)
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, other.URL+"/page", "Friend site", other.URL+"/page#x", "Friend again", "https://"+s.Listener.Addr().String()+"/", "https self"))
	res := crawl(t, testConfig(), s.URL)
	if n := len(other.Requests()); n != 0 {
		t.Errorf("off-site server got %d requests", n)
	}
	if len(res.OffSiteLinks) != 2 {
		t.Fatalf("off-site links %+v", res.OffSiteLinks)
	}
	if l := res.OffSiteLinks[0]; l.URL != other.URL+"/page" || !slices.Equal(l.Anchors, []string{"Friend site", "Friend again"}) {
		t.Errorf("off-site link %+v", l)
	}
}

func TestNoindexNofollow(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/noindex", "NI", "/nofollow", "NF", "/header-noindex", "HNI", "/header-nofollow", "HNF", "/other-bot", "OB")+`<a href="/rel-nofollow" rel="nofollow">RN</a>`)
	s.HTML("/noindex", `<meta name="robots" content="noindex"><title>secret title</title><a href="/from-noindex">NI link text</a>`)
	s.HTML("/from-noindex", testsite.Page("From noindex", marker))
	s.HTML("/nofollow", `<meta name="LohiSoftBot" content="nofollow"><title>NF</title><a href="/never1">x</a>`)
	s.Handle("/header-noindex", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Robots-Tag", "noindex")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, testsite.Page("HNI", marker))
	})
	s.Handle("/header-nofollow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Robots-Tag", "lohisoftbot: nofollow")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, testsite.Page("HNF", marker, "/never2", "x"))
	})
	s.Handle("/other-bot", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Robots-Tag", "otherbot: noindex, nofollow")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<meta name="otherbot" content="noindex"><title>OB</title><a href="/ok">ok</a>`)
	})
	s.HTML("/ok", "<title>ok</title>")
	s.HTML("/rel-nofollow", "<title>RN</title>")
	res := crawl(t, testConfig(), s.URL)
	got := pageURLs(res)
	for _, p := range []string{"/noindex", "/header-noindex"} {
		if slices.Contains(got, s.URL+p) {
			t.Errorf("noindex page %s stored", p)
		}
		if s.Count(p) != 1 {
			t.Errorf("noindex page %s not fetched once", p)
		}
		if skipReason(res, s.URL+p) != "noindex" {
			t.Errorf("%s skip reason %q", p, skipReason(res, s.URL+p))
		}
	}
	for _, p := range []string{"/from-noindex", "/nofollow", "/header-nofollow", "/other-bot", "/ok"} {
		if !slices.Contains(got, s.URL+p) {
			t.Errorf("%s not indexed", p)
		}
	}
	for _, p := range []string{"/never1", "/never2", "/rel-nofollow"} {
		if s.Count(p) != 0 {
			t.Errorf("nofollow link %s followed", p)
		}
	}
	out, _ := json.Marshal(res)
	for _, leak := range []string{"secret title", "NI link text"} {
		if bytes.Contains(out, []byte(leak)) {
			t.Errorf("text of a noindex page stored: %q", leak)
		}
	}
}

func TestUnauthorizedAndForbiddenNotRetried(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/login", "L", "/forbidden", "F", "/after", "A"))
	s.Handle("/login", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	s.Handle("/forbidden", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) })
	s.HTML("/after", "<title>after</title>")
	res := crawl(t, testConfig(), s.URL)
	for _, p := range []string{"/login", "/forbidden"} {
		if n := s.Count(p); n != 1 {
			t.Errorf("%s requested %d times, want 1", p, n)
		}
		if r := skipReason(res, s.URL+p); !strings.Contains(r, "not bypassed") {
			t.Errorf("%s reason %q", p, r)
		}
	}
	for _, r := range s.Requests() {
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
			t.Errorf("%s sent credentials", r.Path)
		}
	}
	if !slices.Contains(pageURLs(res), s.URL+"/after") {
		t.Error("crawl stopped at a 401/403")
	}
}

func TestChallengeStopsSite(t *testing.T) {
	cases := map[string]http.HandlerFunc{
		"cf-mitigated header": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cf-Mitigated", "challenge")
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "<html></html>")
		},
		"just a moment 503": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Server", "cloudflare")
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `<html><head><title>Just a moment...</title></head><body><script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1"></script></body></html>`)
		},
		"captcha 429": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `<div class="g-recaptcha" data-sitekey="x"></div>`)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			s := testsite.New(t)
			s.HTML("/", testsite.Page("Home", marker, "/a", "A", "/b", "B"))
			s.Handle("/a", h)
			s.HTML("/b", "<title>b</title>")
			start := time.Now()
			res := crawl(t, testConfig(), s.URL)
			if n := s.Count("/a"); n != 1 {
				t.Errorf("challenge requested %d times, want 1", n)
			}
			if s.Count("/b") != 0 {
				t.Error("crawl went on after a challenge")
			}
			if r := skipReason(res, s.URL+"/a"); !strings.Contains(r, "challenge") {
				t.Errorf("reason %q", r)
			}
			ra, err := time.Parse(time.RFC3339, res.RetryAfter)
			if err != nil || ra.Before(start.Add(ChallengeRetryAfter-time.Minute)) {
				t.Errorf("retryAfter %q", res.RetryAfter)
			}
		})
	}
	// A 200 page with a reCAPTCHA contact form is not a wall.
	if isChallenge(200, http.Header{}, []byte(`<div class="g-recaptcha">`)) {
		t.Error("200 page taken for a challenge")
	}
	if isChallenge(403, http.Header{}, []byte("<h1>Forbidden</h1>")) {
		t.Error("plain 403 taken for a challenge")
	}
}

func TestNonHTMLAndBigPages(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/doc.pdf", "PDF", "/big", "Big", "/untyped", "U"))
	s.Handle("/doc.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(bytes.Repeat([]byte("%PDF"), 1000))
	})
	s.Handle("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>Big page</title><h1>Top</h1>")
		chunk := bytes.Repeat([]byte("<p>"+marker+"</p>"), 1000)
		for n := 0; n < 10<<20; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	s.Handle("/untyped", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		fmt.Fprint(w, "<!DOCTYPE html><html><title>Sniffed</title></html>")
	})
	res := crawl(t, testConfig(), s.URL)
	if r := skipReason(res, s.URL+"/doc.pdf"); r != "not HTML (application/pdf)" {
		t.Errorf("pdf reason %q", r)
	}
	var titles []string
	for _, p := range res.Pages {
		titles = append(titles, p.Title)
	}
	if !slices.Contains(titles, "Big page") || !slices.Contains(titles, "Sniffed") {
		t.Errorf("titles %q", titles)
	}
}

func TestWholeCrawlTimeout(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/drip", "drip", "/later", "later"))
	s.Handle("/drip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for i := 0; i < 200; i++ {
			if _, err := w.Write([]byte("<p>")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(50 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	s.HTML("/later", "<title>later</title>")
	cfg := testConfig()
	cfg.Timeout = 700 * time.Millisecond
	// The drip would take 10 s: if the timeout did not cut it, /drip would
	// be indexed and /later fetched.
	res := crawl(t, cfg, s.URL)
	if r := skipReason(res, s.URL+"/drip"); r != "crawl timeout" {
		t.Errorf("drip reason %q (skipped %+v)", r, res.Skipped)
	}
	if r := skipReason(res, s.URL+"/later"); r != "crawl timeout" {
		t.Errorf("later reason %q", r)
	}
	if len(res.Pages) != 1 {
		t.Errorf("pages %v", pageURLs(res))
	}
}

func TestInterruptedCrawl(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/a", "A"))
	s.Handle("/a", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // hangs until the client gives up
	})
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig()
	cfg.Progress = func(c runreport.Crawl) {
		if len(c.Pages) == 1 {
			go func() { time.Sleep(100 * time.Millisecond); cancel() }()
		}
	}
	res, err := Crawl(ctx, cfg, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if r := skipReason(res, s.URL+"/a"); r != "crawl interrupted" {
		t.Errorf("reason %q", r)
	}
	if len(res.Pages) != 1 {
		t.Errorf("pages %v", pageURLs(res))
	}
}

func TestAddressRules(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker))
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	dns := dnstest.Start(t, dnstest.Zone{
		A:    map[string][]string{"site.test": {"127.0.0.1"}},
		AAAA: map[string][]string{"v6.test": {"::1"}},
	})
	cfg := testConfig()
	cfg.Fetch.Dialer = fetch.Dialer{Resolver: dns.Resolver()}
	for host, want := range map[string]error{"site.test": fetch.ErrNonPublic, "v6.test": fetch.ErrNoIPv4, "nx.test": fetch.ErrNoIPv4, "127.0.0.1": fetch.ErrNonPublic} {
		res := crawl(t, cfg, "http://"+host+":"+port+"/")
		if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, want.Error()) {
			t.Errorf("%s: skipped %+v, want reason with %q", host, res.Skipped, want)
		}
		if res.Robots.Status != 0 || len(res.Pages) != 0 {
			t.Errorf("%s: %+v", host, res)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
	// The same name with AllowPrivate crawls: the refusal was the address rule.
	cfg.Fetch.Dialer.AllowPrivate = true
	res := crawl(t, cfg, "http://site.test:"+port+"/")
	if len(res.Pages) != 1 || res.Site != "http://site.test:"+port {
		t.Errorf("allow-private crawl: %+v", res)
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		start string
		max   int
	}{{"http://[::1]:8080/", 0}, {"ftp://example.com/", 0}, {"not a url", 0}, {"http://example.com/", 21}, {"http://example.com/", -1}} {
		_, err := Crawl(context.Background(), Config{MaxPages: c.max}, c.start)
		if !errors.Is(err, ErrBadInput) {
			t.Errorf("%q max %d: err %v, want ErrBadInput", c.start, c.max, err)
		}
	}
}

func TestCrawlDelayRaisesGap(t *testing.T) {
	s := testsite.New(t)
	s.Robots("User-agent: LohiSoftBot\nCrawl-delay: 0.3\n")
	s.HTML("/", testsite.Page("Home", marker, "/a", "A", "/b", "B"))
	s.HTML("/a", "<title>a</title>")
	s.HTML("/b", "<title>b</title>")
	crawl(t, testConfig(), s.URL)
	reqs := s.Requests()
	slices.SortFunc(reqs, func(a, b testsite.Request) int { return a.Start.Compare(b.Start) })
	if len(reqs) != 5 { // robots.txt, /, /sitemap.xml, /a, /b
		t.Fatalf("requests %d", len(reqs))
	}
	for i := 2; i < len(reqs); i++ { // after robots.txt was read
		if gap := reqs[i].Start.Sub(reqs[i-1].Start); gap < 300*time.Millisecond {
			t.Errorf("gap %v < Crawl-delay 300ms", gap)
		}
	}
}

func TestProgressAndNoBodyTextInLogs(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/a", "A"))
	s.HTML("/a", testsite.Page("A", marker))
	var logs bytes.Buffer
	cfg := testConfig()
	cfg.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var snaps []runreport.Crawl
	cfg.Progress = func(c runreport.Crawl) { snaps = append(snaps, c) }
	res := crawl(t, cfg, s.URL)
	if len(snaps) != 2 || len(snaps[0].Pages) != 1 || len(snaps[1].Pages) != 2 {
		t.Fatalf("progress snapshots: %d", len(snaps))
	}
	if len(res.Pages) != 2 {
		t.Fatalf("pages %v", pageURLs(res))
	}
	if logs.Len() == 0 {
		t.Fatal("no logs")
	}
	all, _ := json.Marshal(snaps)
	if bytes.Contains(logs.Bytes(), []byte(marker)) || bytes.Contains(all, []byte(marker)) {
		t.Error("body text leaked into logs or progress")
	}
}

func TestTokenFor(t *testing.T) {
	for ua, want := range map[string]string{
		DefaultUserAgent: "LohiSoftBot",
		"LohiSoftBot/1.0 (+message@lohisoft.com)": "LohiSoftBot",
		"TestBot/0.1": "TestBot",
		"":            DefaultToken,
		"1.0":         DefaultToken,
	} {
		if got := TokenFor(ua); got != want {
			t.Errorf("TokenFor(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestRobotsCacheReused(t *testing.T) {
	s := testsite.New(t)
	s.Robots("User-agent: *\nDisallow: /x\n")
	s.HTML("/", testsite.Page("Home", marker))
	cfg := testConfig()
	cfg.RobotsCache = &robots.Cache{}
	crawl(t, cfg, s.URL)
	res := crawl(t, cfg, s.URL)
	if n := s.Count("/robots.txt"); n != 1 {
		t.Errorf("robots.txt fetched %d times with a cache", n)
	}
	if res.Robots.Status != 200 || len(res.Pages) != 1 {
		t.Errorf("second crawl %+v", res)
	}
}
