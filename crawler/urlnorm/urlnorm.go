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
	if len(p) > 5 {
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
//   - an empty query ("?") dropped.
//
// Dot segments are resolved by url.ResolveReference for relative links;
// the query is otherwise kept as written, because parameter order can
// matter to the server.
func Normalize(u *url.URL) *url.URL {
	n := *u
	n.User = nil
	n.Fragment, n.RawFragment = "", ""
	n.Scheme = strings.ToLower(n.Scheme)
	host := strings.TrimSuffix(strings.ToLower(n.Hostname()), ".")
	// Internationalised names travel as punycode (what DNS answers for).
	if a, err := idna.Lookup.ToASCII(host); err == nil {
		host = a
	}
	port := n.Port()
	if port == DefaultPort(n.Scheme) {
		port = ""
	}
	if port != "" {
		n.Host = net.JoinHostPort(host, port)
	} else {
		n.Host = host
	}
	p := canonicalEscapes(n.EscapedPath())
	if p == "" {
		p = "/"
	}
	if unesc, err := url.PathUnescape(p); err == nil {
		n.Path, n.RawPath = unesc, ""
		if n.EscapedPath() != p {
			n.RawPath = p
		}
	}
	n.RawQuery = canonicalEscapes(n.RawQuery)
	n.ForceQuery = false
	return &n
}

// validHost accepts DNS names (letters, digits, '-' inside and '_' in
// labels of 1–63 octets) and IPv4 literals.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
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

// Resolve turns an href found on page base into a normalised absolute URL.
// It returns ok=false for links the crawler cannot follow: other schemes
// (mailto:, javascript:, data:, ...), hosts with credentials, IPv6 hosts and
// malformed references.
func Resolve(base *url.URL, href string) (u *url.URL, ok bool) {
	href = strings.TrimSpace(href)
	// Browsers strip tabs and newlines anywhere in a URL.
	href = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, href)
	ref, err := url.Parse(href)
	if err != nil {
		return nil, false
	}
	abs := base.ResolveReference(ref)
	if abs.Scheme != "http" && abs.Scheme != "https" {
		return nil, false
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

// canonicalEscapes decodes percent-encoded unreserved characters and
// upper-cases the hex digits of the other escapes.
func canonicalEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && percent.IsHex(s[i+1]) && percent.IsHex(s[i+2]) {
			v := percent.Unhex(s[i+1])<<4 | percent.Unhex(s[i+2])
			if percent.IsUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteString(strings.ToUpper(s[i+1 : i+3]))
			}
			i += 2
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
