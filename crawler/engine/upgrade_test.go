package engine

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testca"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
	"github.com/lohisoft/crawl-operator/internal/testutil/privilege"
)

// upgradeAddr hands each site of these tests its own loopback address: the
// rule is about the default ports 80 and 443, so the sites must listen
// there, and two sites cannot share them.
var upgradeAddr atomic.Int32

// twinSites is one host name served on port 80 (plain HTTP) and on port
// 443 (HTTPS, with a certificate from a private CA the crawl trusts), as a
// site that upgrades its visitors is.
type twinSites struct {
	host        string
	plain, tls  *testsite.Site
	cfg         Config
	http, https string // the sites' origins as URLs, with a trailing slash
}

func newTwinSites(t *testing.T) *twinSites {
	t.Helper()
	privilege.NeedRoot(t) // ports 80 and 443
	addr := fmt.Sprintf("127.80.43.%d", 10+upgradeAddr.Add(1))
	host := fmt.Sprintf("site%s.test", strings.ReplaceAll(addr, ".", "-"))
	ca := testca.New(t)
	cert := ca.Issue(t, host)
	tw := &twinSites{
		host:  host,
		plain: testsite.Listen(t, addr+":80", nil),
		tls:   testsite.Listen(t, addr+":443", &cert),
		http:  "http://" + host + "/", https: "https://" + host + "/",
	}
	dns := dnstest.Start(t, dnstest.Zone{A: map[string][]string{host: {addr}, "other.test": {addr}}})
	roots, err := fetch.TLSWithExtraCAs([]byte(ca.PEM))
	if err != nil {
		t.Fatal(err)
	}
	tw.cfg = testConfig()
	tw.cfg.Fetch.Dialer = fetch.Dialer{Resolver: dns.Resolver(), AllowPrivate: true}
	tw.cfg.Fetch.TLS = roots
	return tw
}

// upgradeEverything makes the plain-HTTP site redirect every request to the
// same path on https, as most sites do.
func (tw *twinSites) upgradeEverything() {
	tw.plain.Fallback(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://"+tw.host+r.URL.RequestURI(), http.StatusMovedPermanently)
	})
}

func paths(s *testsite.Site) []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, r.Path)
	}
	return out
}

// A CrawlTarget names http://site/ and the site sends every plain-HTTP
// request to https: the crawl moves to the https site, reads that site's
// own robots.txt (RFC 9309: rules are per scheme, host and port) and obeys
// it, and the report names the https site and the one asked for.
func TestStartURLUpgradedToHTTPS(t *testing.T) {
	tw := newTwinSites(t)
	tw.upgradeEverything()
	tw.tls.Robots("User-agent: *\nDisallow: /private\n")
	tw.tls.HTML("/", testsite.Page("Secure home", marker, "/a", "Page A", "/private", "secret",
		tw.http+"b", "plain link", "https://"+tw.host+":8443/c", "other port"))
	tw.tls.HTML("/a", testsite.Page("Page A", marker, "/", "home"))
	tw.tls.HTML("/private", testsite.Page("Private", marker))

	res := crawl(t, tw.cfg, tw.http)

	wantSite := "https://" + tw.host + ":443"
	if res.Site != wantSite || res.UpgradedFrom != "http://"+tw.host+":80" {
		t.Errorf("site %q upgradedFrom %q, want %s from http://%s:80", res.Site, res.UpgradedFrom, wantSite, tw.host)
	}
	if got, want := pageURLs(res), []string{tw.https, tw.https + "a"}; !slices.Equal(got, want) {
		t.Errorf("pages %v, want %v", got, want)
	}
	if got := skipReason(res, tw.http); !strings.Contains(got, "redirects to "+tw.https) {
		t.Errorf("start URL's skipped entry %q, want the redirect it made", got)
	}
	if got, want := paths(tw.plain), []string{"/robots.txt", "/"}; !slices.Equal(got, want) {
		t.Errorf("plain-HTTP site got %v, want only %v: nothing after the move", got, want)
	}
	if n := tw.tls.Count("/robots.txt"); n != 2 {
		// Once through the plain site's robots.txt redirect, once as the
		// https site's own.
		t.Errorf("https robots.txt requested %d times, want 2", n)
	}
	if n := tw.tls.Count("/private"); n != 0 {
		t.Errorf("/private requested %d times: the https site's robots.txt forbids it", n)
	}
	// The plain-HTTP twin is another site: its links are recorded, never
	// fetched, and so is another port.
	var off []string
	for _, l := range res.OffSiteLinks {
		off = append(off, l.URL)
	}
	if !slices.Contains(off, tw.http+"b") || !slices.Contains(off, "https://"+tw.host+":8443/c") {
		t.Errorf("off-site links %v, want the plain-HTTP and the other-port links", off)
	}
}

// The https site's robots.txt is the one that counts once the crawl moved:
// "Disallow: /" there leaves the site alone, whatever the plain site's
// said.
func TestUpgradedSiteDisallowsEverything(t *testing.T) {
	tw := newTwinSites(t)
	tw.plain.Robots("User-agent: *\nAllow: /\n")
	tw.plain.Redirect("/", tw.https, http.StatusFound)
	tw.tls.Robots("User-agent: *\nDisallow: /\n")
	tw.tls.HTML("/", testsite.Page("Secure home", marker))

	res := crawl(t, tw.cfg, tw.http)

	if res.Site != "https://"+tw.host+":443" || len(res.Pages) != 0 {
		t.Errorf("site %q pages %v, want the https site and no page", res.Site, pageURLs(res))
	}
	if got := paths(tw.tls); !slices.Equal(got, []string{"/robots.txt"}) {
		t.Errorf("https site got %v, want its robots.txt only", got)
	}
	if got := skipReason(res, tw.https); got != "disallowed by robots.txt" {
		t.Errorf("https start URL skipped as %q, want disallowed by robots.txt", got)
	}
}

// What a redirect may not do: take the crawl to another host, another port,
// down to plain HTTP, or move it after the start URL's visit. Each is
// another site: the crawl stays where it was and follows nothing there.
func TestRedirectsThatAreNoUpgrade(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(tw *twinSites)
		start   func(tw *twinSites) string
		site    func(tw *twinSites) string
		pages   func(tw *twinSites) []string
		offSite func(tw *twinSites) string // the skipped entry names it
	}{{
		name: "another host",
		setup: func(tw *twinSites) {
			tw.plain.Redirect("/", "https://other.test/", http.StatusMovedPermanently)
		},
		start:   func(tw *twinSites) string { return tw.http },
		site:    func(tw *twinSites) string { return "http://" + tw.host + ":80" },
		offSite: func(tw *twinSites) string { return "https://other.test/" },
	}, {
		name: "another port",
		setup: func(tw *twinSites) {
			tw.plain.Redirect("/", "https://"+tw.host+":8443/", http.StatusMovedPermanently)
		},
		start:   func(tw *twinSites) string { return tw.http },
		site:    func(tw *twinSites) string { return "http://" + tw.host + ":80" },
		offSite: func(tw *twinSites) string { return "https://" + tw.host + ":8443/" },
	}, {
		name: "a downgrade",
		setup: func(tw *twinSites) {
			tw.tls.Redirect("/", tw.http, http.StatusMovedPermanently)
			tw.plain.HTML("/", testsite.Page("Plain home", marker))
		},
		start:   func(tw *twinSites) string { return tw.https },
		site:    func(tw *twinSites) string { return "https://" + tw.host + ":443" },
		offSite: func(tw *twinSites) string { return tw.http },
	}, {
		name: "after the start URL",
		setup: func(tw *twinSites) {
			tw.plain.HTML("/", testsite.Page("Plain home", marker, "/moved", "moved"))
			tw.plain.Redirect("/moved", tw.https+"moved", http.StatusMovedPermanently)
			tw.tls.HTML("/moved", testsite.Page("Moved", marker))
		},
		start: func(tw *twinSites) string { return tw.http },
		site:  func(tw *twinSites) string { return "http://" + tw.host + ":80" },
		pages: func(tw *twinSites) []string { return []string{tw.http} },
		offSite: func(tw *twinSites) string {
			return tw.https + "moved"
		},
	}, {
		name: "back down after the upgrade",
		setup: func(tw *twinSites) {
			tw.plain.Redirect("/", tw.https+"hop", http.StatusMovedPermanently)
			tw.tls.Redirect("/hop", tw.http+"landing", http.StatusMovedPermanently)
			tw.plain.HTML("/landing", testsite.Page("Landing", marker))
		},
		start:   func(tw *twinSites) string { return tw.http },
		site:    func(tw *twinSites) string { return "https://" + tw.host + ":443" },
		offSite: func(tw *twinSites) string { return tw.http + "landing" },
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tw := newTwinSites(t)
			c.setup(tw)
			res := crawl(t, tw.cfg, c.start(tw))
			if res.Site != c.site(tw) {
				t.Errorf("site %q, want %q", res.Site, c.site(tw))
			}
			var want []string
			if c.pages != nil {
				want = c.pages(tw)
			}
			if got := pageURLs(res); !slices.Equal(got, want) {
				t.Errorf("pages %v, want %v", got, want)
			}
			found := false
			for _, s := range res.Skipped {
				found = found || strings.Contains(s.Reason, "off-site to "+c.offSite(tw))
			}
			if !found {
				t.Errorf("skipped %+v: want a redirect off-site to %s", res.Skipped, c.offSite(tw))
			}
			// Where the redirect pointed got no request for it.
			dest, path := (*testsite.Site)(nil), ""
			switch off := c.offSite(tw); {
			case strings.HasPrefix(off, tw.https):
				dest, path = tw.tls, "/"+strings.TrimPrefix(off, tw.https)
			case strings.HasPrefix(off, tw.http):
				dest, path = tw.plain, "/"+strings.TrimPrefix(off, tw.http)
			}
			if dest != nil && slices.Contains(paths(dest), path) {
				t.Errorf("%s%s was requested: the redirect there is not followed", c.offSite(tw), path)
			}
		})
	}
}
