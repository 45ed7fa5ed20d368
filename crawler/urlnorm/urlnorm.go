// Package urlnorm turns the URLs a crawl meets (the start URL, hrefs,
// Location headers) into one canonical form, so that the same page is
// recognised however it is written, and decides what belongs to the site.
package urlnorm

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"golang.org/x/net/idna"

	"github.com/lohisoft/crawl-operator/crawler/internal/percent"
)

// ErrIPv6 is returned for IPv6 literal hosts: LohiSoftBot makes no requests
// over IPv6.
var ErrIPv6 = errors.New("IPv6 addresses are not crawled (LohiSoftBot uses IPv4 only)")

// ParseStart validates and normalises the URL a crawl starts from: absolute
// http(s), a host, no IPv6 literal, no credentials (the bot never logs in).
func ParseStart(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("invalid URL %q: scheme must be http or https", raw)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("invalid URL %q: no host", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("invalid URL %q: credentials in URLs are not used", raw)
	}
	if IsIPv6Host(u.Host) {
		return nil, fmt.Errorf("invalid URL %q: %w", raw, ErrIPv6)
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return nil, fmt.Errorf("invalid URL %q: bad port", raw)
	}
	n := Normalize(u)
	if !validHost(n.Hostname()) {
		return nil, fmt.Errorf("invalid URL %q: bad host name", raw)
	}
	return n, nil
}

// IsIPv6Host reports whether a URL host (with or without port) is an IPv6
// literal, including the bracketed form and IPv4-mapped addresses.
func IsIPv6Host(host string) bool {
	h := host
	if strings.HasPrefix(h, "[") {
		return true
	}
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	return strings.Contains(h, ":")
}

func validPort(p string) bool {
	if p = strings.TrimLeft(p, "0"); len(p) > 5 {
		return false
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n > 0 && n < 65536
}

// Normalize returns a canonical copy of an absolute URL:
//   - scheme and host lower-cased, a trailing dot on the host removed, the
//     default port dropped;
//   - fragment removed (it never reaches the server);
//   - empty path made "/";
//   - percent-encoding canonical: unreserved characters decoded, other
//     escapes upper-cased, so "/%7Ea" and "/~a" are one page;
//   - then, after that decoding, dot segments removed (RFC 3986 §6.2.2
//     order, remove_dot_segments of §5.2.4), so "/%2e%2e/x", "/.%2e/x"
//     and "/a/../x" are all "/x": the path the crawler requests, and
//     matches robots.txt against, has no "." or ".." segment that a
//     server would resolve differently;
//   - in the query, spaces, control and non-ASCII octets and '"', '\”,
//     '<', '>' percent-encoded (as browsers send them, and as robots.txt
//     matching compares them);
//   - an empty query ("?") dropped.
//
// Empty segments ("//") and encoded slashes ("%2F") are kept: they are
// different URLs to RFC 3986 and to some servers (robots.Policy.Allowed
// allows for the servers that merge them). Escapes are decoded once:
// "%252e" is "%2e" to the server, not a dot. The query is kept as written
// apart from its escapes, because parameter order can matter and dots
// there are data.
func Normalize(u *url.URL) *url.URL {
	n := *u
	n.User = nil
	n.Fragment, n.RawFragment = "", ""
	n.Scheme = strings.ToLower(n.Scheme)
	host := strings.TrimSuffix(strings.ToLower(n.Hostname()), ".")
	// Internationalised names travel as punycode (what DNS answers for).
	if a, err := idna.Lookup.ToASCII(host); err == nil {
		host = a
	} else if strings.Contains(host, "xn--") {
		// A label that claims to be punycode and is not names no host a
		// browser connects to (other errors are the stricter rules of
		// lookup, such as "_", which DNS does not mind).
		host = ""
	}
	// A host that ends in a number is an IPv4 address however it is
	// written ("0x7f.1", "2130706433"): written as browsers connect to it.
	if a, numeric, ok := ipv4(host); numeric && ok {
		host = a
	}
	port := strings.TrimLeft(n.Port(), "0")
	if port == "" && n.Port() != "" {
		port = "0"
	}
	if port == DefaultPort(n.Scheme) {
		port = ""
	}
	if port != "" {
		n.Host = net.JoinHostPort(host, port)
	} else {
		n.Host = host
	}
	p := percent.RemoveDotSegments(canonicalEscapes(n.EscapedPath()))
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	setEscapedPath(&n, p)
	n.RawQuery = encodeRaw(canonicalEscapes(n.RawQuery))
	n.ForceQuery = false
	return &n
}

// validHost accepts DNS names (letters, digits, '-' inside and '_' in
// labels of 1–63 octets) and IPv4 addresses in dotted-decimal form (as
// Normalize writes every address); a host that ends in a number but is no
// address ("1.2.3.4.5") is neither.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if a, numeric, ok := ipv4(h); numeric {
		return ok && a == h
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// DefaultPort is the port a scheme implies.
func DefaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// Origin is a site's identity: scheme://host:port, port always written.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = DefaultPort(strings.ToLower(u.Scheme))
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), port)
}

// SameSite reports whether two URLs are on the same scheme+host+port.
func SameSite(a, b *url.URL) bool { return Origin(a) == Origin(b) }

// Resolve turns an href found on page base into a normalised absolute URL,
// the one a browser requests for it (browserForm). It returns ok=false for
// links the crawler cannot follow: other schemes (mailto:, javascript:,
// data:, ...), hosts with credentials, IPv6 hosts and references no browser
// makes a URL of.
func Resolve(base *url.URL, href string) (u *url.URL, ok bool) {
	href, ok = browserForm(strings.ToLower(base.Scheme), href)
	if !ok {
		return nil, false
	}
	ref, err := url.Parse(href)
	if err != nil {
		return nil, false
	}
	// Decode unreserved escapes before resolving, so that the dot segments
	// ResolveReference removes are all of them ("%2e%2e" included) and
	// "/a/%2e%2e/../x" is "/x", as a server that decodes first sees it.
	b := *base
	if b.Opaque == "" {
		setEscapedPath(&b, canonicalEscapes(b.EscapedPath()))
	}
	if ref.Opaque == "" {
		setEscapedPath(ref, canonicalEscapes(ref.EscapedPath()))
	}
	return checked(b.ResolveReference(ref))
}

// Absolute reads a URL written in full, as a sitemap's <loc> (and a
// robots.txt Sitemap line) must be: "http://" or "https://" (any case)
// and the rest, around it only white space. Anything else (a relative
// reference, "http:/x", another scheme) is ok=false: it names no URL by
// itself, and the crawler makes none up from it. So is one with a tab, a
// line break or another control character inside: a browser would drop
// the tab ("/a\tb" is "/ab"), a URL that is not written there.
func Absolute(s string) (*url.URL, bool) {
	s = strings.TrimSpace(s)
	scheme, rest, ok := splitScheme(s)
	if !ok || !isSpecial(scheme) || !strings.HasPrefix(rest, "//") || strings.ContainsFunc(s, isControl) {
		return nil, false
	}
	return Resolve(&url.URL{Scheme: scheme}, s)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checked normalises an absolute URL the crawler may request, or says it
// may not.
func checked(abs *url.URL) (*url.URL, bool) {
	if abs.Scheme != "http" && abs.Scheme != "https" {
		return nil, false
	}
	if u := abs.User; u != nil && u.Username() == "" {
		if pw, set := u.Password(); !set || pw == "" {
			abs.User = nil // "http://@host", "http://:@host": no credentials
		}
	}
	if abs.Host == "" || abs.User != nil || IsIPv6Host(abs.Host) {
		return nil, false
	}
	if p := abs.Port(); p != "" && !validPort(p) {
		return nil, false
	}
	n := Normalize(abs)
	if !validHost(n.Hostname()) {
		return nil, false
	}
	return n, true
}

// setEscapedPath sets u's path from its escaped form p, keeping p as the
// wire form. A p that does not unescape leaves u as it was.
func setEscapedPath(u *url.URL, p string) {
	unesc, err := url.PathUnescape(p)
	if err != nil {
		return
	}
	u.Path, u.RawPath = unesc, ""
	if u.EscapedPath() != p {
		u.RawPath = p
	}
}

// backslashesToSlashes reads "\" as "/" before the query and fragment, as
// browsers do for http(s) URLs (WHATWG URL standard): a link written
// "\a\b" is requested as "/a/b" by every visitor, so the crawler requests
// (and checks robots.txt for) the same. "\\host\x" is then a link to
// another host, as it is in a browser.
func backslashesToSlashes(href string) string {
	end := strings.IndexAny(href, "?#")
	if end < 0 {
		end = len(href)
	}
	if !strings.Contains(href[:end], `\`) {
		return href
	}
	return strings.ReplaceAll(href[:end], `\`, "/") + href[end:]
}

// encodeRaw percent-encodes the octets of a query that browsers encode
// (the URL Standard's special-query percent-encode set): controls, space,
// DEL, non-ASCII, and '"', '\”, '<' and '>', so the crawler asks for the
// query a visitor's browser asks for.
func encodeRaw(s string) string {
	const upperHex = "0123456789ABCDEF"
	raw := func(c byte) bool { return c > 0x20 && c < 0x7F && !percent.EncodedInQuery(c) }
	i := 0
	for i < len(s) && raw(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if c := s[i]; raw(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex[c>>4])
			b.WriteByte(upperHex[c&15])
		}
	}
	return b.String()
}

// canonicalEscapes decodes percent-encoded unreserved characters and
// upper-cases the hex digits of the other escapes. An escape that would
// complete a stray "%" before it ("%0%61" would become "%0a") stays
// encoded, so that the result is stable when normalised again.
func canonicalEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && percent.IsHex(s[i+1]) && percent.IsHex(s[i+2]) {
			v := percent.Unhex(s[i+1])<<4 | percent.Unhex(s[i+2])
			if percent.IsUnreserved(v) && !completesEscape(b, v) {
				b = append(b, v)
			} else {
				b = append(b, '%', toUpper(s[i+1]), toUpper(s[i+2]))
			}
			i += 2
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// completesEscape reports whether appending c to b would turn a stray "%"
// at its end into a %XX escape.
func completesEscape(b []byte, c byte) bool {
	if !percent.IsHex(c) {
		return false
	}
	n := len(b)
	return n >= 1 && b[n-1] == '%' || n >= 2 && b[n-2] == '%' && percent.IsHex(b[n-1])
}

func toUpper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
