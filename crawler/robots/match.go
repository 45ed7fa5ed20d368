package robots

import (
	"strings"
	"time"
)

// Group is the set of rules that applies to one product token: the merge of
// every group naming it (RFC 9309 §2.2.1), or of every `*` group when none
// does.
type Group struct {
	rules []line
	// CrawlDelay is the Crawl-delay of the selected groups (the last one
	// given), and HasCrawlDelay tells whether there was one. Crawl-delay is
	// not part of RFC 9309; LohiSoftBot honours it as a politeness floor.
	CrawlDelay    time.Duration
	HasCrawlDelay bool
}

// Group selects the rules for a product token. Matching is a
// case-insensitive comparison of the token with the leading
// [A-Za-z_-] run of each User-agent value, never a prefix match: "L" does
// not name LohiSoftBot, "FooBot/2.1" names FooBot.
func (r *Rules) Group(token string) Group {
	if r == nil {
		return Group{}
	}
	key := strings.ToLower(token)
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := r.groups[key]; ok {
		return g
	}
	g := r.selectGroup(token)
	if r.groups == nil {
		r.groups = map[string]Group{}
	}
	if len(r.groups) < 16 { // the crawler asks for one token; the tester for a few
		r.groups[key] = g
	}
	return g
}

func (r *Rules) selectGroup(token string) Group {
	var (
		specific, global           Group
		inSpecific, inGlobal, sep  bool
		everSpecific               bool
		specificDelay, globalDelay *time.Duration
	)
	for _, l := range r.lines {
		switch l.kind {
		case kindUserAgent:
			// A User-agent line after rules starts a new group; consecutive
			// User-agent lines (and unknown lines between them) share one.
			if sep {
				inSpecific, inGlobal, sep = false, false, false
			}
			if isGlobalAgent(l.value) {
				inGlobal = true
			} else if strings.EqualFold(ProductToken(l.value), token) {
				inSpecific, everSpecific = true, true
			}
		case kindAllow, kindDisallow:
			if !inSpecific && !inGlobal {
				continue // rules before any User-agent belong to no group
			}
			sep = true
			if inSpecific {
				specific.rules = append(specific.rules, l)
			} else {
				global.rules = append(global.rules, l)
			}
		case kindCrawlDelay:
			// Deliberately does not end the group (it is not a rule).
			d, ok := parseCrawlDelay(l.value)
			if !ok {
				continue
			}
			if inSpecific {
				specificDelay = &d
			} else if inGlobal {
				globalDelay = &d
			}
		}
	}
	if everSpecific {
		if specificDelay != nil {
			specific.CrawlDelay, specific.HasCrawlDelay = *specificDelay, true
		}
		return specific
	}
	if globalDelay != nil {
		global.CrawlDelay, global.HasCrawlDelay = *globalDelay, true
	}
	return global
}

// isGlobalAgent accepts "*" and, like Google's parser, "* anything": owners
// who comment a wildcard line without '#' still mean everyone.
func isGlobalAgent(v string) bool {
	return v == "*" || (len(v) > 1 && v[0] == '*' && (v[1] == ' ' || v[1] == '\t'))
}

// Allowed reports whether the group lets the crawler fetch target, a URL or
// a path with optional query: whether the rules allow every spelling of it
// that a common server resolves it to (see spellings). "//private/x",
// "/%2e%2e/private/x" and "/a\..\private/x" are all "/private/x" to some
// server, so "Disallow: /private" forbids them all.
func (g Group) Allowed(target string) bool {
	for _, s := range spellings(target) {
		if !g.allowedPath(s) {
			return false
		}
	}
	return true
}

// allowedAsWritten is the RFC 9309 answer for target exactly as written,
// without asking what servers make of it.
func (g Group) allowedAsWritten(target string) bool {
	return g.allowedPath(normalisePath(PathOf(target)))
}

// allowedPath is RFC 9309 matching of one canonical path (with optional
// query): the longest matching pattern in octets wins; an allow wins a
// tie; no match (or only empty patterns) allows. "/robots.txt" is always
// allowed (RFC 9309 §2.2.2).
func (g Group) allowedPath(path string) bool {
	if path == "/robots.txt" || strings.HasPrefix(path, "/robots.txt?") {
		return true
	}
	allow, disallow := -1, -1
	for _, l := range g.rules {
		for _, p := range expand(l) {
			if len(p) == 0 || !match(path, p) {
				continue
			}
			if l.kind == kindAllow {
				allow = max(allow, len(p))
			} else {
				disallow = max(disallow, len(p))
			}
		}
	}
	return disallow <= allow
}

// expand returns the patterns one rule stands for. Like Google's parser, an
// Allow of ".../index.htm[l]" also allows its directory ("/dir/$"): a site
// that allows its index page means the directory URL too.
func expand(l line) []string {
	p := l.value
	if l.kind == kindAllow {
		if i := strings.LastIndexByte(p, '/'); i >= 0 && strings.HasPrefix(p[i:], "/index.htm") {
			return []string{p, p[:i+1] + "$"}
		}
	}
	return []string{p}
}

// Allowed is shorthand for r.Group(token).Allowed(target).
func (r *Rules) Allowed(token, target string) bool {
	return r.Group(token).Allowed(target)
}

// match reports whether pattern matches path from its first octet: '*'
// matches any run of octets and a final '$' anchors the end; every other
// octet (a '$' elsewhere included) is literal.
//
// The pattern is split at '*' into literal pieces: the first must start the
// path, each next one is taken at its leftmost occurrence after the
// previous one (leftmost is always the best choice, as it leaves the most
// path for what follows), and with '$' the last piece must end the path
// after them. That is linear in practice, so a hostile robots.txt full of
// stars cannot stall the crawler.
func match(path, pattern string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	if !strings.HasPrefix(path, pattern[:star]) {
		return false
	}
	pos := star
	rest := pattern[star+1:]
	for {
		next := strings.IndexByte(rest, '*')
		if next < 0 {
			break
		}
		piece := rest[:next]
		rest = rest[next+1:]
		if piece == "" {
			continue
		}
		i := strings.Index(path[pos:], piece)
		if i < 0 {
			return false
		}
		pos += i + len(piece)
	}
	// rest is the piece after the last '*'.
	if anchored {
		return len(path)-len(rest) >= pos && strings.HasSuffix(path, rest)
	}
	return strings.Contains(path[pos:], rest)
}

// PathOf extracts the path, params and query of a URL, as Google's parser
// does: no scheme parsing beyond "://", fragment removed, "/" when empty.
// Taking the raw text (rather than net/url's re-encoding) keeps the octets
// the server will see. Unlike Google's parser, a "\" also ends the host,
// as it does in browsers: "http://h\private" is "/\private" (which
// spellings reads as "//private").
func PathOf(raw string) string {
	start := 0
	if strings.HasPrefix(raw, "//") {
		start = 2
	}
	const pathStart = "/?;\\"
	early := indexAnyFrom(raw, pathStart, start)
	proto := strings.Index(raw[start:], "://")
	if proto >= 0 {
		proto += start
	}
	if early >= 0 && (proto < 0 || early < proto) {
		proto = -1
	}
	if proto < 0 {
		proto = start
	} else {
		proto += 3
	}
	p := indexAnyFrom(raw, pathStart, proto)
	if p < 0 {
		return "/"
	}
	hash := strings.IndexByte(raw[start:], '#')
	if hash >= 0 {
		hash += start
		if hash < p {
			return "/"
		}
	} else {
		hash = len(raw)
	}
	out := raw[p:hash]
	if out[0] != '/' {
		out = "/" + out
	}
	return out
}

func indexAnyFrom(s, chars string, from int) int {
	if from > len(s) {
		return -1
	}
	i := strings.IndexAny(s[from:], chars)
	if i < 0 {
		return -1
	}
	return i + from
}
