package robots

import (
	"strings"
	"testing"
	"time"
)

type allowCase struct {
	name   string
	robots string
	agent  string
	url    string
	want   bool
}

func runAllowCases(t *testing.T, cases []allowCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FromStatus(200, []byte(c.robots)).Allowed(c.agent, c.url); got != c.want {
				t.Errorf("robots %q agent %q url %q: allowed=%v, want %v", c.robots, c.agent, c.url, got, c.want)
			}
		})
	}
}

// Cases beyond the conformance file: the rest of Google's reference tests
// and the RFC 9309 rules, so the implementation is right rather than fitted.
func TestGoogleReferenceCases(t *testing.T) {
	const fooDisallow = "user-agent: FooBot\ndisallow: /\n"
	const groups = "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n"
	const fish = "user-agent: FooBot\ndisallow: /\nallow: /fish\n"
	const fishStar = "user-agent: FooBot\ndisallow: /\nallow: /fish*\n"
	const fishSlash = "user-agent: FooBot\ndisallow: /\nallow: /fish/\n"
	const php = "user-agent: FooBot\ndisallow: /\nallow: /*.php\n"
	const phpEnd = "user-agent: FooBot\ndisallow: /\nallow: /*.php$\n"
	const fishPhp = "user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n"
	runAllowCases(t, []allowCase{
		{"empty robots empty agent", "", "", "", true},
		{"empty agent", fooDisallow, "", "", true},
		{"empty url is /", fooDisallow, "FooBot", "", false},
		{"correct line", fooDisallow, "FooBot", "http://foo.bar/x/y", false},
		{"missing colon accepted", "user-agent FooBot\ndisallow /\n", "FooBot", "http://foo.bar/x/y", false},
		{"three words without colon ignored", "user-agent FooBot\ndisallow / x\n", "FooBot", "http://foo.bar/x/y", true},
		{"rules outside groups ignored FooBot", groups, "FooBot", "http://foo.bar/foo/bar/", false},
		{"rules outside groups ignored BarBot", groups, "BarBot", "http://foo.bar/foo/bar/", false},
		{"rules outside groups ignored BazBot", groups, "BazBot", "http://foo.bar/foo/bar/", false},
		{"sitemap keeps group BarBot/FooBot", "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n", "FooBot", "http://foo.bar/", false},
		{"unknown line keeps group BarBot", "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n", "BarBot", "http://foo.bar/", false},
		{"upper-case keys allow", "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n", "FooBot", "http://foo.bar/x/y", true},
		{"upper-case keys disallow", "USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n", "FooBot", "http://foo.bar/a/b", false},
		{"mixed-case keys", "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n", "FooBot", "http://foo.bar/a/b", false},
		{"agent value case-insensitive", "User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n", "Foo", "http://foo.bar/x/y", true},
		{"agent value case-insensitive 2", "User-Agent: foo bar\nAllow: /x/\nDisallow: /\n", "Foo", "http://foo.bar/a/b", false},
		{"agent up to first space", "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n", "Foo", "http://foo.bar/x/y", true},
		{"global empty", "", "FooBot", "http://foo.bar/x/y", true},
		{"global allows other", "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n", "BarBot", "http://foo.bar/x/y", true},
		{"only specific, other agent", "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n", "QuxBot", "http://foo.bar/x/y", true},
		{"value case-sensitive lower", "user-agent: FooBot\ndisallow: /x/\n", "FooBot", "http://foo.bar/x/y", false},
		{"equal allow/disallow /", "user-agent: FooBot\ndisallow: /\nallow: /\n", "FooBot", "http://foo.bar/x/y", true},
		{"/x vs /x/ (b)", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot", "http://foo.bar/x/", true},
		{"equal page", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n", "FooBot", "http://foo.bar/x/page.html", true},
		{"/page vs /*.html a", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page.html", false},
		{"/page vs /*.html b", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page", true},
		{"specific group implicit allow", "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n", "FooBot", "http://foo.bar/x/page", true},
		{"utf8 pattern vs raw url", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n", "FooBot", "http://foo.bar/foo/bar/ツ", true},
		{"%-pattern vs raw url", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n", "FooBot", "http://foo.bar/foo/bar/ツ", true},
		{"lower-case escapes", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%e3%83%84\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", true},
		{"unreserved escape vs plain (RFC 9309 2.2.2)", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n", "FooBot", "http://foo.bar/foo/bar/baz", true},
		// RFC 9309 keeps %2F distinct from "/" (TestAsWrittenKeepsEncodedSlash),
		// but nginx and IIS serve /a/b for it: disallowed (spellings.go).
		{"encoded slash is a slash to some servers", "User-agent: FooBot\nDisallow: /a/b\n", "FooBot", "http://foo.bar/a%2Fb", false},
		{"* (c)", "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "FooBot", "http://foo.bar/foo//quz", true},
		{"* (d)", "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n", "FooBot", "http://foo.bar/foo/bax/quz", true},
		{"$ (b)", "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", "FooBot", "http://foo.bar/foo/bar/qux", true},
		{"$ (c)", "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", "FooBot", "http://foo.bar/foo/bar/", true},
		{"$ (d)", "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n", "FooBot", "http://foo.bar/foo/bar/baz", true},
		{"# comment (b)", "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n", "FooBot", "http://foo.bar/foo/quz", false},
		{"$ in the middle is literal", "User-agent: FooBot\nDisallow: /a$b\n", "FooBot", "http://foo.bar/a", true},
		{"$ in the middle is literal 2", "User-agent: FooBot\nDisallow: /a$b\n", "FooBot", "http://foo.bar/a$b", false},
		{"* anchored at start", "User-agent: FooBot\nDisallow: /fish*.php\n", "FooBot", "http://foo.bar/cat/fish.php", true},
		{"index.html allows dir", "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot", "http://foo.com/allowed-slash/", true},
		{"index.html not index.htm", "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot", "http://foo.com/allowed-slash/index.htm", false},
		{"index.html exact", "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot", "http://foo.com/allowed-slash/index.html", true},
		{"index.html other", "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n", "foobot", "http://foo.com/anyother-url", false},
		{"fish bar", fish, "FooBot", "http://foo.bar/bar", false},
		{"fish", fish, "FooBot", "http://foo.bar/fish", true},
		{"fish.html", fish, "FooBot", "http://foo.bar/fish.html", true},
		{"fish/salmon", fish, "FooBot", "http://foo.bar/fish/salmon.html", true},
		{"fishheads", fish, "FooBot", "http://foo.bar/fishheads", true},
		{"Fish.asp", fish, "FooBot", "http://foo.bar/Fish.asp", false},
		{"fish* fishheads", fishStar, "FooBot", "http://foo.bar/fishheads/yummy.html", true},
		{"fish* catfish", fishStar, "FooBot", "http://foo.bar/catfish", false},
		{"fish/ fish", fishSlash, "FooBot", "http://foo.bar/fish", false},
		{"fish/ ?salmon", fishSlash, "FooBot", "http://foo.bar/fish/?salmon", true},
		{"fish/ Fish/Salmon", fishSlash, "FooBot", "http://foo.bar/Fish/Salmon.html", false},
		{"php filename", php, "FooBot", "http://foo.bar/filename.php", true},
		{"php //folder", php, "FooBot", "http://foo.bar//folder/any.php.file.html", true},
		{"php index?f=", php, "FooBot", "http://foo.bar/index?f=filename.php/", true},
		{"php /php/", php, "FooBot", "http://foo.bar/php/", false},
		{"php index?php", php, "FooBot", "http://foo.bar/index?php", false},
		{"php$ slash", phpEnd, "FooBot", "http://foo.bar/filename.php/", false},
		{"php$ php5", phpEnd, "FooBot", "http://foo.bar/filename.php5", false},
		{"php$ aaaphpaaa", phpEnd, "FooBot", "http://foo.bar/aaaphpaaa", false},
		{"php$ //windows.PHP", phpEnd, "FooBot", "http://foo.bar//windows.PHP", false},
		{"fish*.php fish.php", fishPhp, "FooBot", "http://foo.bar/fish.php", true},
		{"fish*.php Fish.PHP", fishPhp, "FooBot", "http://foo.bar/Fish.PHP", false},
		{"allow /$ page", "user-agent: FooBot\nallow: /$\ndisallow: /\n", "FooBot", "http://example.com/page.html", false},
		{"full BOM", "\xEF\xBB\xBFUser-Agent: foo\nDisallow: /AnyValue\n", "foo", "http://foo.bar/AnyValue", false},
		{"broken BOM only spoils first line", "\xEF\x11\xBFUser-Agent: foo\nDisallow: /AnyValue\n", "foo", "http://foo.bar/AnyValue", true},
		{"BOM mid-file is garbage", "User-Agent: foo\n\xEF\xBB\xBFDisallow: /AnyValue\n", "foo", "http://foo.bar/AnyValue", true},
		{"CR line endings", "User-Agent: foo\rDisallow: /x\r", "foo", "http://foo.bar/x", false},
		{"CRLF line endings", "User-Agent: foo\r\nAllow: /x/y\r\nDisallow: /x\r\n", "foo", "http://foo.bar/x/y", true},
		{"typo useragent/dissallow", "useragent: FooBot\ndissallow: /\n", "FooBot", "http://foo.bar/x", false},
		{"typo user agent/disalow", "user agent: FooBot\ndisalow: /\n", "FooBot", "http://foo.bar/x", false},
		{"star with comment word is global", "User-agent: * everyone\nDisallow: /\n", "FooBot", "http://foo.bar/x", false},
		{"agent with version", "User-agent: FooBot/2.1\nDisallow: /\n", "FooBot", "http://foo.bar/x", false},
		{"prefix of agent does not match", "User-agent: Foo\nDisallow: /\n", "FooBot", "http://foo.bar/x", true},
		{"robots.txt always allowed", "User-agent: *\nDisallow: /\n", "FooBot", "http://foo.bar/robots.txt", true},
		{"crawl-delay does not end group", "User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\n", "a", "http://foo.bar/x", false},
		{"bad crawl-delay line keeps the file", "User-agent: a\nCrawl-delay: soon\nDisallow: /\n", "a", "http://foo.bar/x", false},
		{"pattern without slash never matches", "User-agent: a\nDisallow: x\n", "a", "http://foo.bar/x", true},
		{"query in pattern", "User-agent: a\nDisallow: /*?print=1\n", "a", "http://foo.bar/p?print=1", false},
		{"fragment ignored", "User-agent: a\nDisallow: /p$\n", "a", "http://foo.bar/p#frag", false},
		{"RFC 2.2.2 query raw pattern vs encoded URL", "User-agent: a\nDisallow: /\nAllow: /foo/bar?baz=https://foo.bar\n", "a", "http://foo.bar/foo/bar?baz=https%3A%2F%2Ffoo.bar", true},
		{"RFC 2.2.2 query encoded pattern vs raw URL", "User-agent: a\nDisallow: /\nAllow: /foo/bar?baz=https%3A%2F%2Ffoo.bar\n", "a", "http://foo.bar/foo/bar?baz=https://foo.bar", true},
		{"RFC 2.2.2 plain query", "User-agent: a\nDisallow: /\nAllow: /foo/bar?baz=quz\n", "a", "http://foo.bar/foo/bar?baz=quz", true},
		{"encoded & in query is not a separator", "User-agent: a\nDisallow: /p?a=1&b=2\n", "a", "http://foo.bar/p?a=1%26b=2", true},
		{"encoded slash in path, lower-case", "User-agent: a\nDisallow: /a/b\n", "a", "http://foo.bar/a%2fb", false},
		{"space in pattern", "User-agent: a\nDisallow: /a b\n", "a", "http://foo.bar/a%20b", false},
	})
}

func TestLineTooLong(t *testing.T) {
	const maxLen = 2083 * 8
	long := "/x/" + strings.Repeat("a", maxLen-3-len("disallow: ")+1-3)
	rb := "user-agent: FooBot\ndisallow: " + long + "/qux\n"
	runAllowCases(t, []allowCase{
		{"nothing matched", rb, "FooBot", "http://foo.bar/fux", true},
		{"cut-off rule matches", rb, "FooBot", "http://foo.bar" + long + "/fux", false},
	})
	la := "/x/" + strings.Repeat("a", maxLen-3-len("allow: ")+1-3)
	lb := "/x/" + strings.Repeat("b", maxLen-3-len("allow: ")+1-3)
	rb2 := "user-agent: FooBot\ndisallow: /\nallow: " + la + "/qux\nallow: " + lb + "/qux\n"
	runAllowCases(t, []allowCase{
		{"disallowed root", rb2, "FooBot", "http://foo.bar/", false},
		{"exact long allow", rb2, "FooBot", "http://foo.bar" + la + "/qux", true},
		{"cut-off long allow", rb2, "FooBot", "http://foo.bar" + lb + "/fux", true},
	})
}

func TestSizeLimitDropsCutLine(t *testing.T) {
	head := "User-agent: *\nDisallow: /private\n"
	pad := strings.Repeat("#", MaxSize-len(head)-len("Allow: /pri")-1) + "\n"
	body := head + pad + "Allow: /private-but-public\n"
	if len(head+pad+"Allow: /pri") != MaxSize {
		t.Fatalf("test body miscomputed")
	}
	// The Allow line straddles the limit: it must be dropped, not read as "Allow: /pri".
	if FromStatus(200, []byte(body)).Allowed("x", "/private-but-public") {
		t.Error("a rule cut at the size limit was applied")
	}
	// Lines entirely beyond the limit are ignored.
	beyond := head + strings.Repeat("#", MaxSize) + "\nUser-agent: *\nAllow: /\n"
	if FromStatus(200, []byte(beyond)).Allowed("x", "/private") {
		t.Error("a rule beyond the size limit was applied")
	}
	within := head + "Allow: /private/ok\n"
	if !FromStatus(200, []byte(within)).Allowed("x", "/private/ok") {
		t.Error("rule within the limit ignored")
	}
}

func TestCrawlDelay(t *testing.T) {
	cases := []struct {
		robots string
		want   time.Duration
		has    bool
	}{
		{"User-agent: LohiSoftBot\nCrawl-delay: 5\n", 5 * time.Second, true},
		{"User-agent: *\nCrawl-delay: 2.5\n", 2500 * time.Millisecond, true},
		{"User-agent: *\nCrawl-delay: 10s\nDisallow: /x\n", 10 * time.Second, true},
		{"User-agent: *\nCrawl-delay: 3\nUser-agent: LohiSoftBot\nDisallow: /x\n", 0, false},
		{"User-agent: *\nCrawl-delay: -1\n", 0, false},
		{"User-agent: *\nCrawl-delay: soon\n", 0, false},
		{"User-agent: OtherBot\nCrawl-delay: 9\n", 0, false},
		{"User-agent: OtherBot\nUser-agent: LohiSoftBot\nCrawl-delay: 7\nDisallow: /x\n", 7 * time.Second, true},
	}
	for _, c := range cases {
		g := Parse([]byte(c.robots)).Group("LohiSoftBot")
		if g.CrawlDelay != c.want || g.HasCrawlDelay != c.has {
			t.Errorf("%q: delay %v/%v, want %v/%v", c.robots, g.CrawlDelay, g.HasCrawlDelay, c.want, c.has)
		}
	}
}

func TestFromStatus(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /\n")
	cases := []struct {
		status int
		access Access
		allow  bool
	}{
		{200, UseRules, false},
		{204, UseRules, false},
		{301, FullAllow, true},
		{400, FullAllow, true},
		{401, FullAllow, true},
		{403, FullAllow, true},
		{404, FullAllow, true},
		{410, FullAllow, true},
		{429, FullDisallow, false},
		{500, FullDisallow, false},
		{503, FullDisallow, false},
		{599, FullDisallow, false},
		{100, FullDisallow, false},
	}
	for _, c := range cases {
		p := FromStatus(c.status, body)
		if p.Access != c.access || p.Allowed("LohiSoftBot", "/page") != c.allow || p.Status != c.status {
			t.Errorf("status %d: access %v allowed %v, want %v %v", c.status, p.Access, p.Allowed("LohiSoftBot", "/page"), c.access, c.allow)
		}
		if p.BackOff() != (c.access == FullDisallow) {
			t.Errorf("status %d: BackOff %v", c.status, p.BackOff())
		}
	}
	if p := Unreachable(errTest); p.Access != FullDisallow || p.Status != 0 || !p.BackOff() {
		t.Errorf("unreachable: %+v", p)
	}
}

func TestProductToken(t *testing.T) {
	for in, want := range map[string]string{
		"LohiSoftBot/1.0 (+https://lohisoft.com/bot)": "LohiSoftBot",
		"LohiSoftBot/1.0 (+message@lohisoft.com)":     "LohiSoftBot",
		"My_Crawler-2": "My_Crawler-",
		"Foo Bar":      "Foo",
		"/1.0":         "",
	} {
		if got := ProductToken(in); got != want {
			t.Errorf("ProductToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPathOf(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "/",
		"http://www.example.com":    "/",
		"http://www.example.com/":   "/",
		"http://www.example.com/a":  "/a",
		"http://www.example.com/a/": "/a/",
		"http://www.example.com/a/b?c=http://d.e/": "/a/b?c=http://d.e/",
		"http://www.example.com/a/b?c=d&e=f#fg":    "/a/b?c=d&e=f",
		"example.com":                              "/",
		"example.com/":                             "/",
		"example.com/a":                            "/a",
		"a":                                        "/",
		"a/":                                       "/",
		"/a":                                       "/a",
		"a?b":                                      "/?b",
		"example.com?a":                            "/?a",
		"example.com/a;b#c":                        "/a;b",
		"//a/b/c":                                  "/b/c",
		"http://x#frag/y":                          "/",
		`http://x\a\b?c\d`:                         `/\a\b?c\d`,
	} {
		if got := PathOf(in); got != want {
			t.Errorf("PathOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"/a":         "/a",
		"/ツ":         "/%E3%83%84",
		"/%e3%83%84": "/%E3%83%84",
		"/%62%61%7A": "/baz",
		"/%2f":       "/%2F",
		"/%7e":       "/~",
		"/a b":       "/a%20b",
		"/%":         "/%",
		"/%4":        "/%4",
		"/*.gif$":    "/*.gif$",
		"/%2A":       "/%2A",
		"/\x7f":      "/%7F",
	} {
		if got := canonical(in); got != want {
			t.Errorf("canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		path, pattern string
		want          bool
	}{
		{"/", "", true},
		{"/abc", "/", true},
		{"/abc", "/abc$", true},
		{"/abcd", "/abc$", false},
		{"/a/b/c", "/*/c", true},
		{"/a/b/c", "/*/d", false},
		{"/a", "*", true},
		{"", "*$", true},
		{"/a.gif", "*.gif$", true},
		{"/a.gifx", "*.gif$", false},
		{"/x", "x", false},
		{"/aaa", "/a*a*a*a", false},
		{"/aaaa", "/a*a*a*a", true},
	}
	for _, c := range cases {
		if got := match(c.path, c.pattern); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.path, c.pattern, got, c.want)
		}
	}
}

func TestCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Cache{TTL: 48 * time.Hour, Now: func() time.Time { return now }}
	c.Put("https://Example.com:443", FromStatus(404, nil))
	if _, ok := c.Get("https://example.com:443"); !ok {
		t.Fatal("fresh entry missing (origin must be case-insensitive)")
	}
	if _, ok := c.Get("http://example.com:80"); ok {
		t.Fatal("scheme and port must be part of the key")
	}
	now = now.Add(24*time.Hour - time.Second)
	if _, ok := c.Get("https://example.com:443"); !ok {
		t.Fatal("entry expired early")
	}
	now = now.Add(time.Second)
	if _, ok := c.Get("https://example.com:443"); ok {
		t.Fatal("entry kept past 24 h although TTL asked for 48 h")
	}
	c.Put("https://b.example:443", FromStatus(503, nil))
	if _, ok := c.Get("https://b.example:443"); ok {
		t.Fatal("back-off policy cached")
	}
}

// A hostile file (the full 512,000 bytes of star patterns) is still read
// and answered correctly; BenchmarkHostileRobots shows it stays fast.
func hostileRobots() []byte {
	var b strings.Builder
	b.WriteString("User-agent: *\nAllow: /ok\n")
	for b.Len() < MaxSize-200 {
		b.WriteString("Disallow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b$\n")
	}
	b.WriteString("Disallow: /no\n")
	return []byte(b.String())
}

func TestHostileRobots(t *testing.T) {
	p := FromStatus(200, hostileRobots())
	long := "/" + strings.Repeat("a", 2000)
	if !p.Allowed("x", long) || p.Allowed("x", long+"b") || !p.Allowed("x", "/ok") || p.Allowed("x", "/no") {
		t.Error("wrong answers on the hostile file")
	}
}

func BenchmarkHostileRobots(b *testing.B) {
	p := FromStatus(200, hostileRobots())
	long := "/" + strings.Repeat("a", 2000)
	for b.Loop() {
		p.Allowed("x", long)
	}
}
