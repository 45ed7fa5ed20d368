package urlnorm

import (
	"errors"
	"net/url"
	"testing"
)

func TestParseStart(t *testing.T) {
	ok := map[string]string{
		"http://Example.COM":             "http://example.com/",
		"https://example.com:443/a#frag": "https://example.com/a",
		"http://example.com:80/%7euser":  "http://example.com/~user",
		"HTTP://example.com.:8080/a?":    "http://example.com:8080/a",
		" http://127.0.0.1:9/x?b=1&a=2 ": "http://127.0.0.1:9/x?b=1&a=2",
		"http://example.com/a%2fb":       "http://example.com/a%2Fb",
		"http://example.com/ツ":           "http://example.com/%E3%83%84",
		"http://Příklad.CZ/":             "http://xn--pklad-zsa96e.cz/",
	}
	for in, want := range ok {
		u, err := ParseStart(in)
		if err != nil {
			t.Errorf("ParseStart(%q): %v", in, err)
			continue
		}
		if u.String() != want {
			t.Errorf("ParseStart(%q) = %q, want %q", in, u, want)
		}
	}
	bad := []string{"", "example.com", "/path", "ftp://example.com/", "http://", "http:///x",
		"http://user:pw@example.com/", "http://[::1]:8080/", "http://[2001:db8::1]/", "http://[::ffff:127.0.0.1]/",
		"mailto:a@b.c", "http://example.com:0/", "http://../", "http://a..b/", "http://a b/", "http://-/x!", "http://example.com:99999/", "http://exa mple.com/"}
	for _, in := range bad {
		if u, err := ParseStart(in); err == nil {
			t.Errorf("ParseStart(%q) = %v, want error", in, u)
		}
	}
	if _, err := ParseStart("http://[::1]/"); !errors.Is(err, ErrIPv6) {
		t.Errorf("IPv6 literal: %v, want ErrIPv6", err)
	}
}

func TestResolve(t *testing.T) {
	base, _ := url.Parse("http://example.com/dir/page.html?q=1")
	cases := []struct {
		href string
		want string // "" = not followable
	}{
		{"other.html", "http://example.com/dir/other.html"},
		{"../up", "http://example.com/up"},
		{"/abs#frag", "http://example.com/abs"},
		{"#top", "http://example.com/dir/page.html?q=1"},
		{"", "http://example.com/dir/page.html?q=1"},
		{"?x=2", "http://example.com/dir/page.html?x=2"},
		{"//other.example/x", "http://other.example/x"},
		{"HTTPS://Other.Example:443", "https://other.example/"},
		{" /sp ", "http://example.com/sp"},
		{"/a\n/b", "http://example.com/a/b"},
		{"mailto:x@example.com", ""},
		{"javascript:alert(1)", ""},
		{"data:text/html,hi", ""},
		{"tel:+420123", ""},
		{"http://user:pw@example.com/", ""},
		{"http://[::1]/", ""},
		{"http://example.com:bad/", ""},
		{"http://%zz/", ""},
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
	}
}

func TestOriginAndSameSite(t *testing.T) {
	p := func(s string) *url.URL { u, _ := url.Parse(s); return u }
	cases := []struct {
		a, b string
		same bool
	}{
		{"http://example.com/a", "http://EXAMPLE.com:80/b", true},
		{"http://example.com/", "https://example.com/", false},
		{"http://example.com/", "http://www.example.com/", false},
		{"http://example.com:8080/", "http://example.com/", false},
		{"https://example.com./", "https://example.com:443/x", true},
	}
	for _, c := range cases {
		if got := SameSite(p(c.a), p(c.b)); got != c.same {
			t.Errorf("SameSite(%q, %q) = %v", c.a, c.b, got)
		}
	}
	if got := Origin(p("https://Example.com/x")); got != "https://example.com:443" {
		t.Errorf("Origin = %q", got)
	}
	if got := Origin(p("http://127.0.0.1:8080/x")); got != "http://127.0.0.1:8080" {
		t.Errorf("Origin = %q", got)
	}
}

func TestNormalizeIdempotent(t *testing.T) {
	for _, s := range []string{"http://a.example/%7e/%41b?%2a=%7E", "http://a.example/a b", "http://a.example/x/./y/../z"} {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		once := Normalize(u)
		twice := Normalize(once)
		if once.String() != twice.String() {
			t.Errorf("Normalize not idempotent for %q: %q then %q", s, once, twice)
		}
	}
}
