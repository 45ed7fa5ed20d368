package engine

import (
	"bytes"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/hostilesite"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// hostileCrawl crawls start with logs captured, and checks what holds for
// every hostile site: no body text in the document, its progress or the
// logs, and every document within MaxDocumentBytes.
func hostileCrawl(t *testing.T, cfg Config, start string) runreport.Crawl {
	t.Helper()
	var logs bytes.Buffer
	cfg.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var docs []runreport.Crawl
	cfg.Progress = func(c runreport.Crawl) { docs = append(docs, c) }
	res := crawl(t, cfg, start)
	docs = append(docs, res)
	for i, d := range docs {
		b, err := runreport.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > runreport.MaxDocumentBytes {
			t.Errorf("document %d is %d bytes, over the %d limit", i, len(b), runreport.MaxDocumentBytes)
		}
		if bytes.Contains(b, []byte(hostilesite.Marker)) {
			t.Errorf("document %d holds body text", i)
		}
	}
	if bytes.Contains(logs.Bytes(), []byte(hostilesite.Marker)) {
		t.Error("logs hold body text")
	}
	return res
}

func TestDotSegmentSpellingsNeverReachDisallowed(t *testing.T) {
	s := hostilesite.NewDots(t)
	res := hostileCrawl(t, testConfig(), s.URL+"/")
	if served := s.DisallowedServed(); len(served) > 0 {
		t.Errorf("disallowed content requested as %q", served)
	}
	for _, p := range res.Pages {
		if strings.Contains(p.URL, "disallowed") || p.Title == "Disallowed page" {
			t.Errorf("disallowed page indexed: %s", p.URL)
		}
	}
	if !slices.Contains(pageURLs(res), s.URL+"/allowed") {
		t.Errorf("the allowed page was not crawled: %v", pageURLs(res))
	}
}

func TestMessySite(t *testing.T) {
	s := hostilesite.NewMessy(t)
	res := hostileCrawl(t, testConfig(), s.URL+"/")
	pages := map[string]runreport.Page{}
	for _, p := range res.Pages {
		pages[strings.TrimPrefix(p.URL, s.URL)] = p
	}
	for path, want := range s.Want {
		p, ok := pages[path]
		if !ok {
			t.Errorf("%s not indexed (skipped: %q)", path, skipReason(res, s.URL+path))
			continue
		}
		if p.Title != want.Title {
			t.Errorf("%s: title %q, want %q", path, p.Title, want.Title)
		}
		for _, h := range []struct {
			got, want []string
			level     string
		}{{p.Headings.H1, want.H1, "h1"}, {p.Headings.H2, want.H2, "h2"}, {p.Headings.H3, want.H3, "h3"}} {
			if h.want != nil && !slices.Equal(h.got, h.want) {
				t.Errorf("%s: %s %q, want %q", path, h.level, h.got, h.want)
			}
		}
		for target, text := range want.Anchors {
			if a := pages[target].InboundAnchors; !slices.Contains(a, text) {
				t.Errorf("%s: anchors of %s are %q, want %q among them", path, target, a, text)
			}
		}
	}
	for path, reason := range s.Skipped {
		if got := skipReason(res, s.URL+path); !strings.HasPrefix(got, reason) {
			t.Errorf("%s skipped with %q, want %q…", path, got, reason)
		}
		if n := s.Count(path); n != 1 {
			t.Errorf("%s requested %d times, want once: a broken page is not retried", path, n)
		}
	}
	if res.RetryAfter != "" {
		t.Errorf("retryAfter %s: broken pages are not the host failing", res.RetryAfter)
	}
	if s.Count("/sitemap.xml") != 0 {
		t.Error("the sitemap robots.txt disallows was requested")
	}
}

func TestBigSiteFitsTheDocumentLimit(t *testing.T) {
	s := hostilesite.NewBig(t)
	res := hostileCrawl(t, testConfig(), s.URL+"/")
	if len(res.Pages) == 0 {
		t.Fatal("nothing indexed")
	}
	long := skipReason(res, s.URL+s.LongURL[:runreport.MaxURLLength-len(s.URL)])
	if long != "URL longer than 2048 bytes" {
		t.Errorf("long URL reason %q", long)
	}
	if r := skipReason(res, s.URL+"/weird-type"); !strings.HasPrefix(r, "not HTML (application/x-zzz") || len(r) > runreport.MaxReasonLength {
		t.Errorf("weird type reason %q", r)
	}
	for _, sk := range res.Skipped {
		if len(sk.URL) > runreport.MaxURLLength || len(sk.Reason) > runreport.MaxReasonLength {
			t.Errorf("skip entry over its caps: %d-byte URL, %d-byte reason", len(sk.URL), len(sk.Reason))
		}
	}
	for _, p := range res.Pages {
		if len(p.Title) > runreport.MaxTitleLength || len(p.Description) > runreport.MaxDescriptionLength ||
			len(p.Headings.H1) > runreport.MaxHeadingsPerLevel || len(p.InboundAnchors) > runreport.MaxInboundAnchors {
			t.Errorf("%s over its caps", p.URL)
		}
		for _, h := range slices.Concat(p.Headings.H1, p.Headings.H2, p.Headings.H3) {
			if len(h) > runreport.MaxHeadingLength {
				t.Errorf("%s: %d-byte heading", p.URL, len(h))
			}
		}
	}
	if len(res.OffSiteLinks) > runreport.MaxOffSiteLinks {
		t.Errorf("%d off-site links", len(res.OffSiteLinks))
	}
}

// Two names, one address: the delay holds between requests to the machine
// whatever name they use.
func TestDelayHoldsAcrossNamesOfOneAddress(t *testing.T) {
	s := hostilesite.NewNames(t)
	cfg := testConfig()
	cfg.Delay = 150 * time.Millisecond
	res := hostileCrawl(t, cfg, s.Start)
	if res.Robots.Status != http.StatusOK || len(res.Pages) != 2 {
		t.Fatalf("robots %d, pages %v", res.Robots.Status, pageURLs(res))
	}
	reqs := s.Requests()
	if len(reqs) < 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		if gap := reqs[i].Start.Sub(reqs[i-1].End); gap < cfg.Delay-5*time.Millisecond {
			t.Errorf("%s then %s only %v apart", reqs[i-1].Path, reqs[i].Path, gap)
		}
	}
}

// A host that stops answering is given up, and the URLs still queued are
// listed with the reason instead of vanishing.
func TestGivingUpListsTheQueuedURLs(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/a", "A", "/b", "B", "/c", "C"))
	hangUp := func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}
	for _, p := range []string{"/a", "/b", "/c"} {
		s.Handle(p, hangUp)
	}
	res := crawl(t, testConfig(), s.URL+"/")
	if !strings.HasPrefix(skipReason(res, s.URL+"/a"), "gave up on the site") {
		t.Errorf("/a: %q", skipReason(res, s.URL+"/a"))
	}
	for _, p := range []string{"/b", "/c"} {
		if r := skipReason(res, s.URL+p); !strings.HasPrefix(r, "gave up on the site") {
			t.Errorf("%s skipped with %q, want the give-up reason", p, r)
		}
		if s.Count(p) != 0 {
			t.Errorf("%s requested after the site was given up", p)
		}
	}
	if res.RetryAfter == "" {
		t.Error("no retryAfter after giving up on the host")
	}
}

// robots.txt that redirects where the address rules forbid is a permanent
// refusal: no retryAfter a second later.
func TestRobotsRefusedByAddressRulesIsNotRetriedSoon(t *testing.T) {
	s := testsite.New(t)
	s.Redirect("/robots.txt", "http://[::1]:1/robots.txt", http.StatusFound)
	s.HTML("/", testsite.Page("Home", marker))
	res := crawl(t, testConfig(), s.URL+"/")
	if res.RetryAfter != "" {
		t.Errorf("retryAfter %s for a permanent refusal", res.RetryAfter)
	}
	if r := skipReason(res, s.URL+"/"); !strings.HasPrefix(r, "refused: robots.txt") {
		t.Errorf("start skipped with %q", r)
	}
	if s.PageRequests() != 0 {
		t.Errorf("%d page requests without a readable robots.txt", s.PageRequests())
	}
}
