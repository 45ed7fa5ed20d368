package robots

import (
	"strings"

	"github.com/lohisoft/crawl-operator/crawler/internal/percent"
)

// normalisePattern and normalisePath put a robots.txt pattern and a URL path
// into one canonical octet form before matching, as RFC 9309 §2.2.2 asks:
//   - octets outside US-ASCII (UTF-8 written directly in robots.txt or in a
//     link) are percent-encoded, so "/ツ" and "/%E3%83%84" are the same path;
//   - percent-encoded unreserved characters (ALPHA, DIGIT, "-", ".", "_",
//     "~") are decoded, so "/%62%61%7A" and "/baz" are the same path;
//   - other percent-encodings stay encoded (an encoded "/" is not a path
//     separator) with upper-case hex digits;
//   - spaces and control octets are percent-encoded, and in the query the
//     octets browsers encode there (percent.EncodedInQuery);
//   - in the query, ':', '/', '?' and '@' are taken raw whether written
//     raw or encoded: RFC 3986 allows them raw there, where they delimit
//     nothing, so "?u=https://a.b" and "?u=https%3A%2F%2Fa.b" are one
//     query (RFC 9309 §2.2.2's example), while "&", "=" and the like keep
//     their encoding because it changes how the query splits.
//
// '*' and '$' are left alone, so the wildcards of a pattern survive and a
// literal "%2A" in a pattern stays a literal.
func normalisePattern(p string) string { return canonical(p) }

func normalisePath(p string) string { return canonical(p) }

const upperHex = "0123456789ABCDEF"

func canonical(s string) string {
	if !needsCanonical(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	inQuery := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '?':
			inQuery = true
			b.WriteByte(c)
		case c == '%' && i+2 < len(s) && percent.IsHex(s[i+1]) && percent.IsHex(s[i+2]):
			v := percent.Unhex(s[i+1])<<4 | percent.Unhex(s[i+2])
			if percent.IsUnreserved(v) || inQuery && (v == ':' || v == '/' || v == '?' || v == '@') {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(upperHex[v>>4])
				b.WriteByte(upperHex[v&15])
			}
			i += 2
		case c >= 0x80 || c <= 0x20 || c == 0x7F || inQuery && percent.EncodedInQuery(c):
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func needsCanonical(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || c >= 0x80 || c <= 0x20 || c == 0x7F || percent.EncodedInQuery(c) {
			return true
		}
	}
	return false
}
