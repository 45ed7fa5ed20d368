// Package site names sites and matches hosts against excluded domains. A site
// is one scheme+host+port: the unit of the crawl budget. A host is the unit
// of politeness: http:// and https:// of one host are two sites but one host.
package site

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Site is one scheme+host+port, normalised: lower-case scheme and host, no
// trailing dot, explicit port.
type Site struct {
	Scheme string
	Host   string
	Port   string
}

// String renders the site as scheme://host:port.
func (s Site) String() string {
	return s.Scheme + "://" + net.JoinHostPort(s.Host, s.Port)
}

// Parse returns the site a URL belongs to. It accepts what the CrawlTarget
// CRD accepts (http/https, DNS name or IPv4 host) and refuses everything else,
// so a manifest that slipped past validation cannot name a strange site.
func Parse(raw string) (Site, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Site{}, fmt.Errorf("parse %q: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	var defaultPort string
	switch scheme {
	case "http":
		defaultPort = "80"
	case "https":
		defaultPort = "443"
	default:
		return Site{}, fmt.Errorf("url %q: scheme must be http or https", raw)
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return Site{}, fmt.Errorf("url %q has no host", raw)
	}
	if strings.Contains(host, ":") {
		return Site{}, fmt.Errorf("url %q: IPv6 hosts are not crawled", raw)
	}
	port := u.Port()
	if port == "" {
		port = defaultPort
	}
	return Site{Scheme: scheme, Host: host, Port: port}, nil
}

// Secure is the https site a plain-HTTP site becomes when its start URL
// redirects there: the same host, both on their default ports
// (http://h:80 → https://h:443). ok is false for any other site: an
// upgrade that also changes the port or host is another site, and https
// has nothing to upgrade to.
func (s Site) Secure() (Site, bool) {
	if s.Scheme != "http" || s.Port != "80" {
		return Site{}, false
	}
	return Site{Scheme: "https", Host: s.Host, Port: "443"}, true
}

// Covers reports whether a crawl of s may index other: s itself or its
// Secure site. A CrawlTarget names http://h/ and the site upgrades every
// request to https://h/: the pages live there, and they are still that
// target's.
func (s Site) Covers(other Site) bool {
	up, ok := s.Secure()
	return other == s || ok && other == up
}

// Covered lists the sites s covers (Covers), s first, as strings.
func (s Site) Covered() []string {
	if up, ok := s.Secure(); ok {
		return []string{s.String(), up.String()}
	}
	return []string{s.String()}
}

// Crawled is the site a crawl of s says it crawled (reported, as
// scheme://host:port) when s covers it, and s otherwise: what a report
// claims beyond that is not the target's.
func (s Site) Crawled(reported string) Site {
	if r, err := Parse(reported); err == nil && s.Covers(r) {
		return r
	}
	return s
}

// IsSecureUpgrade reports whether a redirect from URL from to URL to only
// upgrades from's site to its Secure site.
func IsSecureUpgrade(from, to string) bool {
	a, err := Parse(from)
	if err != nil {
		return false
	}
	b, err := Parse(to)
	up, ok := a.Secure()
	return err == nil && ok && b == up
}

// HostOf returns the normalised host of a URL, or "" when the URL has none.
func HostOf(raw string) string {
	s, err := Parse(raw)
	if err != nil {
		return ""
	}
	return s.Host
}

// InDomain reports whether host is domain or one of its subdomains.
// "www.example.com" is in "example.com"; "notexample.com" is not.
func InDomain(host, domain string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	domain = strings.TrimSuffix(strings.ToLower(domain), ".")
	if host == "" || domain == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		// An address has no subdomains: 10.0.0.1 is not "in" 0.0.1.
		return host == domain
	}
	return host == domain || strings.HasSuffix(host, "."+domain)
}
