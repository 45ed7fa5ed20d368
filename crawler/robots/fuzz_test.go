package robots

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRobots throws arbitrary files, agents and URLs at the parser and the
// decision. Whatever the input: no panic, the same answer twice, robots.txt
// itself always allowed, a status the crawler backs off on never allowing,
// a file without any disallow-like line allowing everything, and the check
// of every server spelling never allowing what RFC 9309 matching of the URL
// as written forbids.
func FuzzRobots(f *testing.F) {
	f.Add([]byte("User-agent: *\nDisallow: /private\nAllow: /private/ok$\n"), "LohiSoftBot", "http://a.test/private/x")
	f.Add([]byte("\xEF\xBBUser-agent: foo\r\nDisallow: /*.php$\r\n"), "foo", "/x.php")
	f.Add([]byte("User-agent: LohiSoftBot\nCrawl-delay: 10s\nDisallow: /%E3%83%84\n# comment\nSitemap: http://x/s.xml"), "LohiSoftBot", "http://a.test/ツ?q=1#f")
	f.Add([]byte("user-agent FooBot\ndisallow /\nallow: /index.html\n"), "FooBot", "http://a.test/")
	f.Add([]byte("User-agent: * everyone\nDisallow: *\n"), "", "")
	f.Add([]byte("User-agent: *\nDisallow: /\nAllow: /public/\nDisallow: /public/secret$\n"), "x", "http://a.test/public/%2e%2e/x;y/..;/public//secret%2F.?q=/../")
	f.Add([]byte("User-agent: *\nDisallow: /admin/\n"), "x", `http://a.test\admin.\x`)
	f.Fuzz(func(t *testing.T, body []byte, agent, target string) {
		p := FromStatus(200, body)
		got := p.Allowed(agent, target)
		if again := FromStatus(200, body).Allowed(agent, target); again != got {
			t.Fatalf("non-deterministic: %v then %v", got, again)
		}
		if !p.Allowed(agent, "http://a.test/robots.txt") {
			t.Fatal("/robots.txt disallowed")
		}
		if FromStatus(503, body).Allowed(agent, target) || FromStatus(429, body).Allowed(agent, target) {
			t.Fatal("5xx/429 allowed a URL")
		}
		if !FromStatus(404, body).Allowed(agent, target) {
			t.Fatal("404 disallowed a URL")
		}
		lower := strings.ToLower(string(body))
		// "dis…" and "dia…" cover every spelling classify accepts as
		// Disallow ("diasllow" included, which a 3 s CI run found).
		if !strings.Contains(lower, "dis") && !strings.Contains(lower, "dia") && !got {
			t.Fatalf("disallowed without any disallow line: %q", body)
		}
		g := p.Group(agent)
		if got && !g.allowedAsWritten(target) {
			t.Fatalf("%q allowed although disallowed as written", target)
		}
		if g.CrawlDelay < 0 {
			t.Fatal("negative crawl-delay")
		}
	})
}

// FuzzMatch compares the linear-time matcher with a regular-expression
// reference built straight from the RFC's definition of '*' and '$'.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"/a/b/c", "/*/c"}, {"/fish.php", "/fish*.php$"}, {"/a$b", "/a$b"}, {"", "*$"}, {"/x", "x"}, {"/aaaa", "/a*a*a*a$"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, path, pattern string) {
		if !utf8.ValidString(path) || !utf8.ValidString(pattern) || len(pattern) > 64 || len(path) > 256 {
			return // the regexp reference works on runes; keep it comparable
		}
		var re strings.Builder
		re.WriteString(`^`)
		for i, r := range pattern {
			switch {
			case r == '*':
				re.WriteString(`.*`)
			case r == '$' && i == len(pattern)-1:
				re.WriteString(`$`)
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		want := regexp.MustCompile("(?s)" + re.String()).MatchString(path)
		if got := match(path, pattern); got != want {
			t.Fatalf("match(%q, %q) = %v, reference %v", path, pattern, got, want)
		}
	})
}
