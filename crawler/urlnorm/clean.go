package urlnorm

import (
	"net/url"
	"strings"

	"github.com/lohisoft/crawl-operator/crawler/internal/percent"
)

// Clean returns u without what names a visit rather than a resource, so
// that one page is one URL however it was linked:
//   - tracking query parameters: utm_* and gclid, dclid, fbclid, msclkid,
//     yclid, mc_cid, mc_eid, _ga, _gl;
//   - session ids: the ;jsessionid= path parameter (servlet containers),
//     the jsessionid and PHPSESSID query parameters, and sid when its value
//     looks like a session token (see sessionToken).
//
// Names are compared case-insensitively. Everything else is kept as
// written, other parameters in their order and spelling, since servers may
// care. u must be normalised (ParseStart, Resolve or Normalize); so is the
// result, and Clean of it changes nothing. u itself is not modified.
func Clean(u *url.URL) *url.URL {
	path, query := stripSessionParams(u.EscapedPath()), stripQuery(u.RawQuery)
	if path == u.EscapedPath() && query == u.RawQuery {
		return u
	}
	n := *u
	// Dropping a ";jsessionid=…" can leave a ".." segment ("/a/..;
	// jsessionid=1/x"): resolve it, as Normalize would.
	setEscapedPath(&n, percent.RemoveDotSegments(path))
	n.RawQuery = query
	return &n
}

// trackingParams are the query parameter names that only record where a
// visitor came from (compared lower-cased; utm_* is matched by prefix).
var trackingParams = map[string]bool{
	"gclid": true, "dclid": true, "fbclid": true, "msclkid": true, "yclid": true,
	"mc_cid": true, "mc_eid": true, "_ga": true, "_gl": true,
	"jsessionid": true, "phpsessid": true,
}

// dropParam reports whether a query parameter (name=value, as written)
// is tracking or a session id.
func dropParam(param string) bool {
	name, value, _ := strings.Cut(param, "=")
	if strings.Contains(name, "%") {
		if d, err := url.QueryUnescape(name); err == nil {
			name = d
		}
	}
	name = strings.ToLower(name)
	switch {
	case trackingParams[name], strings.HasPrefix(name, "utm_"):
		return true
	case name == "sid":
		return sessionToken(value)
	}
	return false
}

// sessionToken reports whether a sid value looks like a session token
// rather than a site, station or section id: at least 16 characters, all
// ASCII letters, digits, '-' or '_', with at least one letter and one
// digit (phpBB's 32 hex digits, most frameworks' random ids). "sid=42",
// "sid=news" and "sid=summer-sale" stay.
func sessionToken(v string) bool {
	if len(v) < 16 {
		return false
	}
	letter, digit := false, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case '0' <= c && c <= '9':
			digit = true
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			letter = true
		case c == '-' || c == '_':
		default:
			return false
		}
	}
	return letter && digit
}

// stripQuery drops tracking and session parameters from a raw query,
// keeping the others byte for byte and in order.
func stripQuery(q string) string {
	if q == "" {
		return q
	}
	params := strings.Split(q, "&")
	kept := params[:0]
	for _, p := range params {
		if !dropParam(p) {
			kept = append(kept, p)
		}
	}
	if len(kept) == len(params) {
		return q
	}
	return strings.Join(kept, "&")
}

// stripSessionParams removes ";jsessionid=…" path parameters (up to the
// next ';' or '/') from an escaped path, in any segment.
func stripSessionParams(p string) string {
	const name = ";jsessionid"
	if !strings.Contains(strings.ToLower(p), name) {
		return p
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(p, ';')
		if i < 0 {
			b.WriteString(p)
			return b.String()
		}
		b.WriteString(p[:i])
		p = p[i:]
		end := 1 + strings.IndexAny(p[1:], ";/")
		if end == 0 {
			end = len(p)
		}
		key, _, _ := strings.Cut(p[1:end], "=")
		if !strings.EqualFold(key, name[1:]) {
			b.WriteString(p[:end])
		}
		p = p[end:]
	}
}
