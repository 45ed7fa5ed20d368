package robots

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
)

const disallowedRobots = "User-agent: *\nDisallow: /disallowed\n"

// bypassSpellings are links that a common server (nginx, Apache, IIS,
// Tomcat) resolves to /disallowed/x. Issue 8 item 1: each was judged
// allowed, requested, and the disallowed page served and indexed.
var bypassSpellings = []string{
	"/disallowed/x",
	// dot segments, percent-encoded in every case and mix
	"/%2e/disallowed/x",
	"/%2e%2e/disallowed/x",
	"/a/%2e%2e/disallowed/x",
	"/.%2e/disallowed/x",
	"/%2e./disallowed/x",
	"/%2E%2e/disallowed/x",
	"/%2e%2e/%2e%2e/disallowed/x",
	"/a/%2e%2e/../disallowed/x",
	"/%2e%2e/disallowed/x?q=1",
	// literal dot segments, above the root too
	"/./disallowed/x",
	"/../disallowed/x",
	"/../../disallowed/x",
	"/a/b/../../disallowed/x",
	// slashes merged (nginx merge_slashes, Apache MergeSlashes, Tomcat)
	"//disallowed/x",
	"///disallowed/x",
	"/.//disallowed/x",
	"/a//../disallowed/x", // merged first: /a/../disallowed/x
	// encoded slash decoded as '/' (nginx, IIS, Apache AllowEncodedSlashes On)
	"/%2fdisallowed/x",
	"/%2Fdisallowed/x",
	"/a%2f..%2fdisallowed/x",
	"/%2e%2e%2fdisallowed/x",
	"/a/..%2F..%2Fdisallowed/x",
	// backslash (IIS and Windows servers; browsers too)
	`/\disallowed\x`,
	`\disallowed\x`,
	"/%5cdisallowed/x",
	"/%5Cdisallowed%5Cx",
	`/a\..\disallowed/x`,
	"/a%5C..%5Cdisallowed/x",
	// path parameters (Tomcat, Jetty: ";jsessionid=", "..;/")
	"/x/..;/disallowed/x",
	"/x/..;jsessionid=1/disallowed/x",
	"/;x/disallowed/x",
	"/disallowed;jsessionid=1/x",
}

// normalisedElsewhere are the spellings that urlnorm, like a browser,
// resolves to another page than the server would for the raw link: what
// the crawler requests is that page, which is allowed.
var normalisedElsewhere = map[string]string{
	"/a//../disallowed/x": "http://example.com/a/disallowed/x", // ".." removes the empty segment
}

// TestBypassSpellingsDisallowed checks each spelling twice: passed to
// Policy.Allowed as written (the `crawler robots` tester, any caller that
// does not normalise), and as the crawler handles a link (urlnorm.Resolve,
// then Policy.Allowed on the URL it would request). Spellings are made
// absolute first: "//disallowed/x" as an href is a link to the host
// "disallowed".
func TestBypassSpellingsDisallowed(t *testing.T) {
	p := FromStatus(200, []byte(disallowedRobots))
	base, _ := url.Parse("http://example.com/start/page")
	for _, s := range bypassSpellings {
		href := "http://example.com" + s
		if p.Allowed("LohiSoftBot", href) {
			t.Errorf("%q as written: allowed, want disallowed", href)
		}
		u, ok := urlnorm.Resolve(base, href)
		if !ok {
			t.Errorf("%q: not resolved", href)
			continue
		}
		if want, ok := normalisedElsewhere[s]; ok {
			if u.String() != want || !p.Allowed("LohiSoftBot", u.String()) {
				t.Errorf("%q normalised to %q (allowed %v), want %q, allowed", href, u, p.Allowed("LohiSoftBot", u.String()), want)
			}
			continue
		}
		if p.Allowed("LohiSoftBot", u.String()) {
			t.Errorf("%q normalised to %q: allowed, want disallowed", href, u)
		}
	}
}

// Conservative, not blind: what no common server turns into /disallowed
// stays allowed.
func TestNonBypassSpellingsAllowed(t *testing.T) {
	p := FromStatus(200, []byte(disallowedRobots))
	for _, s := range []string{
		"/",
		"/allowed/x",
		"/a/disallowed/x",
		"/Disallowed/x",                     // paths are case-sensitive (RFC 9309)
		"/%252e%252e/disallowed/x",          // decoded once: "%2e%2e" is a name, not ".."
		"/a/%252e%252e/disallowed",          // ditto
		"/x/.../disallowed",                 // "..." is a name
		"/x/..x/disallowed",                 // so is "..x"
		"/x?next=/../disallowed/x",          // the query is not a path
		"/x?next=%2e%2e/disallowed",         // nor is its decoded form
		"/x?u=http://h//disallowed",         // nor its slashes
		"/x#/../disallowed",                 // the fragment never reaches the server
		"/robots.txt",                       // always allowed
		"/a/%2e%2e/allowed/../ok",           // resolves to /ok
		"/disallowe%2Fd",                    // the slash splits the word: /disallowe/d
		"/allowed/x//",                      // empty segments at the end
		"/allowed;disallowed",               // a parameter is not a path
		"/allowed/..%252Fdisallowed",        // double-encoded slash
		"/allowed/%2e%2e%2e%2fdisallowed/x", // ".../disallowed/x" under /allowed
	} {
		if !p.Allowed("LohiSoftBot", "http://example.com"+s) {
			t.Errorf("%q: disallowed, want allowed", s)
		}
	}
}

// Other rule shapes: an Allow must not allow more through another
// spelling; anchors and trailing slashes; patterns are matched as written.
func TestSpellingsOtherRules(t *testing.T) {
	const allowPublic = "User-agent: *\nDisallow: /\nAllow: /public/\n"
	const publicSecret = "User-agent: *\nAllow: /public/\nDisallow: /public/secret\n"
	runAllowCases(t, []allowCase{
		// Allow does not widen: any spelling disallowed -> disallowed.
		{"allow /public/ literal ..", allowPublic, "a", "http://h/public/../private", false},
		{"allow /public/ encoded ..", allowPublic, "a", "http://h/public/%2e%2e/private", false},
		{"allow /public/ encoded slash ..", allowPublic, "a", "http://h/public/..%2Fprivate", false},
		{"allow /public/ merged ..", allowPublic, "a", "http://h/public//../../private", false},
		{"allow /public/ params ..", allowPublic, "a", "http://h/public/x/..;/../private", false},
		{"allow /public/ backslash ..", allowPublic, "a", `http://h/public\..\private`, false},
		{"allow /public/ plain", allowPublic, "a", "http://h/public/x", true},
		{"allow /public/ merged stays inside", allowPublic, "a", "http://h/public//x/./y", true},
		{"allow /public/ dots stay inside", allowPublic, "a", "http://h/public/a/../b", true},
		{"longer disallow via //", publicSecret, "a", "http://h/public//secret", false},
		{"longer disallow via /./", publicSecret, "a", "http://h/public/./secret", false},
		{"longer disallow via %2F", publicSecret, "a", "http://h/public%2Fsecret", false},
		{"longer disallow via ;", publicSecret, "a", "http://h/public/;x/secret", false},
		{"longer disallow other page", publicSecret, "a", "http://h/public/other", true},
		// Trailing dots and spaces of a segment (Windows file names).
		{"admin/ trailing dot", "User-agent: *\nDisallow: /admin/\n", "a", "http://h/admin./x", false},
		{"admin/ trailing dots", "User-agent: *\nDisallow: /admin/\n", "a", "http://h/admin../x", false},
		{"admin/ trailing space", "User-agent: *\nDisallow: /admin/\n", "a", "http://h/admin%20/x", false},
		{"admin/ not admin.html", "User-agent: *\nDisallow: /admin/\n", "a", "http://h/admin.html", true},
		{"admin/ not administrator", "User-agent: *\nDisallow: /admin/\n", "a", "http://h/administrator/x", true},
		// Anchored rules and empty segments at the end.
		{"page$ with jsessionid", "User-agent: *\nDisallow: /page$\n", "a", "http://h/page;jsessionid=1", false},
		{"page$ with trailing dot", "User-agent: *\nDisallow: /page$\n", "a", "http://h/page.", false},
		{"page$ other page", "User-agent: *\nDisallow: /page$\n", "a", "http://h/page2", true},
		{"page$ below", "User-agent: *\nDisallow: /page$\n", "a", "http://h/page/x", true},
		{"dir/$ with //", "User-agent: *\nDisallow: /dir/$\n", "a", "http://h/dir//", false},
		{"dir/$ with /.", "User-agent: *\nDisallow: /dir/$\n", "a", "http://h/dir/.", false},
		{"dir/$ with %2e", "User-agent: *\nDisallow: /dir/$\n", "a", "http://h/dir/x/%2e%2e", false},
		{"dir/$ below", "User-agent: *\nDisallow: /dir/$\n", "a", "http://h/dir/x", true},
		// The query is matched as written, never resolved.
		{"query dots as written", "User-agent: *\nDisallow: /p?x=../secret\n", "a", "http://h/p?x=../secret", false},
		{"query dots encoded", "User-agent: *\nDisallow: /p?x=../secret\n", "a", "http://h/p?x=%2e%2e/secret", false},
		{"query dots path moved", "User-agent: *\nDisallow: /p?x=../secret\n", "a", "http://h/a/../p?x=../secret", false},
		{"query not resolved", "User-agent: *\nDisallow: /secret\n", "a", "http://h/p?x=/../secret", true},
		{"pattern with query", "User-agent: *\nDisallow: /*?print\n", "a", "http://h/a//b/./c?print=1", false},
		// Patterns are matched as written (after RFC 9309 encoding):
		// owners write dots and double slashes to name those spellings.
		{"pattern //: other URL", "User-agent: *\nDisallow: /*//*\n", "a", "http://h/a/b", true},
		{"pattern //: that URL", "User-agent: *\nDisallow: /*//*\n", "a", "http://h/a//b", false},
		{"pattern /..: other URL", "User-agent: *\nDisallow: /..\n", "a", "http://h/x", true},
		{"pattern /..: that URL", "User-agent: *\nDisallow: /..\n", "a", "http://h/../x", false},
		{"pattern /.: dotfiles", "User-agent: *\nDisallow: /.\n", "a", "http://h/.git/config", false},
		{"pattern /.: other URL", "User-agent: *\nDisallow: /.\n", "a", "http://h/x", true},
		{"pattern %2e%2e: that URL", "User-agent: *\nDisallow: /%2e%2e/private\n", "a", "http://h/%2E%2E/private", false},
		{"pattern %2e%2e: resolved URL", "User-agent: *\nDisallow: /%2e%2e/private\n", "a", "http://h/private", true},
		{"pattern %2e: file name", "User-agent: *\nDisallow: /secret%2Ehtml\n", "a", "http://h/secret.html", false},
		{"pattern %2F: encoded", "User-agent: *\nDisallow: /a%2Fb\n", "a", "http://h/a%2fb", false},
		{"pattern %2F: plain", "User-agent: *\nDisallow: /a%2Fb\n", "a", "http://h/a/b", true},
	})
}

// RFC 9309 matching of one spelling is unchanged: an encoded slash is not
// a separator there. Only Allowed, which also asks what servers make of
// the URL, treats it as one.
func TestAsWrittenKeepsEncodedSlash(t *testing.T) {
	g := Parse([]byte("User-agent: FooBot\nDisallow: /a/b\n")).Group("FooBot")
	for _, u := range []string{"http://foo.bar/a%2Fb", "http://foo.bar/a%2fb"} {
		if !g.allowedAsWritten(u) {
			t.Errorf("%s: as written, want allowed (RFC 9309: %%2F is not a separator)", u)
		}
		if g.Allowed(u) {
			t.Errorf("%s: want disallowed (nginx and IIS serve /a/b)", u)
		}
	}
}

// A hostile site cannot make the check slow: one spelling per server
// quirk at most, whatever the URL.
func TestSpellingsBounded(t *testing.T) {
	long := strings.Repeat(`/a/.%2e/b;x\c%2F./d//`, 200)
	if n := len(spellings(long)); n > 1+1<<4 {
		t.Errorf("%d spellings", n)
	}
	if n := len(spellings("/plain/path")); n != 1 {
		t.Errorf("a plain path has %d spellings, want 1", n)
	}
}

// nginxLike serves a site the way nginx does with merge_slashes on: every
// escape decoded (%2F and %2E included), slashes merged, dot segments
// resolved, then routed. Anything that lands under /disallowed is counted.
type nginxLike struct {
	mu         sync.Mutex
	disallowed []string // request targets served from /disallowed
	allowed    []string
}

func (s *nginxLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.RequestURI
	p, _, _ := strings.Cut(target, "?")
	dec, err := url.PathUnescape(p)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	resolved := path.Clean("/" + dec) // merges slashes, resolves . and ..
	if strings.HasSuffix(dec, "/") && resolved != "/" {
		resolved += "/"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case resolved == "/robots.txt":
		io.WriteString(w, disallowedRobots)
	case strings.HasPrefix(resolved, "/disallowed"):
		s.disallowed = append(s.disallowed, target)
		io.WriteString(w, "<title>secret</title>")
	default:
		s.allowed = append(s.allowed, target)
		io.WriteString(w, "<title>public</title>")
	}
}

// TestLoopbackServerNeverServesDisallowed does what the crawler does with
// each link against a real server that normalises like nginx: robots.txt
// fetched with Fetch, the link resolved with urlnorm.Resolve, checked with
// Policy.Allowed, requested only if allowed. The disallowed handler must
// never run. The same server does serve the disallowed page for the
// spellings the crawler used to send, so the test would catch the bug.
func TestLoopbackServerNeverServesDisallowed(t *testing.T) {
	site := &nginxLike{}
	srv := httptest.NewServer(site)
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(ctx context.Context, u *url.URL) (*Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return &Response{Status: resp.StatusCode, Location: resp.Header.Get("Location"), Body: body}, nil
	}
	start, _ := url.Parse(srv.URL + "/start/page")
	p := Fetch(context.Background(), get, start)
	if p.Access != UseRules {
		t.Fatalf("robots.txt: %+v", p)
	}

	// The server model is faithful enough to be bypassed: the URLs the old
	// urlnorm produced for these links reach the disallowed handler.
	for _, old := range []string{"/./disallowed/x", "/../disallowed/x", "//disallowed/x", "/%2Fdisallowed/x"} {
		u, _ := url.Parse(srv.URL + old)
		if _, err := get(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	if len(site.disallowed) != 4 {
		t.Fatalf("the nginx-like server did not serve the old spellings from /disallowed: %v", site.disallowed)
	}
	site.disallowed = nil

	allowedLinks := []string{"/allowed/x", "/a/%2e%2e/allowed/y", "/%252e%252e/disallowed/x", "/x?next=/../disallowed"}
	links := append(slices.Clip(allowedLinks), bypassSpellings...)
	requested := 0
	for _, href := range links {
		u, ok := urlnorm.Resolve(start, srv.URL+href)
		if !ok || !urlnorm.SameSite(u, start) {
			t.Errorf("%q: not a link on the site (%v)", href, u)
			continue
		}
		if !p.Allowed("LohiSoftBot", u.String()) {
			continue
		}
		requested++
		if _, err := get(context.Background(), u); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	if len(site.disallowed) != 0 {
		t.Errorf("disallowed page served for %v", site.disallowed)
	}
	// The allowed links, and the bypass spellings that normalise to an
	// allowed page, are requested; nothing else is.
	if want := len(allowedLinks) + len(normalisedElsewhere); requested != want || len(site.allowed) != want {
		t.Errorf("requested %d links, server saw %v; want %d", requested, site.allowed, want)
	}
}
