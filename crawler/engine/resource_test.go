package engine

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// pageWithHead is a page with extra markup in its <head>.
func pageWithHead(head, title string, links ...string) string {
	return strings.Replace(testsite.Page(title, marker, links...), "<title>", head+"<title>", 1)
}

// A site whose every URL carries a different utm_ value: each page is
// requested once, without the parameters, and recorded without them.
func TestTrackingParametersNeverMakeTwoResources(t *testing.T) {
	s := testsite.New(t)
	var n int
	s.Fallback(func(w http.ResponseWriter, r *http.Request) {
		n++
		var links []string
		for _, p := range []string{"/", "/a", "/b", "/c?page=2"} {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			links = append(links, fmt.Sprintf("%s%sutm_source=s%d&utm_medium=m&utm_campaign=%d&gclid=g%d&fbclid=f&_ga=2.1&_gl=1*x", p, sep, n, n, n), "link")
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, testsite.Page("Page "+r.URL.Path, marker, links...))
	})
	res := crawl(t, testConfig(), s.URL+"/?utm_source=operator")
	if got := requested(s); !slices.Equal(got, []string{"/", "/sitemap.xml", "/a", "/b", "/c?page=2"}) {
		t.Errorf("requested %q", got)
	}
	want := []string{s.URL + "/", s.URL + "/a", s.URL + "/b", s.URL + "/c?page=2"}
	if got := pageURLs(res); !slices.Equal(got, want) {
		t.Errorf("pages %q, want %q", got, want)
	}
	for _, p := range res.Pages {
		if len(p.InboundAnchors) == 0 && p.URL != s.URL+"/" {
			t.Errorf("%s lost its anchors", p.URL)
		}
	}
}

// A session id in every link, written each way servers write them: one
// request per page, none carrying the session.
func TestSessionIDsNeverMakeTwoResources(t *testing.T) {
	s := testsite.New(t)
	var n int
	s.Fallback(func(w http.ResponseWriter, r *http.Request) {
		n++
		links := []string{
			fmt.Sprintf("/a;jsessionid=%032X", n), "a",
			fmt.Sprintf("/b;JSESSIONID=%032X.node1?x=1", n), "b",
			fmt.Sprintf("/c?PHPSESSID=%026x", n), "c",
			fmt.Sprintf("/d?sid=%032x&lang=en", n+0xabc), "d",
			"/e?sid=42", "e: a short sid is not a session",
			"/f?sid=news", "f: nor is a word",
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, testsite.Page("Page "+r.URL.Path, marker, links...))
	})
	res := crawl(t, testConfig(), s.URL+"/")
	want := []string{"/", "/sitemap.xml", "/a", "/b?x=1", "/c", "/d?lang=en", "/e?sid=42", "/f?sid=news"}
	if got := requested(s); !slices.Equal(got, want) {
		t.Errorf("requested %q, want %q", got, want)
	}
	if len(res.Pages) != len(want)-1 {
		t.Errorf("pages %q", pageURLs(res))
	}
}

// A server that hands out its session id by redirect is followed, and the
// page recorded without it.
func TestSessionRedirectRecordedWithoutTheSession(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/app", "App"))
	s.Handle("/app", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/app;jsessionid=0123456789ABCDEF0123456789ABCDEF", http.StatusFound)
	})
	s.Handle("/app;jsessionid=0123456789ABCDEF0123456789ABCDEF", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, testsite.Page("App", marker, "/app", "App again"))
	})
	res := crawl(t, testConfig(), s.URL+"/")
	if got := pageURLs(res); !slices.Equal(got, []string{s.URL + "/", s.URL + "/app"}) {
		t.Errorf("pages %q", got)
	}
	if n := s.Count("/app"); n != 1 {
		t.Errorf("/app requested %d times", n)
	}
}

// The canonical rules, each on its own site: which URL a page is recorded
// under, and that no canonical makes the crawler fetch anything.
func TestCanonical(t *testing.T) {
	for _, c := range []struct {
		name      string
		setup     func(s *testsite.Site)
		pages     []string // recorded, in order
		requested []string // after "/" and "/sitemap.xml"
		reason    map[string]string
	}{
		{"names another page of the site: recorded there, that page not fetched", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/print", "print", "/article", "article"))
			s.HTML("/print", pageWithHead(`<link rel="canonical" href="/article?utm_source=print#top">`, "Article"))
			s.HTML("/article", testsite.Page("Article", marker))
		}, []string{"/", "/article"}, []string{"/print"}, map[string]string{"/print": "recorded as " + "{site}/article (rel=canonical)"}},
		{"in a Link header", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/print", "print", "/article", "article"))
			s.Handle("/print", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Add("Link", `</style.css>; rel=preload; as=style, <`+"/article"+`>; rel="canonical"`)
				io.WriteString(w, testsite.Page("Article", marker))
			})
		}, []string{"/", "/article"}, []string{"/print"}, nil},
		{"another host: ignored", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/a", "a"))
			s.HTML("/a", pageWithHead(`<link rel="canonical" href="http://other.example/a">`, "A"))
		}, []string{"/", "/a"}, []string{"/a"}, nil},
		{"a disallowed URL: ignored, never fetched", func(s *testsite.Site) {
			s.Robots("User-agent: *\nDisallow: /private\n")
			s.HTML("/", testsite.Page("Home", marker, "/a", "a", "/b", "b"))
			s.HTML("/a", pageWithHead(`<link rel="canonical" href="/private/a">`, "A"))
			s.HTML("/b", pageWithHead(`<link rel="canonical" href="/%2e%2e//private/b">`, "B"))
			s.HTML("/private/a", testsite.Page("Private", marker))
		}, []string{"/", "/a", "/b"}, []string{"/a", "/b"}, nil},
		{"itself with a fragment", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/a", "a"))
			s.HTML("/a", pageWithHead(`<link rel="canonical" href="/a#main">`, "A"))
		}, []string{"/", "/a"}, []string{"/a"}, map[string]string{"/a": ""}},
		{"a redirect loop already met: ignored", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/loop-a", "loop", "/a", "a"))
			s.Redirect("/loop-a", "/loop-b", http.StatusFound)
			s.Redirect("/loop-b", "/loop-a", http.StatusFound)
			s.HTML("/a", pageWithHead(`<link rel="canonical" href="/loop-a">`, "A"))
		}, []string{"/", "/a"}, []string{"/loop-a", "/loop-b", "/a"}, nil},
		{"a redirect loop not yet met: trusted, never fetched", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/a", "a", "/loop-a", "loop"))
			s.Redirect("/loop-a", "/loop-b", http.StatusFound)
			s.Redirect("/loop-b", "/loop-a", http.StatusFound)
			s.HTML("/a", pageWithHead(`<link rel="canonical" href="/loop-a">`, "A"))
		}, []string{"/", "/loop-a"}, []string{"/a"}, nil},
		{"a page already recorded with other fields: ignored (every page naming the home page)", func(s *testsite.Site) {
			s.HTML("/", pageWithHead(`<link rel="canonical" href="/">`, "Home", "/a", "a"))
			s.HTML("/a", pageWithHead(`<link rel="canonical" href="/">`, "A"))
		}, []string{"/", "/a"}, []string{"/a"}, nil},
		{"a page already recorded with the same fields: a duplicate", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/a", "a", "/a-copy", "copy"))
			s.HTML("/a", testsite.Page("A", marker))
			s.HTML("/a-copy", pageWithHead(`<link rel="canonical" href="/a">`, "A"))
		}, []string{"/", "/a"}, []string{"/a", "/a-copy"}, map[string]string{"/a-copy": "duplicate of {site}/a (rel=canonical)"}},
		{"two different canonicals: ignored", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/a", "a"))
			s.HTML("/a", pageWithHead(`<link rel="canonical" href="/x"><link rel="canonical" href="/y">`, "A"))
		}, []string{"/", "/a"}, []string{"/a"}, nil},
		{"in the body: ignored", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/a", "a"))
			s.HTML("/a", testsite.Page("A", marker)+`<link rel="canonical" href="/x">`)
		}, []string{"/", "/a"}, []string{"/a"}, nil},
		{"a noindex page's canonical is not taken", func(s *testsite.Site) {
			s.HTML("/", testsite.Page("Home", marker, "/a", "a", "/x", "x"))
			s.HTML("/a", pageWithHead(`<meta name="robots" content="noindex"><link rel="canonical" href="/x">`, "A"))
			s.HTML("/x", testsite.Page("X", marker))
		}, []string{"/", "/x"}, []string{"/a", "/x"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testsite.New(t)
			c.setup(s)
			res := crawl(t, testConfig(), s.URL+"/")
			var pages []string
			for _, p := range res.Pages {
				pages = append(pages, strings.TrimPrefix(p.URL, s.URL))
			}
			if !slices.Equal(pages, c.pages) {
				t.Errorf("pages %q, want %q", pages, c.pages)
			}
			if got := requested(s); !slices.Equal(got, append([]string{"/", "/sitemap.xml"}, c.requested...)) {
				t.Errorf("requested %q, want %q", got[min(2, len(got)):], c.requested)
			}
			for path, want := range c.reason {
				if got := skipReason(res, s.URL+path); got != strings.ReplaceAll(want, "{site}", s.URL) {
					t.Errorf("%s skipped with %q, want %q", path, got, want)
				}
			}
		})
	}
}

// The anchors of a page recorded under its canonical URL go with it.
func TestCanonicalKeepsAnchors(t *testing.T) {
	s := testsite.New(t)
	s.HTML("/", testsite.Page("Home", marker, "/print", "Printable", "/article", "The article"))
	s.HTML("/print", pageWithHead(`<link rel="canonical" href="/article">`, "Article"))
	res := crawl(t, testConfig(), s.URL+"/")
	for _, p := range res.Pages {
		if p.URL == s.URL+"/article" {
			got := slices.Clone(p.InboundAnchors)
			slices.Sort(got)
			if !slices.Equal(got, []string{"Printable", "The article"}) {
				t.Errorf("anchors %q", p.InboundAnchors)
			}
			return
		}
	}
	t.Errorf("no /article page: %v", pageURLs(res))
}

// Two fetched pages with the same stored fields and the same body are
// recorded once; the same fields with another body, or with no body, are
// two pages.
func TestSameContentRecordedOnce(t *testing.T) {
	s := testsite.New(t)
	same := testsite.Page("Same", marker)
	s.HTML("/a", same)
	s.HTML("/b", same)
	s.HTML("/c", same+"<!-- another body -->")
	// Empty bodies are not the same content: they say nothing.
	s.Handle("/e1", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "text/html") })
	s.Handle("/e2", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "text/html") })
	s.HTML("/", testsite.Page("Home", marker, "/a", "A", "/b", "B", "/c", "C", "/e1", "E1", "/e2", "E2"))
	res := crawl(t, testConfig(), s.URL+"/")
	if got := pageURLs(res); !slices.Equal(got, []string{s.URL + "/", s.URL + "/a", s.URL + "/c", s.URL + "/e1", s.URL + "/e2"}) {
		t.Errorf("pages %q", got)
	}
	if r := skipReason(res, s.URL+"/b"); r != "duplicate of "+s.URL+"/a (same content)" {
		t.Errorf("/b skipped with %q", r)
	}
	var a runreport.Page
	for _, p := range res.Pages {
		if p.URL == s.URL+"/a" {
			a = p
		}
	}
	if !slices.Contains(a.InboundAnchors, "B") {
		t.Errorf("/a does not carry the anchors of its duplicate: %q", a.InboundAnchors)
	}
}
