package engine

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/heap"
	"github.com/lohisoft/crawl-operator/crawler/testutil/hostilesite"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// requested lists the paths a site was asked for, robots.txt left out.
func requested(s *testsite.Site) []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Path != "/robots.txt" {
			out = append(out, r.Path)
		}
	}
	return out
}

// pageAtAnyPath answers any path with a page titled after it.
func pageAtAnyPath(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html")
	io.WriteString(w, testsite.Page(r.URL.Path, marker))
}

// sitemapSkips returns the skipped entries about sitemaps (their reasons
// start with "sitemap").
func sitemapSkips(res runreport.Crawl) []runreport.Skip {
	var out []runreport.Skip
	for _, s := range res.Skipped {
		if strings.HasPrefix(s.Reason, "sitemap") {
			out = append(out, s)
		}
	}
	return out
}

// The "done when" of issue 22: a sitemap ranking 30 URLs, pages linking 300
// more with tracking parameters, session ids and canonical tags. The crawl
// requests the start URL, the sitemap and then the highest-ranked sitemap
// URLs in the documented order, no resource twice, nothing disallowed, at
// most 20 requests.
func TestSitemapRankedSiteDoneWhen(t *testing.T) {
	s := hostilesite.NewRanked(t)
	res := hostileCrawl(t, testConfig(), s.URL+"/")
	got := requested(s.Site)
	want := append([]string{"/", "/sitemap.xml"}, s.Order...)
	if !slices.Equal(got, want) {
		t.Errorf("requests\n got  %q\n want %q", got, want)
	}
	if len(got) > runreport.MaxPages {
		t.Errorf("%d requests, budget %d", len(got), runreport.MaxPages)
	}
	for _, p := range got {
		if slices.Contains(s.Never, p) || strings.HasPrefix(p, "/private/") {
			t.Errorf("requested %s", p)
		}
	}
	recorded := map[string]bool{}
	for _, p := range res.Pages {
		path := strings.TrimPrefix(p.URL, s.URL)
		if recorded[path] {
			t.Errorf("%s recorded twice", path)
		}
		recorded[path] = true
		if strings.ContainsAny(path, "?;#") {
			t.Errorf("page recorded as %s", p.URL)
		}
	}
	for fetched, as := range s.RecordedAs {
		if as != "" && !recorded[as] {
			t.Errorf("%s should be recorded as %s; pages %v", fetched, as, pageURLs(res))
		}
	}
	if len(res.Pages) != 1+len(s.Order)-1 { // the start page, the ranked pages less one duplicate
		t.Errorf("%d pages: %v", len(res.Pages), pageURLs(res))
	}
	if r := skipReason(res, s.URL+"/sitemap.xml"); r != "sitemap: 35 URLs (32 usable, 1 on other sites, 1 disallowed by robots.txt, 1 unusable)" {
		t.Errorf("sitemap entry %q", r)
	}
	if r := skipReason(res, s.URL+"/robots.txt"); r != "sitemaps not read: 1 on other sites" {
		t.Errorf("robots.txt entry %q", r)
	}
	if sk := sitemapSkips(res); len(sk) != 2 {
		t.Errorf("sitemap entries in skipped: %+v", sk)
	}
}

// A sitemap is read only up to its first 50,000 URLs: better-ranked URLs
// after them are never seen.
func TestSitemapReadUpTo50000URLs(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker))
	s.Handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for i := 0; i < 60000; i++ {
			prio := "0.3"
			if i%1000 == 7 || i >= 50000 {
				prio = "0.9"
			}
			fmt.Fprintf(w, "<url><loc>%s/u/%d</loc><priority>%s</priority></url>\n", s.URL, i, prio)
		}
		io.WriteString(w, `</urlset>`)
	})
	s.Fallback(pageAtAnyPath)
	res := crawl(t, testConfig(), s.URL+"/")
	var want []string
	for i := 7; len(want) < runreport.MaxPages-2; i += 1000 {
		want = append(want, fmt.Sprintf("/u/%d", i))
	}
	if got := requested(s); len(got) < 2 || !slices.Equal(got[2:], want) {
		t.Errorf("sitemap URLs requested %q, want %q", got, want)
	}
	if r := skipReason(res, s.URL+"/sitemap.xml"); !strings.Contains(r, "50000") {
		t.Errorf("sitemap reason %q does not say where reading stopped", r)
	}
}

// What a sitemap lists that the crawler must not take: other hosts,
// disallowed paths, javascript: and other non-http URLs, URLs over the
// length limit. None is requested, and the sitemap's entry counts them.
func TestSitemapListsWhatMustNotBeTaken(t *testing.T) {
	s := testsite.New(t)
	s.Robots("User-agent: *\nDisallow: /private\n")
	s.HTML("/", testsite.Page("Home", marker))
	s.HTML("/ok", testsite.Page("OK", marker))
	s.Handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<urlset>")
		for _, u := range []string{
			"http://other.example/x", "https://" + s.Listener.Addr().String() + "/https", "javascript:alert(1)", "mailto:a@b.c",
			s.URL + "/private/x", s.URL + "/%2e%2e/private/y", s.URL + "//private/z", s.URL + "/" + strings.Repeat("l", 3000),
			"", "  ", "data:text/html,hi", s.URL + "/ok",
		} {
			fmt.Fprintf(w, "<url><loc>%s</loc><priority>1.0</priority></url>", u)
		}
		io.WriteString(w, "</urlset>")
	})
	res := crawl(t, testConfig(), s.URL+"/")
	if got := requested(s); !slices.Equal(got, []string{"/", "/sitemap.xml", "/ok"}) {
		t.Errorf("requested %q", got)
	}
	r := skipReason(res, s.URL+"/sitemap.xml")
	for _, want := range []string{"12 URLs", "2 on other sites", "3 disallowed by robots.txt"} {
		if !strings.Contains(r, want) {
			t.Errorf("sitemap reason %q lacks %q", r, want)
		}
	}
}

// A sitemap that is not one (an HTML page answered with 200, as many
// servers answer for any path) is not read; the crawl goes by links, as
// it would without a sitemap.
func TestSitemapThatIsAnHTMLPage(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/a", "A", "/b", "B"))
	s.HTML("/a", testsite.Page("A", marker))
	s.HTML("/b", testsite.Page("B", marker))
	s.HTML("/sitemap.xml", testsite.Page("Not found, but 200", marker, "/from-sitemap-page", "x"))
	res := crawl(t, testConfig(), s.URL+"/")
	if got := requested(s); !slices.Equal(got, []string{"/", "/sitemap.xml", "/a", "/b"}) {
		t.Errorf("requested %q", got)
	}
	if r := skipReason(res, s.URL+"/sitemap.xml"); !strings.HasPrefix(r, "sitemap: not a sitemap") {
		t.Errorf("reason %q", r)
	}
	for _, p := range res.Pages {
		if strings.Contains(p.URL, "sitemap") {
			t.Errorf("sitemap recorded as a page: %s", p.URL)
		}
	}
}

// A site without a sitemap is crawled as before, breadth-first in
// document order; the answer to /sitemap.xml is one of its requests.
func TestNoSitemapCrawlsByLinks(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/b", "B", "/a", "A"))
	s.HTML("/a", testsite.Page("A", marker, "/c", "C"))
	s.HTML("/b", testsite.Page("B", marker, "/d", "D"))
	s.HTML("/c", testsite.Page("C", marker))
	s.HTML("/d", testsite.Page("D", marker))
	res := crawl(t, testConfig(), s.URL+"/")
	if got := requested(s); !slices.Equal(got, []string{"/", "/sitemap.xml", "/b", "/a", "/d", "/c"}) {
		t.Errorf("requested %q", got)
	}
	if r := skipReason(res, s.URL+"/sitemap.xml"); r != "sitemap: HTTP 404" {
		t.Errorf("reason %q", r)
	}
}

// The budget's order: start URL, then sitemap URLs (priority, then newer
// lastmod, then sitemap order), then links breadth-first in document
// order; a linked URL that the sitemap also lists takes its sitemap place.
func TestBudgetOrder(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/link1", "1", "/tie-old", "listed too", "/link2", "2"))
	s.Handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>`+s.URL+`/default</loc></url>
<url><loc>`+s.URL+`/tie-old</loc><priority>0.8</priority><lastmod>2025-01-01</lastmod></url>
<url><loc>`+s.URL+`/low</loc><priority>0.1</priority><lastmod>2026-12-01T10:00:00+01:00</lastmod></url>
<url><loc>`+s.URL+`/tie-new</loc><priority>0.8</priority><lastmod>2026-06-01</lastmod></url>
<url><loc>`+s.URL+`/tie-none</loc><priority>0.8</priority></url>
<url><loc>`+s.URL+`/top</loc><priority>1.0</priority></url>
<url><loc>`+s.URL+`/tie-new-2</loc><priority>0.8</priority><lastmod>2026-06-01</lastmod></url>
<url><loc>`+s.URL+`/bad-prio</loc><priority>high</priority></url>
<url><loc>`+s.URL+`/</loc><priority>1.0</priority></url>
</urlset>`)
	})
	s.Fallback(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, testsite.Page(r.URL.Path, marker, "/from-"+strings.TrimPrefix(r.URL.Path, "/"), "x"))
	})
	crawl(t, testConfig(), s.URL+"/")
	want := []string{"/", "/sitemap.xml",
		"/top", "/tie-new", "/tie-new-2", "/tie-old", "/tie-none", "/default", "/bad-prio", "/low",
		"/link1", "/link2", "/from-top", "/from-tie-new"}
	if got := requested(s); !slices.Equal(got[:min(len(got), len(want))], want) {
		t.Errorf("order\n got  %q\n want %q…", got, want)
	}
}

// With too small a budget no sitemap is read: a sitemap request is made only
// when at least one page request is left after it.
func TestSitemapNeedsBudgetLeft(t *testing.T) {
	for _, pages := range []int{1, 2} {
		s := testsite.New(t)
		s.HTML("/", testsite.Page("Home", marker, "/a", "A"))
		s.HTML("/a", testsite.Page("A", marker))
		s.Robots("Sitemap: " + s.URL + "/sitemap.xml\n")
		cfg := testConfig()
		cfg.MaxPages = pages
		crawl(t, cfg, s.URL+"/")
		if n := s.Count("/sitemap.xml"); n != 0 {
			t.Errorf("max pages %d: sitemap requested", pages)
		}
	}
}

// Sitemaps come from robots.txt's Sitemap lines on this site written in
// full (others are not read); at most 2 sitemap requests, index, redirect and retry
// included; robots.txt applies to them.
func TestSitemapSources(t *testing.T) {
	urlset := func(s *testsite.Site, paths ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<urlset>")
			for _, p := range paths {
				fmt.Fprintf(w, "<url><loc>%s%s</loc></url>", s.URL, p)
			}
			io.WriteString(w, "</urlset>")
		}
	}
	index := func(s *testsite.Site, paths ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for _, p := range paths {
				fmt.Fprintf(w, "<sitemap><loc>%s%s</loc></sitemap>", s.URL, p)
			}
			io.WriteString(w, "</sitemapindex>")
		}
	}
	for _, c := range []struct {
		name   string
		setup  func(s *testsite.Site)
		want   []string // requests after "/"
		reason map[string]string
	}{
		{"robots lines, other hosts skipped", func(s *testsite.Site) {
			s.Robots("Sitemap: http://other.example/sitemap.xml\nSitemap: " + s.URL + "/a.xml\nSitemap: /relative.xml\nSitemap: " + s.URL + "/b.xml\nSitemap: " + s.URL + "/c.xml\n")
			s.Handle("/a.xml", urlset(s, "/from-a"))
			s.Handle("/relative.xml", urlset(s, "/from-relative"))
			s.Handle("/b.xml", urlset(s, "/from-b"))
		}, []string{"/a.xml", "/b.xml", "/from-a", "/from-b"}, map[string]string{
			// A relative Sitemap line names no URL (the protocol: "the
			// complete URL"): none is made up from it.
			"/robots.txt": "sitemaps not read: 1 on other sites, 1 over the limit of 2 sitemap requests, 1 unusable",
		}},
		{"no sitemap on this site: /sitemap.xml", func(s *testsite.Site) {
			s.Robots("Sitemap: http://other.example/sitemap.xml\n")
			s.Handle("/sitemap.xml", urlset(s, "/x"))
		}, []string{"/sitemap.xml", "/x"}, nil},
		{"disallowed sitemap not read", func(s *testsite.Site) {
			s.Robots("User-agent: *\nDisallow: /sitemaps/\nSitemap: " + s.URL + "/sitemaps/a.xml\n")
			s.Handle("/sitemaps/a.xml", urlset(s, "/x"))
		}, nil, map[string]string{"/robots.txt": "sitemaps not read: 1 disallowed by robots.txt"}},
		{"index then its first sitemap on this site", func(s *testsite.Site) {
			s.Robots("Sitemap: " + s.URL + "/index.xml\n")
			s.Handle("/index.xml", func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `<sitemapindex><sitemap><loc>http://other.example/s.xml</loc></sitemap><sitemap><loc>`+s.URL+`/one.xml</loc></sitemap><sitemap><loc>`+s.URL+`/two.xml</loc></sitemap></sitemapindex>`)
			})
			s.Handle("/one.xml", urlset(s, "/x", "/y"))
		}, []string{"/index.xml", "/one.xml", "/x", "/y"}, nil},
		{"index loop", func(s *testsite.Site) {
			s.Robots("Sitemap: " + s.URL + "/index.xml\n")
			s.Handle("/index.xml", index(s, "/index.xml", "/index2.xml"))
			s.Handle("/index2.xml", index(s, "/index.xml", "/index2.xml"))
		}, []string{"/index.xml", "/index2.xml"}, map[string]string{"/index2.xml": "sitemap index"}},
		{"redirect followed within the limit", func(s *testsite.Site) {
			s.Redirect("/sitemap.xml", "/sitemap_index.xml", http.StatusMovedPermanently)
			s.Handle("/sitemap_index.xml", urlset(s, "/x"))
		}, []string{"/sitemap.xml", "/sitemap_index.xml", "/x"}, map[string]string{"/sitemap.xml": "sitemap: HTTP 301: redirects to"}},
		{"a sitemap the home page links is requested once, as a sitemap", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/sitemap.xml", "Sitemap", "/a", "A"))
			s.Handle("/sitemap.xml", urlset(s, "/x", "/sitemap.xml"))
		}, []string{"/sitemap.xml", "/x"}, map[string]string{"/sitemap.xml": "sitemap: 2 URLs (1 usable, 1 already crawled)"}},
		{"an index listing the start URL and itself: neither requested again", func(s *testsite.Site) {
			s.Robots("Sitemap: " + s.URL + "/index.xml\n")
			s.Handle("/index.xml", index(s, "/", "/index.xml", "/one.xml"))
			s.Handle("/one.xml", urlset(s, "/x"))
		}, []string{"/index.xml", "/one.xml", "/x"}, map[string]string{"/index.xml": "sitemap index: 3 sitemaps (1 to read next, 2 already read)"}},
		{"a sitemap redirecting to a page already crawled", func(s *testsite.Site) {
			s.Redirect("/sitemap.xml", "/", http.StatusFound)
		}, []string{"/sitemap.xml"}, map[string]string{"/sitemap.xml": "sitemap: redirects to http://"}},
		{"server error: not retried, the crawl goes on", func(s *testsite.Site) {
			s.Handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
		}, []string{"/sitemap.xml", "/a"}, map[string]string{"/sitemap.xml": "sitemap: HTTP 503"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testsite.New(t)
			s.HTML("/", testsite.Page("Home", marker, "/a", "A"))
			s.Fallback(pageAtAnyPath)
			c.setup(s)
			res := crawl(t, testConfig(), s.URL+"/")
			got := requested(s)
			want := append([]string{"/"}, c.want...)
			if c.want == nil {
				want = append(want, "/a")
			} else if !slices.Contains(want, "/a") {
				want = append(want, "/a")
			}
			if !slices.Equal(got, want) {
				t.Errorf("requested %q, want %q", got, want)
			}
			for path, reason := range c.reason {
				if r := skipReason(res, s.URL+path); !strings.HasPrefix(r, reason) {
					t.Errorf("%s skipped with %q, want %q…", path, r, reason)
				}
			}
			if res.RetryAfter != "" {
				t.Errorf("retryAfter %s: a sitemap's failure does not stop the crawl", res.RetryAfter)
			}
		})
	}
}

// Hostile sitemaps cost bounded memory and time and never stop the crawl:
// the crawler reads what it can use before the fault, says why it stopped
// in skipped, and goes on by links.
func TestHostileSitemaps(t *testing.T) {
	// 60 MiB of sitemap, gzip-compressed: more than may be read. Its URLs
	// are written in full, on the site that serves it.
	bomb := func(site string) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		io.WriteString(zw, `<urlset><url><loc>`+site+`/first</loc></url>`)
		comment := "<!--" + strings.Repeat("z", 60<<10) + "-->"
		for n := 0; n < 60<<20; n += len(comment) {
			io.WriteString(zw, comment)
		}
		io.WriteString(zw, `<url><loc>`+site+`/after-the-limit</loc></url></urlset>`)
		zw.Close()
		return b.Bytes()
	}
	// body serves a sitemap whose "SITE" is the serving site.
	body := func(b string) func(string) http.HandlerFunc {
		return func(site string) http.HandlerFunc {
			b := strings.ReplaceAll(b, "SITE", site)
			return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, b) }
		}
	}
	for _, c := range []struct {
		name    string
		serve   func(site string) http.HandlerFunc
		want    []string // sitemap URLs requested, in order
		reason  string   // start of the sitemap's reason
		maxHeap uint64   // bound on the heap growth while crawling
	}{
		{"gzip bomb as a file", func(site string) http.HandlerFunc {
			b := bomb(site)
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/gzip")
				w.Write(b)
			}
		}, []string{"/first"}, "sitemap: 1 URL", 40 << 20},
		{"gzip bomb as Content-Encoding", func(site string) http.HandlerFunc {
			b := bomb(site)
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(b)
			}
		}, []string{"/first"}, "sitemap: 1 URL", 40 << 20},
		{"malformed XML", body(`<urlset><url><loc>SITE/a1</loc></url><url><loc>SITE/a2</loc></url><url><<loc>SITE/a3</loc></url></urlset>`), []string{"/a1", "/a2"}, "sitemap: 2 URLs", 0},
		{"entities are not expanded", body(`<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;"><!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;"><!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;"><!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;"><!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;"><!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">]>` +
			`<urlset><url><loc>SITE/e&lol9;</loc></url><url><loc>&lol9;</loc></url><url><loc>SITE/plain?a=1&amp;b=2</loc></url><url><loc>SITE/amp?a=1&b=2</loc></url></urlset>`), []string{"/plain?a=1&b=2", "/amp?a=1&b=2"}, "sitemap: 4 URLs (2 usable, 2 unusable)", 16 << 20},
		{"2 MiB line in a text sitemap", body("SITE/t1\nSITE/" + strings.Repeat("x", 2<<20) + "\nSITE/t2\r\n\n/relative\nSITE/t3"), []string{"/t1", "/t2", "/t3"}, "sitemap: 5 URLs (3 usable, 2 unusable)", 16 << 20},
		{"2 MiB element in XML", body("<urlset><url><loc>SITE/x1</loc></url><url><loc>SITE/" + strings.Repeat("x", 2<<20) + "</loc></url><url><loc>SITE/x2</loc></url></urlset>"), []string{"/x1"}, "sitemap: 1 URL", 16 << 20},
		{"deep nesting", body("<urlset><url><loc>SITE/d1</loc></url>" + strings.Repeat("<url>", 1<<20)), []string{"/d1"}, "sitemap: 1 URL", 16 << 20},
		{"binary junk", body(string(bytes.Repeat([]byte{0, 0xff, '<', 0x80}, 1<<18))), nil, "sitemap: ", 16 << 20},
		{"empty", body(""), nil, "sitemap: no URLs", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testsite.New(t)
			s.HTML("/", testsite.Page("Home", marker, "/a", "A"))
			s.Handle("/sitemap.xml", c.serve(s.URL))
			s.Fallback(pageAtAnyPath)
			var res runreport.Crawl
			peak := heap.Peak(func() { res = crawl(t, testConfig(), s.URL+"/") })
			got := requested(s)
			want := append(append([]string{"/", "/sitemap.xml"}, c.want...), "/a")
			if !slices.Equal(got, want) {
				t.Errorf("requested %q, want %q", got, want)
			}
			if r := skipReason(res, s.URL+"/sitemap.xml"); !strings.HasPrefix(r, c.reason) {
				t.Errorf("reason %q, want %q…", r, c.reason)
			}
			if c.maxHeap > 0 && peak > c.maxHeap {
				t.Errorf("heap grew by %d MiB while crawling", peak>>20)
			}
			if res.RetryAfter != "" || len(res.Pages) != len(want)-1 {
				t.Errorf("crawl did not go on: retryAfter %q, pages %v", res.RetryAfter, pageURLs(res))
			}
		})
	}
}
