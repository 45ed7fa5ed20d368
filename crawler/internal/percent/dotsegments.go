package percent

import "strings"

// RemoveDotSegments is remove_dot_segments of RFC 3986 §5.2.4: it resolves
// the "." and ".." segments of a path, written exactly as the RFC's
// algorithm so that the §5.4 examples come out as printed. A ".." above the
// root is dropped ("/../a" is "/a"), a final "." or ".." leaves a trailing
// slash ("/a/b/.." is "/a/"), empty segments are kept ("/a//b" stays).
//
// Only literal dots are dot segments: callers decode percent-encoded
// unreserved octets first (RFC 3986 §6.2.2 order), so that "%2e%2e" is
// seen as "..". An encoded slash ("%2F") is part of its segment. The path
// must not carry a query or fragment.
func RemoveDotSegments(in string) string {
	if !HasDotSegment(in) {
		return in
	}
	var out []byte
	for len(in) > 0 {
		switch {
		// A: a leading "../" or "./" (relative paths only) is dropped.
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		// B: "/./" or a final "/." becomes "/".
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		// C: "/../" or a final "/.." becomes "/" and the last output
		// segment goes, with the "/" before it.
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			out = dropLastSegment(out)
		case in == "/..":
			in = "/"
			out = dropLastSegment(out)
		// D: a path that is only "." or "..".
		case in == "." || in == "..":
			in = ""
		// E: move the first segment, with its leading "/" if any.
		default:
			i := 0
			if in[0] == '/' {
				i = 1
			}
			if j := strings.IndexByte(in[i:], '/'); j >= 0 {
				i += j
			} else {
				i = len(in)
			}
			out = append(out, in[:i]...)
			in = in[i:]
		}
	}
	return string(out)
}

func dropLastSegment(out []byte) []byte {
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] == '/' {
			return out[:i]
		}
	}
	return out[:0]
}

// HasDotSegment reports whether some segment of a path (already decoded:
// "%2e" is not a dot here) is "." or "..". After RemoveDotSegments of a
// path starting with "/", none is.
func HasDotSegment(path string) bool {
	for len(path) > 0 {
		seg := path
		rest := ""
		if i := strings.IndexByte(path, '/'); i >= 0 {
			seg, rest = path[:i], path[i+1:]
		}
		if seg == "." || seg == ".." {
			return true
		}
		path = rest
	}
	return false
}
