package extract

import "strings"

// link reads a <link rel="canonical" href> start tag. Only one in the
// page's <head> counts, as search engines have it: a canonical link in the
// body is as likely to come from what visitors wrote (a comment) as from the
// site. The tag is in the head when the tree builder is in a head mode
// before it (a <link> in "after head" goes into the head too). A head that
// names two different canonical URLs names none.
func (x *extractor) link() {
	if x.b.stopped || x.b.im > imAfterHead {
		return
	}
	rel, _ := x.b.attrVal("rel")
	href, ok := x.b.attrVal("href")
	if !ok || !hasToken(string(rel), "canonical") {
		return
	}
	switch h := strings.TrimSpace(string(href)); {
	case x.canonicalConflict:
	case !x.canonicalSeen:
		x.p.Canonical, x.canonicalSeen = h, true
	case h != x.p.Canonical:
		x.p.Canonical, x.canonicalConflict = "", true
	}
}

// LinkCanonical returns the target of the rel="canonical" link in Link
// header values (RFC 8288: `<uri>; rel="canonical"`, several links
// separated by commas, rel a list of relation types), "" if there is
// none, or if they name two different ones. A value that does not parse
// is read up to where it breaks.
func LinkCanonical(values []string) string {
	found := ""
	for _, v := range values {
		for v != "" {
			var target string
			var rels []string
			var ok bool
			target, rels, v, ok = nextLink(v)
			if !ok {
				break
			}
			for _, r := range rels {
				if !strings.EqualFold(r, "canonical") {
					continue
				}
				if found != "" && found != target {
					return ""
				}
				found = target
			}
		}
	}
	return found
}

// nextLink reads one link-value of a Link header: the URI reference in
// angle brackets, then parameters up to the next comma outside quotes. It
// returns the relation types of its rel parameter and the rest of the
// header.
func nextLink(s string) (target string, rels []string, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t,")
	if !strings.HasPrefix(s, "<") {
		return "", nil, "", false
	}
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return "", nil, "", false
	}
	target, s = strings.TrimSpace(s[1:end]), s[end+1:]
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" || s[0] == ',' {
			return target, rels, s, true
		}
		if s[0] != ';' {
			return "", nil, "", false
		}
		var name, value string
		name, value, s = param(s[1:])
		if strings.EqualFold(name, "rel") && rels == nil {
			rels = strings.Fields(value)
		}
	}
}

// param reads `name=value` or `name="quoted \" value"` (or a bare name)
// from the start of s.
func param(s string) (name, value, rest string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, "=;,")
	if i < 0 {
		return strings.TrimSpace(s), "", ""
	}
	name, s = strings.TrimSpace(s[:i]), s[i:]
	if s[0] != '=' {
		return name, "", s
	}
	s = strings.TrimLeft(s[1:], " \t")
	if !strings.HasPrefix(s, `"`) {
		j := strings.IndexAny(s, ";,")
		if j < 0 {
			j = len(s)
		}
		return name, strings.TrimSpace(s[:j]), s[j:]
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return name, b.String(), s[i+1:]
		default:
			b.WriteByte(s[i])
		}
	}
	return name, b.String(), "" // unterminated: to the end
}
