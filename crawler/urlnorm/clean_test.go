package urlnorm

import (
	"net/url"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// Tracking parameters, wherever they are, in any case.
		{"http://a.test/p?utm_source=x&utm_medium=y&utm_campaign=z", "http://a.test/p"},
		{"http://a.test/p?id=7&utm_source=x&page=2", "http://a.test/p?id=7&page=2"},
		{"http://a.test/p?UTM_Source=x&Utm_Term=y&utm_=z&utm_id=1", "http://a.test/p"},
		{"http://a.test/p?gclid=1&dclid=2&fbclid=3&msclkid=4&yclid=5&mc_cid=6&mc_eid=7&_ga=2.1.2&_gl=1*x*y", "http://a.test/p"},
		{"http://a.test/p?utm%5Fsource=x&q=1", "http://a.test/p?q=1"},
		{"http://a.test/p?utm_source", "http://a.test/p"},
		// Session ids.
		{"http://a.test/p;jsessionid=0123ABC.node1", "http://a.test/p"},
		{"http://a.test/p;JSESSIONID=0123?x=1", "http://a.test/p?x=1"},
		{"http://a.test/dir;jsessionid=1/p", "http://a.test/dir/p"},
		{"http://a.test/p;v=2;jsessionid=1;w=3", "http://a.test/p;v=2;w=3"},
		{"http://a.test/;jsessionid=1", "http://a.test/"},
		{"http://a.test/a/..;jsessionid=1/x", "http://a.test/x"},
		{"http://a.test/p?jsessionid=1&PHPSESSID=abc&phpsessid=def", "http://a.test/p"},
		{"http://a.test/p?sid=0123456789abcdef0123456789abcdef&f=2", "http://a.test/p?f=2"},
		{"http://a.test/p?sid=Ab-3_cdefghijklmn", "http://a.test/p"},
		// What stays: other parameters, as written and in order; sid
		// values that are ids or words; look-alike names.
		{"http://a.test/p?b=2&a=1&a=0", "http://a.test/p?b=2&a=1&a=0"},
		{"http://a.test/p?sid=42", "http://a.test/p?sid=42"},
		{"http://a.test/p?sid=summer-sale-edition", "http://a.test/p?sid=summer-sale-edition"},
		{"http://a.test/p?sid=12345678901234567890", "http://a.test/p?sid=12345678901234567890"},
		{"http://a.test/p?sid=0123456789abcdef.0123", "http://a.test/p?sid=0123456789abcdef.0123"},
		{"http://a.test/p?xutm_source=1&gclid_x=2&session=3", "http://a.test/p?xutm_source=1&gclid_x=2&session=3"},
		{"http://a.test/p;jsessionidx=1;xjsessionid=2", "http://a.test/p;jsessionidx=1;xjsessionid=2"},
		{"http://a.test/p%3Bjsessionid=1", "http://a.test/p%3Bjsessionid=1"},
		{"http://a.test/p?a=1&&b=2&utm_source=x", "http://a.test/p?a=1&&b=2"},
		{"http://a.test/p?q=utm_source", "http://a.test/p?q=utm_source"},
	} {
		u, err := ParseStart(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		before := u.String()
		got := Clean(u)
		if got.String() != c.want {
			t.Errorf("Clean(%s) = %s, want %s", c.in, got, c.want)
		}
		if again := Clean(got); again.String() != got.String() {
			t.Errorf("Clean(%s) not stable: %s then %s", c.in, got, again)
		}
		if u.String() != before {
			t.Errorf("Clean modified its argument: %s", u)
		}
	}
}

func TestSessionToken(t *testing.T) {
	for v, want := range map[string]bool{
		"0123456789abcdef0123456789abcdef": true,
		"a1b2c3d4e5f6a7b8":                 true,
		"a1b2c3d4e5f6a7b":                  false, // 15
		"abcdefghijklmnopqrstuvwxyz":       false, // no digit
		"01234567890123456789":             false, // no letter
		"abc123abc123abc1%20":              false,
		"":                                 false,
	} {
		if got := sessionToken(v); got != want {
			t.Errorf("sessionToken(%q) = %v", v, got)
		}
	}
}

// FuzzClean checks that a cleaned URL is still a normalised URL of the same
// site (the invariants of FuzzNormalize), that cleaning twice changes
// nothing more, and that no tracking or session parameter is left.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"/p?utm_source=x&a=1", "/p;jsessionid=1/..;jsessionid=2/x", "/a/..;JSESSIONID=1", "?sid=0123456789abcdef0123&sid=1", "/%2e%2e;jsessionid=x/y?_ga=1&&", "/;jsessionid", "?utm%5fa=1&Utm_b"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://base.test/dir/page")
	f.Fuzz(func(t *testing.T, s string) {
		u, ok := Resolve(base, s)
		if !ok {
			return
		}
		c := Clean(u)
		check(t, s, c)
		if !SameSite(c, u) {
			t.Fatalf("%q: cleaning changed the site", s)
		}
		if again := Clean(c); again.String() != c.String() {
			t.Fatalf("%q: %q cleaned again is %q", s, c, again)
		}
		for _, p := range strings.Split(c.RawQuery, "&") {
			if dropParam(p) {
				t.Fatalf("%q: %q keeps %q", s, c, p)
			}
		}
		for _, seg := range strings.Split(c.EscapedPath(), "/") {
			for _, param := range strings.Split(seg, ";")[1:] {
				if key, _, _ := strings.Cut(param, "="); strings.EqualFold(key, "jsessionid") {
					t.Fatalf("%q: %q keeps a session id", s, c)
				}
			}
		}
	})
}
