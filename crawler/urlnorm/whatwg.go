package urlnorm

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/lohisoft/crawl-operator/crawler/internal/percent"
)

// Browsers read an href with the WHATWG URL Standard's parser, net/url
// with RFC 3986's grammar. The two name the same resource for ordinary
// links and part on the forms below, where a visitor's browser decides
// what the link means: the crawler must request what the browser would
// (crawler/urlnorm/whatgw_test.go runs the standard's own test data).

// isSpecial reports whether a scheme is one the crawler requests; the
// standard parses these "special" schemes by their own rules.
func isSpecial(scheme string) bool { return scheme == "http" || scheme == "https" }

// browserForm rewrites an href found on an http(s) page (baseScheme) into
// the RFC 3986 reference that names what a browser makes of it, or ok=false
// when a browser makes no URL of it either (a host that cannot be one).
//
//   - C0 controls and spaces around it are trimmed, tabs and newlines
//     inside removed, and "\" before the query or fragment read as "/".
//   - A scheme equal to the page's without "//" names no host: "http:x",
//     "http:/x" and "http:" are relative to the page.
//   - After any other http(s) scheme, and before a scheme-relative
//     authority, the number of slashes does not matter: "https:x",
//     "https:/x" and "///x" name the host x.
//   - A first path segment holding a colon that does not start a scheme
//     (":a", "[1:2]") is a path, which RFC 3986 writes "./:a".
//   - Other C0 controls and DEL are percent-encoded, as the standard does in
//     a path, query or fragment (net/url refuses them raw).
//   - Percent escapes in the host are decoded (the host's name is then
//     checked like any other).
//   - The fragment is dropped: it is never sent.
func browserForm(baseScheme, href string) (string, bool) {
	href = strings.Trim(href, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	href = removeTabsAndNewlines(href)
	href = backslashesToSlashes(href)
	rest, authority := href, false
	if scheme, after, ok := splitScheme(href); ok {
		switch {
		case !isSpecial(scheme):
			return href, true // not followed; net/url says so
		case scheme == baseScheme && !strings.HasPrefix(after, "//"):
			rest = after // relative to the page
		default:
			rest, authority = scheme+"://"+strings.TrimLeft(after, "/"), true
		}
	}
	if !authority {
		switch {
		case strings.HasPrefix(rest, "//"):
			rest, authority = "//"+strings.TrimLeft(rest, "/"), true
		case strings.ContainsRune(firstSegment(rest), ':'):
			rest = "./" + rest
		}
	}
	// The fragment never reaches the server, and net/url refuses one with
	// a stray "%", which a browser keeps as written.
	rest, _, _ = strings.Cut(rest, "#")
	rest = escapeControls(rest)
	if authority {
		return decodeHost(rest)
	}
	return rest, true
}

// splitScheme returns an href's scheme, lower-cased, and what follows its
// colon, when it starts with one (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
// ":").
func splitScheme(href string) (scheme, rest string, ok bool) {
	for i := 0; i < len(href); i++ {
		c := href[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(href[:i]), href[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// firstSegment is the part of a relative reference before its first "/",
// "?" or "#".
func firstSegment(ref string) string {
	if i := strings.IndexAny(ref, "/?#"); i >= 0 {
		return ref[:i]
	}
	return ref
}

// removeTabsAndNewlines drops ASCII tab, LF and CR anywhere, byte-wise:
// strings.Map would turn invalid UTF-8 into U+FFFD and change the URL.
func removeTabsAndNewlines(s string) string {
	if !strings.ContainsAny(s, "\t\n\r") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

// escapeControls percent-encodes C0 controls and DEL.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)|0x100, 16)[1:]))
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// decodeHost percent-decodes the host of a reference with an authority
// ("scheme://…" or "//…"). A host whose escapes decode to what no host
// may hold (a delimiter, a control, a space, "%") is no URL, to a browser
// either.
func decodeHost(ref string) (string, bool) {
	start := strings.Index(ref, "//") + 2
	end := start + strings.IndexAny(ref[start:]+"/", "/?#")
	auth := ref[start:end]
	at := strings.LastIndexByte(auth, '@') + 1
	host, port := auth[at:], ""
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host, "]") {
		host, port = host[:i], host[i:]
	}
	if !strings.Contains(host, "%") {
		return ref, true
	}
	dec, err := url.PathUnescape(host)
	if err != nil || strings.ContainsAny(dec, "\x00\t\n\r #%/:<>?@[\\]^|\x7f") {
		return "", false
	}
	return ref[:start] + auth[:at] + dec + port + ref[end:], true
}

// ipv4 reads a host that ends in a number as the standard does (its IPv4
// parser: one to four dot-separated parts, each decimal, 0x hexadecimal or
// 0-led octal, the last filling the remaining bytes; a trailing dot
// allowed): "0x7f.1" and "2130706433" are 127.0.0.1. numeric is false for
// a host name; ok is false for a number that is no address ("1.2.3.4.5",
// "256.256.256.256"), which no browser requests.
func ipv4(host string) (addr string, numeric, ok bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if last := parts[len(parts)-1]; !isNumber(last) {
		return "", false, false
	}
	if len(parts) > 4 {
		return "", true, false
	}
	var n uint64
	for i, p := range parts {
		v, ok := ipv4Number(p)
		if !ok {
			return "", true, false
		}
		if i < len(parts)-1 {
			if v > 255 {
				return "", true, false
			}
			n = n<<8 | v
			continue
		}
		rem := uint(8 * (5 - len(parts)))
		if v >= 1<<rem {
			return "", true, false
		}
		n = n<<rem | v
	}
	return strconv.FormatUint(n>>24, 10) + "." + strconv.FormatUint(n>>16&255, 10) + "." +
		strconv.FormatUint(n>>8&255, 10) + "." + strconv.FormatUint(n&255, 10), true, true
}

// isNumber reports whether a label is all decimal digits, or "0x" and
// hexadecimal digits: the labels that make a host an IPv4 address.
func isNumber(label string) bool {
	if label == "" {
		return false
	}
	if strings.HasPrefix(label, "0x") || strings.HasPrefix(label, "0X") {
		for i := 2; i < len(label); i++ {
			if !percent.IsHex(label[i]) {
				return false
			}
		}
		return true
	}
	return strings.Trim(label, "0123456789") == ""
}

// ipv4Number is one part of an IPv4 host, up to 2^32 (more fails).
func ipv4Number(p string) (uint64, bool) {
	if p == "" {
		return 0, false // "1..2": an empty part is no number
	}
	base := 10
	switch {
	case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
		p, base = p[2:], 16
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	if p == "" {
		return 0, true
	}
	v, err := strconv.ParseUint(p, base, 64)
	return v, err == nil && v <= 1<<32
}
