package hostilesite

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// Ranked is the site of issue 22's "done when": a sitemap ranks 30 pages
// (with priorities, dates, duplicates and URLs the crawler must never
// take), and the pages link 300 more, every link carrying tracking
// parameters or a session id, and some pages naming a canonical URL. The
// budget decides which 20 requests are made: the start URL, the sitemap,
// then the highest-ranked sitemap URLs, each resource once.
type Ranked struct {
	*testsite.Site
	// Order is the paths the crawl must request after "/" and
	// "/sitemap.xml", in this order, as the ranking rule and the
	// canonical rule give them.
	Order []string
	// RecordedAs maps a fetched path to the path its page is recorded
	// under ("" when it must not be recorded: a duplicate).
	RecordedAs map[string]string
	// Never are paths that must never be requested.
	Never []string
}

// rankedEntry is one <url> of the Ranked sitemap.
type rankedEntry struct {
	path     string
	priority string // as written; "" for none
	lastmod  string // as written; "" for none
}

// rank is the documented order: priority (0.5 when absent or invalid)
// highest first, newer lastmod first (none is oldest), then sitemap order.
// It is written out here independently of the crawler, as the statement
// the test holds the crawler to.
func rank(entries []rankedEntry) []string {
	type r struct {
		path string
		prio float64
		mod  time.Time
		seq  int
	}
	var rs []r
	for i, e := range entries {
		var p float64 = 0.5
		if _, err := fmt.Sscanf(e.priority, "%g", &p); err != nil || p < 0 || p > 1 {
			p = 0.5
		}
		m, _ := time.Parse("2006-01-02", e.lastmod)
		rs = append(rs, r{e.path, p, m, i})
	}
	slices.SortStableFunc(rs, func(a, b r) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	out := make([]string, len(rs))
	for i, x := range rs {
		out[i] = x.path
	}
	return out
}

// NewRanked starts the Ranked site.
func NewRanked(t testing.TB) *Ranked {
	s := &Ranked{Site: testsite.New(t), RecordedAs: map[string]string{}}
	s.Robots("User-agent: *\nDisallow: /private/\n\nSitemap: " + s.URL + "/sitemap.xml\nSitemap: http://other.example/sitemap.xml\n")
	// 30 pages, listed out of numeric order, with priorities from 0.0 to
	// 1.0 and dates that break the ties; some without a priority or a
	// date, one with a priority outside 0–1 (which counts as 0.5).
	var entries []rankedEntry
	for i := 0; i < 30; i++ {
		n := (i * 17) % 30
		e := rankedEntry{path: fmt.Sprintf("/s/%d", n), priority: fmt.Sprintf("%.1f", float64((n*7)%11)/10), lastmod: fmt.Sprintf("2026-0%d-1%d", 1+n%5, n%10)}
		switch n % 9 {
		case 2:
			e.priority = ""
		case 4:
			e.lastmod = ""
		case 7:
			e.priority = "5"
		}
		entries = append(entries, e)
	}
	ranked := rank(entries)
	// What the sitemap lists and the crawler must never take, each ranked
	// as high as it can be.
	hostile := []string{
		s.URL + "/private/top", // disallowed by robots.txt
		"http://other.example/top",
		"javascript:alert(1)",
		s.URL + "/s/" + strings.TrimPrefix(ranked[0], "/s/") + "?utm_source=sitemap&utm_medium=xml", // the best page again
		s.URL + ranked[1] + ";jsessionid=0123456789ABCDEF",
	}
	s.Never = []string{"/private/top", "/private/canonical", "/loop"}
	var sm strings.Builder
	sm.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for _, h := range hostile {
		fmt.Fprintf(&sm, "<url><loc>%s</loc><priority>1.0</priority><lastmod>2026-12-31</lastmod></url>\n", strings.ReplaceAll(h, "&", "&amp;"))
	}
	for _, e := range entries {
		sm.WriteString("<url><loc>" + s.URL + e.path + "</loc>")
		if e.priority != "" {
			sm.WriteString("<priority>" + e.priority + "</priority>")
		}
		if e.lastmod != "" {
			sm.WriteString("<lastmod>" + e.lastmod + "</lastmod>")
		}
		sm.WriteString("</url>\n")
	}
	sm.WriteString("</urlset>\n")
	s.Handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, sm.String())
	})

	// Canonical tags on some of the pages the budget reaches, by rank:
	// one names a lower-ranked page (which is then recorded from it and
	// not fetched), one names it in a Link header, one names another
	// host, one a disallowed URL, one itself with a fragment; and two
	// pages are the same document.
	canonical := map[string]string{
		ranked[1]: ranked[10] + "?utm_source=canonical#section",
		ranked[3]: "http://other.example" + ranked[3],
		ranked[5]: "/private/canonical",
		ranked[6]: ranked[6] + "#top",
	}
	header := map[string]string{ranked[8]: ranked[12]}
	duplicate := map[string]string{ranked[15]: ranked[14]}
	body := func(path string) string {
		links := []string{"/", "Home"}
		for j := 0; j < 10; j++ {
			links = append(links, fmt.Sprintf("/l/%s-%d?utm_source=page&utm_campaign=%d&gclid=x%d", strings.TrimPrefix(path, "/s/"), j, j, j), "more")
		}
		for _, other := range ranked[:20] {
			links = append(links, other+"?fbclid=abc&utm_content="+path, "ranked "+other)
		}
		head := ""
		if c, ok := canonical[path]; ok {
			head = `<link rel="canonical" href="` + c + `">`
		}
		return strings.Replace(testsite.Page("Ranked "+path, Marker, links...), "<title>", head+"<title>", 1)
	}
	for _, p := range ranked {
		path := p
		s.Handle(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if c, ok := header[path]; ok {
				w.Header().Set("Link", `<`+c+`>; rel="canonical"`)
			}
			if d, ok := duplicate[path]; ok {
				fmt.Fprint(w, body(d))
				return
			}
			fmt.Fprint(w, body(path))
		})
	}
	s.Redirect("/loop", "/loop", http.StatusFound)

	// The start page links 300 pages, each written with tracking
	// parameters or a session id, some more than once.
	var links []string
	for i := 0; i < 300; i++ {
		var l string
		switch i % 6 {
		case 0:
			l = fmt.Sprintf("/l/%d?utm_source=home&utm_medium=link&utm_campaign=c%d", i, i)
		case 1:
			l = fmt.Sprintf("/l/%d;jsessionid=A1B2C3D4E5F6%04d", i, i)
		case 2:
			l = fmt.Sprintf("/l/%d?PHPSESSID=9f8e7d6c5b4a%04d", i, i)
		case 3:
			l = fmt.Sprintf("/l/%d?sid=4f3c2b1a0e9d8c7b6a5f%04d&page=2", i, i)
		case 4:
			l = fmt.Sprintf("/l/%d?mc_cid=x&mc_eid=y&_ga=2.1.%d&msclkid=%d", i, i, i)
		case 5:
			l = fmt.Sprintf("/l/%d?yclid=%d&dclid=%d&_gl=1*abc", i, i, i)
		}
		links = append(links, l, fmt.Sprintf("Link %d", i))
	}
	links = append(links, "/loop", "loop")
	s.HTML("/", testsite.Page("Ranked home", Marker, links...))
	s.Fallback(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/l/") {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, testsite.Page("Linked "+r.URL.Path, Marker))
			return
		}
		http.NotFound(w, r)
	})

	// The expected order: the ranking, less the pages another page has
	// already been recorded as, cut to the 18 requests the budget leaves.
	covered := map[string]bool{}
	for _, p := range ranked {
		if covered[p] {
			continue
		}
		s.Order = append(s.Order, p)
		s.RecordedAs[p] = p
		if c, ok := canonical[p]; ok && strings.HasPrefix(c, "/s/") {
			target, _, _ := strings.Cut(c, "?")
			target, _, _ = strings.Cut(target, "#")
			covered[target] = true
			s.RecordedAs[p] = target
		}
		if c, ok := header[p]; ok {
			covered[c] = true
			s.RecordedAs[p] = c
		}
		if _, ok := duplicate[p]; ok {
			s.RecordedAs[p] = ""
		}
		if len(s.Order) == 18 {
			break
		}
	}
	return s
}
