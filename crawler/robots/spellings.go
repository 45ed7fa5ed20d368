package robots

import (
	"slices"
	"strings"

	"github.com/lohisoft/crawl-operator/crawler/internal/percent"
)

// RFC 9309 matches robots.txt rules against the path the crawler sends. But
// the server decides which resource that path means, and common servers
// resolve paths that the rules, compared octet for octet, do not: nginx
// decodes "%2F" and "%2E" and resolves "/../", merges "//"; IIS reads "\"
// as "/" and drops trailing dots; Tomcat cuts ";jsessionid=…" and "..;".
// A link to "//private/x" is then the page "/private/x", and fetching it
// would ignore "Disallow: /private".
//
// So a URL is fetched only if every spelling a common server could resolve
// it to is allowed: the path as written, then the path as resolved with
// each combination of the quirks below (after RFC 3986 decoding of
// unreserved escapes and removal of dot segments, which every server
// does). If any spelling is disallowed, the URL is; an Allow can never
// allow more through another spelling.
//
// Patterns are not resolved: they are matched as written (after RFC 9309
// §2.2.2 encoding). Owners write "Disallow: /*//*" or "Disallow: /." to name
// exactly those spellings (duplicate-slash URLs, dotfiles); resolving them
// would turn such rules into "Disallow: /".
//
// The query is never touched: its dots and slashes are data. Escapes are
// decoded once, as servers do: "%252e" is the name "%2e", not a dot.
type quirk uint8

const (
	// quirkEncodedSlash: "%2F" is a "/" (nginx; IIS; Apache with
	// AllowEncodedSlashes On, where the file system then resolves "..").
	quirkEncodedSlash quirk = 1 << iota
	// quirkWindows: "\" and "%5C" are "/", and trailing dots and spaces of
	// a segment are dropped (IIS and other servers on Windows file systems:
	// "/admin./x" is "/admin/x").
	quirkWindows
	// quirkParams: ";" ends a segment's name (Tomcat, Jetty and other
	// servlet containers: "/page;jsessionid=1" is "/page", "..;" is "..").
	quirkParams
	// quirkMerge: runs of "/" are one, merged before dot segments are
	// resolved (nginx merge_slashes, Apache MergeSlashes, Tomcat): then
	// "/a//../b" is "/b", where RFC 3986 alone gives "/a/b".
	quirkMerge

	allQuirks = quirkEncodedSlash | quirkWindows | quirkParams | quirkMerge
)

// spellings returns target's path and query in RFC 9309 canonical form as
// written, followed by each different form a server resolves it to. A path
// with nothing a server would resolve has one spelling; none has more than
// 1 + 2⁴, each built in linear time, so a hostile site cannot make the
// check slow.
func spellings(target string) []string {
	written := normalisePath(PathOf(target))
	out := []string{written}
	p, query := written, ""
	if i := strings.IndexByte(written, '?'); i >= 0 {
		p, query = written[:i], written[i:]
	}
	relevant := relevantQuirks(p)
	// Every subset of the relevant quirks, the empty one (plain RFC 3986
	// resolution) last.
	for q := relevant; ; q = (q - 1) & relevant {
		if s := resolvePath(p, q) + query; !slices.Contains(out, s) {
			out = append(out, s)
		}
		if q == 0 {
			break
		}
	}
	return out
}

// relevantQuirks returns the quirks that can change path p (a canonical
// path: escapes of reserved octets upper-case).
func relevantQuirks(p string) quirk {
	var q quirk
	if strings.Contains(p, "%2F") {
		q |= quirkEncodedSlash
	}
	if strings.ContainsAny(p, `\.`) || strings.Contains(p, "%5C") || strings.Contains(p, "%20") {
		q |= quirkWindows
	}
	if strings.IndexByte(p, ';') >= 0 {
		q |= quirkParams
	}
	if strings.Contains(p, "//") || q&(quirkEncodedSlash|quirkWindows|quirkParams) != 0 {
		q |= quirkMerge // decoding slashes or cutting parameters can make "//"
	}
	return q
}

// resolvePath is the path a server with quirks q serves for canonical path
// p: slashes decoded, segments cut, slashes merged, then RFC 3986 dot
// segments removed. p has no query.
func resolvePath(p string, q quirk) string {
	if q&quirkEncodedSlash != 0 {
		p = strings.ReplaceAll(p, "%2F", "/")
	}
	if q&quirkWindows != 0 {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "%5C", "/"), `\`, "/")
	}
	if q&(quirkParams|quirkWindows) != 0 {
		segs := strings.Split(p, "/")
		for i, seg := range segs {
			if q&quirkParams != 0 {
				if j := strings.IndexByte(seg, ';'); j >= 0 {
					seg = seg[:j]
				}
			}
			if q&quirkWindows != 0 {
				seg = trimWindows(seg)
			}
			segs[i] = seg
		}
		p = strings.Join(segs, "/")
	}
	if q&quirkMerge != 0 && strings.Contains(p, "//") {
		var b strings.Builder
		b.Grow(len(p))
		for i := 0; i < len(p); i++ {
			if p[i] == '/' && i > 0 && p[i-1] == '/' {
				continue
			}
			b.WriteByte(p[i])
		}
		p = b.String()
	}
	return percent.RemoveDotSegments(p)
}

// trimWindows drops the trailing dots and spaces Windows ignores in a file
// name ("admin." and "admin%20" are "admin"). "." and "..", also with
// trailing spaces, stay dot segments; a name of dots only ("...") stays.
func trimWindows(seg string) string {
	s := seg
	for strings.HasSuffix(s, "%20") {
		s = s[:len(s)-3]
	}
	if s == "." || s == ".." {
		return s
	}
	t := s
	for {
		switch {
		case strings.HasSuffix(t, "."):
			t = t[:len(t)-1]
		case strings.HasSuffix(t, "%20"):
			t = t[:len(t)-3]
		default:
			if t == "" {
				return seg
			}
			return t
		}
	}
}
