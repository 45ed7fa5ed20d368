package urlnorm

import (
	"net/url"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/internal/percent"
)

// TestDotSegmentBypassSpellings pins issue 8 item 1: every way of writing a
// dot segment (literal, percent-encoded in either case, mixed, above the
// root, relative) normalises to a URL whose path has none, so the URL the
// crawler requests is the one robots.txt is matched against. Percent-decoding
// of unreserved octets happens before dot-segment removal (RFC 3986 §6.2.2).
func TestDotSegmentBypassSpellings(t *testing.T) {
	base, _ := url.Parse("http://example.com/dir/page.html")
	cases := []struct{ href, want string }{
		{"/%2e/disallowed/x", "http://example.com/disallowed/x"},
		{"/%2e%2e/disallowed/x", "http://example.com/disallowed/x"},
		{"/a/%2e%2e/disallowed/x", "http://example.com/disallowed/x"},
		{"/.%2e/disallowed/x", "http://example.com/disallowed/x"},
		{"/%2e./disallowed/x", "http://example.com/disallowed/x"},
		{"/%2E%2E/disallowed/x", "http://example.com/disallowed/x"},
		{"/%2E%2e/disallowed/x", "http://example.com/disallowed/x"},
		{"/./disallowed/x", "http://example.com/disallowed/x"},
		{"/../disallowed/x", "http://example.com/disallowed/x"},
		{"/../../disallowed/x", "http://example.com/disallowed/x"},
		{"/%2e%2e/%2e%2e/%2e%2e/disallowed/x", "http://example.com/disallowed/x"},
		{"/a/b/%2e%2e/%2e%2e/disallowed/x", "http://example.com/disallowed/x"},
		{"%2e%2e/disallowed/x", "http://example.com/disallowed/x"}, // relative to /dir/
		{"%2e/x", "http://example.com/dir/x"},
		{"./%2e%2e/disallowed/x", "http://example.com/disallowed/x"},
		// Decoding first matters: resolving literal dots first would let
		// ".." eat "%2e%2e" and leave /a/disallowed/x.
		{"/a/%2e%2e/../disallowed/x", "http://example.com/disallowed/x"},
		{"/disallowed/x/%2e", "http://example.com/disallowed/x/"},
		{"/disallowed/x/y/%2e%2e", "http://example.com/disallowed/x/"},
		{"/disallowed/x/.", "http://example.com/disallowed/x/"},
		// Dot segments with other escapes around them.
		{"/%2e%2e/disallowed/%7Ex?q=1", "http://example.com/disallowed/~x?q=1"},
		// Not dot segments: left as written (the robots check covers what
		// servers make of them).
		{"/.../disallowed/x", "http://example.com/.../disallowed/x"},
		{"/a/.x/..y/z.", "http://example.com/a/.x/..y/z."},
		{"/a/..%2fdisallowed/x", "http://example.com/a/..%2Fdisallowed/x"},
		{"/%2e%2e%2fdisallowed/x", "http://example.com/..%2Fdisallowed/x"},
		{"/a/..;x/disallowed", "http://example.com/a/..;x/disallowed"},
		// Double encoding is decoded once, like every server does: %252e is
		// the three characters "%2e", not a dot.
		{"/%252e%252e/disallowed/x", "http://example.com/%252e%252e/disallowed/x"},
		// Empty segments are kept (only the robots check merges slashes).
		{"//example.com//disallowed/x", "http://example.com//disallowed/x"},
		{"/.//disallowed/x", "http://example.com//disallowed/x"},
		{"/disallowed/x//", "http://example.com/disallowed/x//"},
		// The query and fragment are not paths: their dots stay.
		{"/a/../b?next=/../x/./y", "http://example.com/b?next=/../x/./y"},
		{"/b?next=%2e%2e/x", "http://example.com/b?next=../x"},
		{"/b#/../x", "http://example.com/b"},
		// Browsers (WHATWG URL) read "\" as "/" in http(s) paths; the
		// crawler requests what a browser would.
		{`\disallowed\x`, "http://example.com/disallowed/x"},
		{`/a\..\disallowed\x`, "http://example.com/disallowed/x"},
		{`/a\%2e%2e\disallowed`, "http://example.com/disallowed"},
		{`\\other.example\x`, "http://other.example/x"},
		{`/b?x=\..\y`, `http://example.com/b?x=\..\y`},
	}
	for _, c := range cases {
		u, ok := Resolve(base, c.href)
		got := ""
		if ok {
			got = u.String()
		}
		if got != c.want {
			t.Errorf("Resolve(%q) = %q, want %q", c.href, got, c.want)
		}
		if ok {
			assertNoDotSegments(t, c.href, u)
		}
	}
}

// The start URL and Normalize alone (the index normalises stored URLs with
// it) resolve dot segments too.
func TestNormalizeRemovesDotSegments(t *testing.T) {
	for in, want := range map[string]string{
		"http://example.com/%2e%2e/disallowed/x": "http://example.com/disallowed/x",
		"http://example.com/a/./b/../c":          "http://example.com/a/c",
		"http://example.com/a/%2E/b/%2e%2E/c/":   "http://example.com/a/c/",
		"http://example.com/..":                  "http://example.com/",
		"http://example.com/a/..%2Fb/.?x=/./":    "http://example.com/a/..%2Fb/?x=/./",
	} {
		u, err := ParseStart(in)
		if err != nil {
			t.Errorf("ParseStart(%q): %v", in, err)
			continue
		}
		if u.String() != want {
			t.Errorf("ParseStart(%q) = %q, want %q", in, u, want)
		}
		p, _ := url.Parse(in)
		if n := Normalize(p); n.String() != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, n, want)
		}
	}
}

// TestResolveRFC3986Examples runs the reference-resolution examples of RFC
// 3986 §5.4.1 (normal) and §5.4.2 (abnormal) through Resolve. The expected
// URLs are the RFC's, then normalised as Resolve always does: fragment
// dropped, empty path written "/". Each example is run again with every dot
// of its path percent-encoded, which must change nothing.
func TestResolveRFC3986Examples(t *testing.T) {
	base, err := url.Parse("http://a/b/c/d;p?q")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ ref, want string }{
		// §5.4.1 normal examples.
		{"g:h", ""}, // "g:h": not http(s), not followed
		{"g", "http://a/b/c/g"},
		{"./g", "http://a/b/c/g"},
		{"g/", "http://a/b/c/g/"},
		{"/g", "http://a/g"},
		{"//g", "http://g/"}, // RFC: "http://g"
		{"?y", "http://a/b/c/d;p?y"},
		{"g?y", "http://a/b/c/g?y"},
		{"#s", "http://a/b/c/d;p?q"}, // RFC: "...?q#s"
		{"g#s", "http://a/b/c/g"},
		{"g?y#s", "http://a/b/c/g?y"},
		{";x", "http://a/b/c/;x"},
		{"g;x", "http://a/b/c/g;x"},
		{"g;x?y#s", "http://a/b/c/g;x?y"},
		{"", "http://a/b/c/d;p?q"},
		{".", "http://a/b/c/"},
		{"./", "http://a/b/c/"},
		{"..", "http://a/b/"},
		{"../", "http://a/b/"},
		{"../g", "http://a/b/g"},
		{"../..", "http://a/"},
		{"../../", "http://a/"},
		{"../../g", "http://a/g"},
		// §5.4.2 abnormal examples.
		{"../../../g", "http://a/g"},
		{"../../../../g", "http://a/g"},
		{"/./g", "http://a/g"},
		{"/../g", "http://a/g"},
		{"g.", "http://a/b/c/g."},
		{".g", "http://a/b/c/.g"},
		{"g..", "http://a/b/c/g.."},
		{"..g", "http://a/b/c/..g"},
		{"./../g", "http://a/b/g"},
		{"./g/.", "http://a/b/c/g/"},
		{"g/./h", "http://a/b/c/g/h"},
		{"g/../h", "http://a/b/c/h"},
		{"g;x=1/./y", "http://a/b/c/g;x=1/y"},
		{"g;x=1/../y", "http://a/b/c/y"},
		{"g?y/./x", "http://a/b/c/g?y/./x"},
		{"g?y/../x", "http://a/b/c/g?y/../x"},
		{"g#s/./x", "http://a/b/c/g"},
		{"g#s/../x", "http://a/b/c/g"},
		// RFC 3986 allows both readings: "http:g" for strict parsers, a
		// reference relative to the page "for backward compatibility".
		// Browsers take the second (the URL Standard: a scheme equal to
		// the page's, without "//"), so a visitor follows the link there.
		{"http:g", "http://a/b/c/g"},
	}
	for _, c := range cases {
		for _, ref := range []string{c.ref, encodeDots(c.ref, "%2e"), encodeDots(c.ref, "%2E")} {
			u, ok := Resolve(base, ref)
			got := ""
			if ok {
				got = u.String()
			}
			if got != c.want {
				t.Errorf("Resolve(%q) = %q, want %q", ref, got, c.want)
			}
		}
	}
}

// encodeDots writes every "." before the query or fragment of ref as esc.
func encodeDots(ref, esc string) string {
	end := strings.IndexAny(ref, "?#")
	if end < 0 {
		end = len(ref)
	}
	return strings.ReplaceAll(ref[:end], ".", esc) + ref[end:]
}

// assertNoDotSegments fails when a normalised URL's path, once its
// unreserved escapes are decoded, still has a "." or ".." segment.
func assertNoDotSegments(t *testing.T, in string, u *url.URL) {
	t.Helper()
	if p := canonicalEscapes(u.EscapedPath()); percent.HasDotSegment(p) {
		t.Errorf("%q -> %q: path %q has a dot segment", in, u, p)
	}
}

// Found by FuzzNormalize: the normalised URL must be a valid request target
// and stay the same when normalised or resolved again.
func TestNormalizeStable(t *testing.T) {
	base, _ := url.Parse("http://example.com/dir/page")
	cases := []struct{ href, want string }{
		{"? #", "http://example.com/dir/page?%20"},          // raw space in the query
		{"?a=\xae", "http://example.com/dir/page?a=%AE"},    // invalid UTF-8 kept as its octet
		{"?q=ツ", "http://example.com/dir/page?q=%E3%83%84"}, // non-ASCII as UTF-8 escapes
		{"?%0%61", "http://example.com/dir/page?%0%61"},     // %61 must not complete the stray %0
		{"?%%61%7e", "http://example.com/dir/page?%%61~"},   // nor %61 the stray %; %7e cannot
		{"/a\tb\n/c", "http://example.com/ab/c"},            // tabs and newlines dropped
	}
	for _, c := range cases {
		u, ok := Resolve(base, c.href)
		if !ok || u.String() != c.want {
			t.Errorf("Resolve(%q) = %v (ok=%v), want %q", c.href, u, ok, c.want)
			continue
		}
		if again, ok := Resolve(u, u.String()); !ok || again.String() != c.want {
			t.Errorf("Resolve(%q) again = %v", c.want, again)
		}
	}
}
