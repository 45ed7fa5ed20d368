package searchui

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"

	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
)

// MaxDisplayURL is how many characters DisplayURL shows at most, unless the
// host alone takes more: a host is never shortened.
const MaxDisplayURL = 72

// minDisplayPath is how many characters the path and query keep at least,
// however long the host.
const minDisplayPath = 24

// ellipsis marks what DisplayURL left out. It cannot be part of a URL
// shown: a URL holds it only percent-encoded, and DisplayURL never decodes
// punctuation.
const ellipsis = "…"

// DisplayURL is a page's URL as a result shows it under the title, for
// reading; the link keeps the exact URL. It shows the host as stored and
// the path and query, and nothing that could make it read as another
// address:
//
//   - "https://" is left out; "http://" stays, so a page that is not
//     served encrypted says so;
//   - the host is shown in its ASCII form (an internationalised name as
//     punycode, as the index stores it), whole, with its port unless that
//     is the scheme's default; "www." stays, it names another host;
//   - user information ("user@") and the fragment are left out: neither
//     names another page;
//   - the path of the root ("/") is left out when there is no query;
//   - percent-encoded letters are decoded for reading, word by word (runs
//     between ASCII punctuation), only where that cannot mislead (see
//     readable); everything else stays encoded;
//   - a path and query longer than the room left after the host lose their
//     middle, marked with "…": whole segments where possible (the first and
//     the last ones stay), else characters.
//
// Anything that is not an absolute http or https URL (see LinkURL) is
// shown as it is, shortened in the middle when long.
func DisplayURL(raw string) string {
	if _, ok := LinkURL(raw); !ok {
		return elide(raw, MaxDisplayURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return elide(raw, MaxDisplayURL)
	}
	prefix := ""
	scheme := strings.ToLower(u.Scheme)
	if scheme == "http" {
		prefix = "http://"
	}
	host := strings.ToLower(u.Hostname())
	if !isASCII(host) {
		a, err := idna.Lookup.ToASCII(host)
		if err != nil || !isASCII(a) {
			// Not a name DNS could answer for: shown escaped, so that
			// no look-alike letters pass for another host.
			return elide(escapeBytes(raw), MaxDisplayURL)
		}
		host = a
	}
	if strings.Contains(u.Host, "]") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && p != urlnorm.DefaultPort(scheme) {
		host += ":" + p
	}
	rest := u.EscapedPath()
	if u.RawQuery != "" || u.ForceQuery {
		rest += "?" + escapeBytes(u.RawQuery)
	}
	if rest == "/" || rest == "" {
		return prefix + host
	} else if rest[0] != '/' {
		rest = "/" + rest
	}
	room := max(MaxDisplayURL-utf8.RuneCountInString(prefix+host), minDisplayPath)
	return prefix + host + shorten(readable(rest), room)
}

// readable decodes the percent-encoded letters of s, one word at a time:
// a word is a run between ASCII characters other than letters, digits and
// '%'. A word is decoded only when every one of its encoded characters is
// a letter (or a combining mark after one) and the word as decoded
//
//   - holds only left-to-right letters (no Hebrew or Arabic letters, which
//     would reorder the address around them as it is displayed, and no
//     format or invisible characters: those are not letters, or are
//     default-ignorable like the Hangul fillers);
//   - holds no compatibility characters (fullwidth "ａ", ligatures): each
//     is its own NFKC form;
//   - is in NFC, so "a%CC%81" (a and a combining acute) never looks like
//     "%C3%A1" (á): one of them stays encoded;
//   - writes all its letters, the ASCII ones included, in one script, so
//     a Cyrillic "а" among Latin letters stays encoded.
//
// Escapes of ASCII characters ("%2F", "%20", "%3F") are never decoded:
// they would read as the characters they stand for, which mean something
// else in a URL. The host is not passed through this.
func readable(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexFunc(s, isWordRune)
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexFunc(s, func(r rune) bool { return !isWordRune(r) })
		if j < 0 {
			j = len(s)
		}
		b.WriteString(decodeWord(s[:j]))
		s = s[j:]
	}
	return b.String()
}

func isWordRune(r rune) bool {
	return r == '%' || r >= utf8.RuneSelf || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// decodeWord returns word with its encoded non-ASCII letters decoded, or
// word unchanged when they may not all be (see readable).
func decodeWord(word string) string {
	if !strings.Contains(word, "%") {
		return word
	}
	var b strings.Builder
	script := ""
	prevLetter := false
	for i := 0; i < len(word); {
		if c, ok := hexByte(word, i); ok && c >= utf8.RuneSelf {
			// A run of encoded non-ASCII octets.
			var octets []byte
			for ; ; i += 3 {
				c, ok := hexByte(word, i)
				if !ok || c < utf8.RuneSelf {
					break
				}
				octets = append(octets, c)
			}
			if !utf8.Valid(octets) {
				return word
			}
			for _, r := range string(octets) {
				if !readableRune(r, prevLetter) || !sameScript(&script, r) {
					return word
				}
				prevLetter = true
				b.WriteRune(r)
			}
			continue
		}
		if _, ok := hexByte(word, i); ok { // an ASCII character's escape stays
			b.WriteString(word[i : i+3])
			i += 3
			prevLetter = false
			continue
		}
		r, size := utf8.DecodeRuneInString(word[i:])
		if r >= utf8.RuneSelf { // not from EscapedPath or escapeBytes
			return word
		}
		if unicode.IsLetter(r) && !sameScript(&script, r) {
			return word
		}
		prevLetter = unicode.IsLetter(r)
		b.WriteRune(r)
		i += size
	}
	out := b.String()
	if !norm.NFC.IsNormalString(out) {
		return word
	}
	return out
}

// readableRune is whether r may be shown decoded: a left-to-right letter,
// or a combining mark right after a letter; never default-ignorable, never
// a compatibility character.
func readableRune(r rune, afterLetter bool) bool {
	if unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || norm.NFKC.String(string(r)) != string(r) {
		return false
	}
	p, _ := bidi.LookupRune(r)
	switch {
	case unicode.IsLetter(r):
		return p.Class() == bidi.L
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r):
		return afterLetter && (p.Class() == bidi.NSM || p.Class() == bidi.L)
	}
	return false
}

// sameScript records the script of the first letter in *script and
// reports whether letter r is in it. Marks and other characters of no one
// script (Common, Inherited) fit any.
func sameScript(script *string, r rune) bool {
	if unicode.Is(unicode.Common, r) || unicode.Is(unicode.Inherited, r) {
		return true
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			if *script == "" {
				*script = name
			}
			return *script == name
		}
	}
	return false
}

// hexByte decodes the escape "%XX" at s[i:].
func hexByte(s string, i int) (byte, bool) {
	if i+2 >= len(s) || s[i] != '%' {
		return 0, false
	}
	hi, ok1 := unhex(s[i+1])
	lo, ok2 := unhex(s[i+2])
	return hi<<4 | lo, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// escapeBytes percent-encodes what a stored URL should not hold raw:
// spaces, control characters and non-ASCII octets (the crawler's canonical
// form has none).
func escapeBytes(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// shorten fits a path and query (starting with "/") into room characters.
// It keeps the first segment and as many of the last segments as fit,
// with "/…/" for the segments between; when even the first and the last
// do not fit, it keeps the start and the end of rest around "…".
func shorten(rest string, room int) string {
	if utf8.RuneCountInString(rest) <= room {
		return rest
	}
	path, query, hasQuery := strings.Cut(rest, "?")
	segs := strings.Split(path[1:], "/")
	if len(segs) >= 3 {
		last := segs[len(segs)-1]
		if hasQuery {
			last += "?" + query
		}
		head := "/" + segs[0] + "/" + ellipsis
		tail := "/" + last
		if utf8.RuneCountInString(head+tail) <= room {
			for k := len(segs) - 2; k > 1; k-- {
				longer := "/" + segs[k] + tail
				if utf8.RuneCountInString(head+longer) > room {
					break
				}
				tail = longer
			}
			return head + tail
		}
	}
	return elide(rest, room)
}

// elide keeps the start and the end of s, n characters in all with the "…"
// between them. It never cuts a "%XX" escape apart, and the end never
// starts with a combining mark, which would join the "…".
func elide(s string, n int) string {
	runes := []rune(s)
	if len(runes) <= n {
		return s
	}
	n = max(n, 3)
	head := (n - 1) / 2
	tail := len(runes) - (n - 1 - head)
	for k := 1; k <= 2 && head-k >= 0; k++ {
		if runes[head-k] == '%' {
			head -= k
			break
		}
	}
	for k := 1; k <= 2 && tail-k >= 0; k++ {
		if runes[tail-k] == '%' {
			tail += 3 - k
			break
		}
	}
	for tail < len(runes) && unicode.In(runes[tail], unicode.Mn, unicode.Mc, unicode.Me) {
		tail++
	}
	return string(runes[:head]) + ellipsis + string(runes[tail:])
}
