package searchui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDisplayURL(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", 100)
	for _, tt := range []struct{ name, in, want string }{
		// Scheme, host and port.
		{"https is left out", "https://example.com/a.html", "example.com/a.html"},
		{"http stays", "http://127.0.0.1:8090/breads.html", "http://127.0.0.1:8090/breads.html"},
		{"the root is the host", "https://example.com/", "example.com"},
		{"no path is the root", "https://example.com", "example.com"},
		{"the root of an http site", "http://127.0.0.1:8090/", "http://127.0.0.1:8090"},
		{"default port of https left out", "https://example.com:443/a", "example.com/a"},
		{"default port of http left out", "http://example.com:80/a", "http://example.com/a"},
		{"another port stays", "https://example.com:8443/a", "example.com:8443/a"},
		{"443 is not http's default", "http://example.com:443/", "http://example.com:443"},
		{"www stays: another host", "https://www.example.com/a", "www.example.com/a"},
		{"scheme and host in capitals", "HTTPS://Example.COM/A", "example.com/A"},
		{"user information never shown", "https://user:pw@example.com/a", "example.com/a"},
		{"user information cannot pose as the host", "https://bank.example@evil.example/login", "evil.example/login"},
		{"fragment left out", "https://example.com/a#top", "example.com/a"},
		{"query stays", "https://example.com/?q=1", "example.com/?q=1"},
		{"empty query stays", "https://example.com/a?", "example.com/a?"},
		{"punycode host as stored", "https://xn--bcher-kva.example/", "xn--bcher-kva.example"},
		{"Unicode host shown as punycode", "https://bücher.example/a", "xn--bcher-kva.example/a"},
		{"a host IDNA refuses is shown escaped", "https://a\u202eb.example/", "https://a%E2%80%AEb.example/"},
		{"look-alike Cyrillic host shown as punycode", "https://\u0440\u0430ypal.example/", "xn--ypal-43d9g.example"},

		// Letters decoded for reading.
		{"Italian", "https://example.it/citt%C3%A0", "example.it/città"},
		{"Slovak", "https://example.sk/k%C3%A1va/%C4%8Daj", "example.sk/káva/čaj"},
		{"Bulgarian", "https://example.bg/%D1%85%D0%BB%D1%8F%D0%B1", "example.bg/хляб"},
		{"lower-case escapes", "https://example.com/caf%c3%a9", "example.com/café"},
		{"scripts mix word by word", "https://example.bg/iphone-%D0%BA%D0%B0%D0%BB%D1%8A%D1%84", "example.bg/iphone-калъф"},
		{"query words", "https://example.com/s?q=caf%C3%A9&n=1", "example.com/s?q=café&n=1"},
		{"an ASCII escape stays beside decoded letters", "https://example.bg/%D1%85%2F", "example.bg/х%2F"},

		// What stays encoded.
		{"scripts mixed in a word", "https://example.com/p%D0%B0y", "example.com/p%D0%B0y"},
		{"decomposed letter that looks precomposed", "https://example.com/cafe%CC%81", "example.com/cafe%CC%81"},
		{"escaped slash", "https://example.com/a%2Fb", "example.com/a%2Fb"},
		{"escaped space and question mark", "https://example.com/a%20b%3Fc", "example.com/a%20b%3Fc"},
		{"an encoded ellipsis", "https://example.com/a%E2%80%A6b", "example.com/a%E2%80%A6b"},
		{"an encoded ellipsis keeps its word encoded", "https://example.com/caf%C3%A9%E2%80%A6", "example.com/caf%C3%A9%E2%80%A6"},
		{"right-to-left override", "https://example.com/a%E2%80%AEb", "example.com/a%E2%80%AEb"},
		{"zero-width space", "https://example.com/a%E2%80%8Bb", "example.com/a%E2%80%8Bb"},
		{"Hangul filler, a blank letter", "https://example.com/a%E3%85%A4", "example.com/a%E3%85%A4"},
		{"Hebrew reorders the address", "https://example.com/%D7%A9%D7%9C%D7%95%D7%9D", "example.com/%D7%A9%D7%9C%D7%95%D7%9D"},
		{"fullwidth letters", "https://example.com/%EF%BD%90ay", "example.com/%EF%BD%90ay"},
		{"a mark after punctuation", "https://example.com/-%CC%81", "example.com/-%CC%81"},
		{"invalid UTF-8", "https://example.com/%C3%28", "example.com/%C3%28"},
		{"truncated escape", "https://example.com/%C3", "example.com/%C3"},
		{"non-ASCII digits", "https://example.com/%D9%A3", "example.com/%D9%A3"},

		// Long addresses.
		{"middle segments left out",
			"https://example.com/shop/catalogue/2026/winter/coats/wool/long-black-wool-coat.html",
			"example.com/shop/…/2026/winter/coats/wool/long-black-wool-coat.html"},
		{"middle segments left out, query kept",
			"https://example.com/one/two/three/four/five/six/seven/eight/nine/ten/eleven/twelve?page=2",
			"example.com/one/…/five/six/seven/eight/nine/ten/eleven/twelve?page=2"},
		{"one long segment loses its middle", long,
			"example.com/" + strings.Repeat("a", 29) + "…" + strings.Repeat("a", 30)},
		{"a long host is never shortened",
			"https://" + strings.Repeat("h", 70) + ".example/" + strings.Repeat("p", 40),
			strings.Repeat("h", 70) + ".example/" + strings.Repeat("p", 10) + "…" + strings.Repeat("p", 12)},
		{"an escape is not cut",
			"https://example.com/" + strings.Repeat("%E2%80%8B", 20),
			"example.com/" + strings.Repeat("%E2%80%8B", 3) + "…%8B" + strings.Repeat("%E2%80%8B", 3)},

		// Not a web address: shown as it is.
		{"javascript", "javascript:alert(1)", "javascript:alert(1)"},
		{"scheme-relative", "//evil.example/", "//evil.example/"},
		{"long and not a web address", "data:" + strings.Repeat("x", 100), "data:" + strings.Repeat("x", 30) + "…" + strings.Repeat("x", 36)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := DisplayURL(tt.in); got != tt.want {
				t.Errorf("DisplayURL(%q)\n = %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// What DisplayURL shows names the URL: shown whole, it is the URL with
// its letters decoded (encode them again and it is the link); shortened,
// it is the URL's start and end around "…", which no URL shown holds
// itself. It is never longer than MaxDisplayURL unless the host is, and
// never cuts an escape apart.
func TestDisplayURLNamesTheURL(t *testing.T) {
	paths := []string{"", "/", "/a", "/k%C3%A1va", "/p%D0%B0y", "/%E2%80%A6", "/a%2Fb/c?d=%C3%A9", "/cafe%CC%81"}
	for i := 1; i <= 40; i++ {
		paths = append(paths, "/"+strings.Repeat("seg%C3%A9/", i)+strings.Repeat("x", i), "/"+strings.Repeat("%E2%80%8B", i), "/q?"+strings.Repeat("k=v&", i))
	}
	escape := regexp.MustCompile(`%[0-9A-F]{2}`)
	for _, host := range []string{"https://example.com", "http://127.0.0.1:8090", "https://" + strings.Repeat("h", 60) + ".example"} {
		for _, p := range paths {
			in := host + p
			got := DisplayURL(in)
			shown := strings.TrimPrefix(host, "https://")
			if !strings.HasPrefix(got, shown) || len(got) > len(shown) && got[len(shown)] != '/' {
				t.Errorf("DisplayURL(%q) = %q does not start with the host %q", in, got, shown)
			}
			if n := utf8.RuneCountInString(got); n > max(MaxDisplayURL, utf8.RuneCountInString(shown)+minDisplayPath) {
				t.Errorf("DisplayURL(%q) = %q: %d characters", in, got, n)
			}
			if strings.Count(got, "%") != len(escape.FindAllString(got, -1)) {
				t.Errorf("DisplayURL(%q) = %q cuts an escape apart", in, got)
			}
			if strings.Contains(got, ellipsis) {
				// Only an address too long to show whole is shortened.
				if utf8.RuneCountInString(strings.TrimPrefix(in, "https://")) <= MaxDisplayURL {
					t.Errorf("DisplayURL(%q) = %q is shortened, or shows an ellipsis of the URL's own", in, got)
				}
				continue
			}
			want := in
			if p == "/" || p == "" {
				want = host
			}
			if back := strings.Replace(reencode(got), shown, host, 1); back != want {
				t.Errorf("DisplayURL(%q) = %q, which reads as %q", in, got, back)
			}
		}
	}
}

// reencode percent-encodes the non-ASCII octets of s, as a browser sends
// what it shows.
func reencode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			fmt.Fprintf(&b, "%%%02X", s[i])
		} else {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
