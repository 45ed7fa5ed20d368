package engine

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// A page with every link form where a browser's URL parser (the WHATWG URL
// Standard) and RFC 3986's grammar part, crawled end to end: the site's log
// holds exactly the requests a browser makes for those links, as sent on
// the wire, less those the crawler refuses on purpose (credentials), and
// nothing for a link no browser follows. Each expected target is what the
// standard makes of the href against the page (crawler/urlnorm's
// TestWHATWGURLTestData checks the parser against the standard's own data).
func TestCrawlFollowsLinksAsBrowsersDo(t *testing.T) {
	s := testsite.New(t)
	host := strings.TrimPrefix(s.URL, "http://")
	port := host[strings.LastIndexByte(host, ':')+1:]
	links := []struct {
		href, browser string // browser: the request-target a browser sends, "" for none
	}{
		{"http:same-scheme", "/dir/same-scheme"}, // a scheme equal to the page's, without "//": relative
		{"http:/absolute-path", "/absolute-path"},
		{"http:", ""}, // the page itself, requested already
		{"///" + host + "/triple-slash", "/triple-slash"},
		{`\\` + host + `\back\slashes`, "/back/slashes"},
		{`http:\\` + host + `\scheme-backslash`, "/scheme-backslash"},
		{":colon-first", "/dir/:colon-first"}, // no scheme starts with ":"
		{"https:other-scheme", ""},            // https://other-scheme/: another site
		{"http://0x7f.1:" + port + "/hex-ip", "/hex-ip"},
		{"http://2130706433:" + port + "/decimal-ip", "/decimal-ip"},
		{"http://127.1:" + port + "/short-ip", "/short-ip"},
		{"http://%31%32%37.0.0.1:" + port + "/escaped-host", "/escaped-host"},
		{"/ta\tb", "/tab"},
		{`/quotes?a='x'&b="y"`, "/quotes?a=%27x%27&b=%22y%22"},
		{"/fragment#%GH", "/fragment"},
		{"http://@" + host + "/empty-userinfo", "/empty-userinfo"},
		{"  ?only-query  ", "/dir/page?only-query"},
		{"HTTP://" + host + "/Upper", "/Upper"},
		{"http://1.2.3.4.5/", ""}, // no host: no browser requests it
		// A browser asks for /credentials, sending the password; the bot
		// never logs in (docs/crawler.md), so this one it refuses.
		{"http://user:pw@" + host + "/credentials", ""},
	}
	var page strings.Builder
	page.WriteString("<!doctype html><title>Links</title><h1>Links</h1>\n")
	want := []string{"/robots.txt", "/dir/page", "/sitemap.xml"}
	for i, l := range links {
		fmt.Fprintf(&page, "<a href=\"%s\">link %d</a>\n", html.EscapeString(l.href), i)
		if l.browser != "" {
			want = append(want, l.browser)
		}
	}
	s.HTML("/dir/page", page.String())
	s.Fallback(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>A page</title>")
	})
	crawl(t, testConfig(), s.URL+"/dir/page")
	var got []string
	for _, r := range s.Requests() {
		got = append(got, r.Target)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the site's log\n got  %q\n want %q (a browser's requests, in link order)", got, want)
	}
}
