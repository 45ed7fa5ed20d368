// Package robots reads robots.txt the way RFC 9309 says a crawler must, and
// decides which URLs LohiSoftBot may fetch.
//
// github.com/temoto/robotstxt v1.1.2 is the parser the design names, but its
// answers are wrong in ways that break the promises made to site owners (a
// single odd line discards the whole file, ties go to the first rule, `*` is
// not anchored, 5xx becomes allow-all through FindGroup().Test(), ...). Its
// rule type is unexported, so no part of its parse → group → match pipeline
// can be reused on its own; this package therefore implements the pipeline,
// and temoto_test.go pins each of temoto's deviations against its raw answer
// so that a future temoto release that fixes them can take the work back.
//
// Line handling follows Google's reference parser (the implementation the
// RFC authors maintain), so that files written for Googlebot mean the same to
// LohiSoftBot.
package robots

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxSize is how much of a robots.txt file is parsed. RFC 9309 §2.5 requires
// at least 500 KiB; the rest is ignored.
const MaxSize = 512000

// maxLineLen matches Google's parser: longer lines are cut, not dropped, so a
// rule written on one enormous line still applies to its first 16 KiB.
const maxLineLen = 2083*8 - 1

type lineKind int

const (
	kindUnknown lineKind = iota
	kindUserAgent
	kindAllow
	kindDisallow
	kindSitemap
	kindCrawlDelay
)

type line struct {
	kind  lineKind
	value string // patterns are already normalised (see normalisePattern)
}

// Rules is a parsed robots.txt file. The zero value (and a nil *Rules)
// allows everything.
type Rules struct {
	lines []line
	// Sitemaps lists Sitemap: URLs, in file order.
	Sitemaps []string

	mu     sync.Mutex
	groups map[string]Group // Group results by lower-cased token
}

// Parse reads a robots.txt body. It never fails: RFC 9309 §2.2 asks crawlers
// to use whatever lines they can understand, so malformed lines are skipped
// one by one instead of discarding the file. Only the first MaxSize bytes are
// read; when the body is cut there, the cut-off last line is dropped, because
// a truncated Allow pattern would allow more than the owner wrote.
func Parse(body []byte) *Rules {
	if len(body) > MaxSize {
		body = body[:MaxSize]
		if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 {
			body = body[:i+1]
		} else {
			body = nil
		}
	}
	body = skipBOM(body)
	r := &Rules{}
	for len(body) > 0 {
		var raw []byte
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			raw, body = body[:i], body[i+1:]
		} else {
			raw, body = body, nil
		}
		if len(raw) > maxLineLen {
			raw = raw[:maxLineLen]
		}
		r.addLine(raw)
	}
	return r
}

// skipBOM drops a UTF-8 byte order mark, or the part of one that a broken
// editor left: Google's parser does the same, and a lone 0xEF 0xBB must not
// turn the first User-agent line into garbage.
func skipBOM(b []byte) []byte {
	bom := []byte{0xEF, 0xBB, 0xBF}
	i := 0
	for i < len(bom) && i < len(b) && b[i] == bom[i] {
		i++
	}
	return b[i:]
}

func (r *Rules) addLine(raw []byte) {
	key, value, ok := splitLine(string(raw))
	if !ok {
		return
	}
	switch k := classify(key); k {
	case kindUserAgent:
		r.lines = append(r.lines, line{kind: k, value: value})
	case kindAllow, kindDisallow:
		r.lines = append(r.lines, line{kind: k, value: normalisePattern(value)})
	case kindSitemap:
		if value != "" {
			r.Sitemaps = append(r.Sitemaps, value)
		}
	case kindCrawlDelay:
		r.lines = append(r.lines, line{kind: k, value: value})
	}
}

// splitLine returns the key and value of one line, without comment and
// surrounding whitespace. A '#' anywhere starts a comment (RFC 9309 §2.2).
// Like Google's parser it accepts a missing colon when the line is exactly
// two words ("Disallow /private").
func splitLine(s string) (key, value string, ok bool) {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	s = trimSpace(s)
	sep := strings.IndexByte(s, ':')
	if sep < 0 {
		sep = strings.IndexAny(s, " \t")
		if sep < 0 {
			return "", "", false
		}
		if strings.ContainsAny(trimSpace(s[sep:]), " \t") {
			return "", "", false
		}
	}
	key = trimSpace(s[:sep])
	if key == "" {
		return "", "", false
	}
	return key, trimSpace(s[sep+1:]), true
}

// trimSpace trims the bytes C's isspace accepts; strings.TrimSpace would
// also eat Unicode spaces, which are octets of a pattern here.
func trimSpace(s string) string {
	isSpace := func(c byte) bool {
		return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
	}
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// classify maps a key to its kind. Keys are case-insensitive (RFC 9309
// §2.2) and, like Google's parser, the common misspellings are accepted:
// owners who write "Useragent" or "Dissallow" mean it.
func classify(key string) lineKind {
	hasPrefix := func(p string) bool {
		return len(key) >= len(p) && strings.EqualFold(key[:len(p)], p)
	}
	switch {
	case hasPrefix("user-agent"), hasPrefix("useragent"), hasPrefix("user agent"):
		return kindUserAgent
	case hasPrefix("allow"):
		return kindAllow
	case hasPrefix("disallow"), hasPrefix("dissallow"), hasPrefix("dissalow"),
		hasPrefix("disalow"), hasPrefix("diasllow"), hasPrefix("disallaw"):
		return kindDisallow
	case hasPrefix("sitemap"), hasPrefix("site-map"):
		return kindSitemap
	case strings.EqualFold(key, "crawl-delay"), strings.EqualFold(key, "crawldelay"):
		return kindCrawlDelay
	}
	return kindUnknown
}

// ProductToken returns the part of a user-agent value that robots.txt
// matching uses: the leading run of letters, '-' and '_' (RFC 9309 §2.2.1).
// "LohiSoftBot/1.0 (+https://lohisoft.com/bot)" gives "LohiSoftBot".
func ProductToken(ua string) string {
	i := 0
	for i < len(ua) {
		c := ua[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			break
		}
		i++
	}
	return ua[:i]
}

// parseCrawlDelay accepts a non-negative number of seconds, with a fraction
// or a trailing "s" ("10s" is a common way of writing 10); anything else is
// ignored rather than discarding the file.
func parseCrawlDelay(v string) (time.Duration, bool) {
	v = strings.TrimSuffix(strings.TrimSpace(strings.ToLower(v)), "s")
	v = strings.TrimSpace(v)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f != f || f > 1e6 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}
