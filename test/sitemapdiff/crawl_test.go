package sitemapdiff

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/lohisoft/crawl-operator/crawler/engine"
	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// siteHost is the corpus site's host, however a body spells it.
var siteHost = regexp.MustCompile(`(?i)site\.test`)

// served is a corpus body as the test site at host serves it: the corpus
// site's host replaced by host wherever it is written (in any case, in
// whatever form of URL: a body's relative, backslashed or otherwise broken
// references to the site must reach the test server if the crawler takes
// them), in UTF-8 and the encodings that write ASCII as ASCII, in UTF-16
// either way round, and inside gzip (a stream cut off in the corpus is cut
// off as served).
func served(body []byte, host string) []byte {
	if bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return body
		}
		plain, readErr := io.ReadAll(zr)
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(served(plain, host))
		zw.Close()
		if readErr != nil {
			return b.Bytes()[:b.Len()/2]
		}
		return b.Bytes()
	}
	body = siteHost.ReplaceAllLiteral(body, []byte(host))
	for _, bigEndian := range []bool{false, true} {
		body = bytes.ReplaceAll(body, utf16Bytes("site.test", bigEndian), utf16Bytes(host, bigEndian))
	}
	return body
}

func utf16Bytes(s string, bigEndian bool) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}

// The rule behind the crawler's reading of sitemaps, from the site's side:
// every body of the corpus is served as a site's /sitemap.xml (robots.txt
// absent, the home page without links, any other path a page without
// links), crawled, and the site's log may hold only robots.txt, the start
// URL, /sitemap.xml, and URLs that the body names in full where the protocol
// puts one: as npm `sitemap` reads the bytes served, plus the crawler's
// listed differences (docs/crawler.md). No URL is requested twice, so no
// sitemap is either.
func TestCrawlRequestsOnlyNamedURLs(t *testing.T) {
	names := corpus(t)
	docs := documented(t)
	dir := t.TempDir()
	sites := map[string]*testsite.Site{}
	for _, name := range names {
		body, err := os.ReadFile(filepath.Join(corpusDir, name))
		if err != nil {
			t.Fatal(err)
		}
		s := testsite.New(t)
		sites[name] = s
		b := served(body, strings.TrimPrefix(s.URL, "http://"))
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s.Handle("/robots.txt", http.NotFound)
		s.Handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) { w.Write(b) })
		s.Fallback(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<!doctype html><title>page</title><h1>A page</h1>")
		})
	}
	ref := reference(t, dir)
	cfg := engine.Config{
		Delay:   time.Millisecond,
		Fetch:   fetch.Config{Dialer: fetch.Dialer{AllowPrivate: true}, TotalTimeout: 10 * time.Second},
		Timeout: time.Minute,
	}
	var requested atomic.Int64
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := sites[name]
			allowed := map[string]bool{"/robots.txt": true, "/": true, "/sitemap.xml": true}
			onSite := func(u string) {
				if rest, ok := strings.CutPrefix(u, s.URL); ok && strings.HasPrefix(rest, "/") {
					allowed[rest] = true
				}
			}
			for _, u := range ref[name].URLs {
				onSite(u)
			}
			for _, u := range strings.Fields(docs[name][1]) {
				onSite(named(strings.ReplaceAll(strings.Trim(u, "`"), site, s.URL)))
			}
			if _, err := engine.Crawl(context.Background(), cfg, s.URL+"/"); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, r := range s.Requests() {
				if !allowed[r.Target] {
					t.Errorf("requested %s, which the body does not name in full where the protocol puts a URL", r.Target)
				}
				if seen[r.Target] {
					t.Errorf("requested %s twice", r.Target)
				}
				seen[r.Target] = true
			}
			if len(s.Requests()) < 3 {
				t.Errorf("requests %v: robots.txt, the start URL and the sitemap at least", s.Requests())
			}
			requested.Add(int64(len(s.Requests()) - 3))
		})
	}
	t.Cleanup(func() { t.Logf("%d bodies crawled; %d requests for URLs they name", len(names), requested.Load()) })
}
