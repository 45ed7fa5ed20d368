package urlnorm

import (
	"net/url"
	"strings"
	"testing"

	whatwg "github.com/nlnwa/whatwg-url/url"

	"github.com/lohisoft/crawl-operator/crawler/internal/percent"
)

// FuzzNormalize checks, for any start URL or href: accepted URLs are
// absolute http(s) with a host and no fragment, normalisation is
// idempotent (Normalize of the result, and Resolve of it as an href, give
// it back), the normalised URL stays on its own site, its path has no
// "." or ".." segment once unreserved escapes are decoded, and a browser
// given it requests it unchanged (nlnwa/whatwg-url's parser, an
// implementation of the URL Standard, gives it back as written).
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"http://Example.COM:80/a/../b?x=%7e#f", "https://a.test./%e3%83%84", "//other.test/x", "../up?q", "javascript:alert(1)", "http://[::1]/", "HTTP://a.test:8080", "/a%2fb%41",
		"/%2e%2e/disallowed/x", "/a/%2E%2e/../x", "/.%2e/x", "%2e%2e/%2e%2e/x/%2e", "/.//x//", `\a\..\b?c\..`, "/%252e%252e/x", "/a/..%2fb", "/x/..;/y", "http://a.test/%2e?%2e%2e/../x"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://base.test/dir/page")
	f.Fuzz(func(t *testing.T, s string) {
		if u, err := ParseStart(s); err == nil {
			check(t, s, u)
		}
		if u, ok := Resolve(base, s); ok {
			check(t, s, u)
		}
	})
}

func check(t *testing.T, in string, u *url.URL) {
	t.Helper()
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Fragment != "" || u.User != nil {
		t.Fatalf("%q -> %q: not a crawlable absolute URL", in, u)
	}
	if IsIPv6Host(u.Host) {
		t.Fatalf("%q -> %q: IPv6 host accepted", in, u)
	}
	if u.Host != strings.ToLower(u.Host) {
		t.Fatalf("%q -> %q: host not lower-case", in, u)
	}
	again, err := url.Parse(u.String())
	if err != nil {
		t.Fatalf("%q -> %q does not parse: %v", in, u, err)
	}
	n := Normalize(again)
	if n.String() != u.String() {
		t.Fatalf("%q: not idempotent: %q then %q", in, u, n)
	}
	if !SameSite(u, n) {
		t.Fatalf("%q: normalising changed the site", in)
	}
	if p := canonicalEscapes(u.EscapedPath()); !strings.HasPrefix(p, "/") || percent.HasDotSegment(p) {
		t.Fatalf("%q -> %q: path %q has a dot segment (or no leading slash)", in, u, p)
	}
	if w, err := whatwg.Parse(u.String()); err != nil || w.Href(false) != u.String() {
		t.Fatalf("%q -> %q: a browser reads it as %v (%v)", in, u, w, err)
	}
	if r, ok := Resolve(u, u.String()); !ok || r.String() != u.String() {
		t.Fatalf("%q -> %q: resolving it again gives %v (ok=%v)", in, u, r, ok)
	}
}
