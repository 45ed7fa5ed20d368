// Package percent holds the octet tests of RFC 3986 percent-encoding that
// URL normalisation (urlnorm) and robots.txt matching (robots) both need,
// so the two agree on what an escape is and which octets it may decode to,
// and the RFC 3986 dot-segment removal both apply after decoding.
package percent

// IsHex reports whether c is a hexadecimal digit of a %XX escape.
func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Unhex returns the value of the hexadecimal digit c; c must satisfy IsHex.
func Unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// EncodedInQuery reports whether browsers percent-encode c, printable
// ASCII, in the query of an http(s) URL (the URL Standard's special-query
// percent-encode set, beyond controls and space): URL normalisation writes
// it encoded there, and robots.txt matching compares it encoded, so a
// pattern written with the raw character matches the URL requested.
func EncodedInQuery(c byte) bool { return c == '"' || c == '\'' || c == '<' || c == '>' }

// IsUnreserved reports whether c is an unreserved character of RFC 3986
// (ALPHA, DIGIT, "-", ".", "_", "~"): its escaped and raw forms are the
// same URL, so it is always written raw.
func IsUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
