package runreport

import (
	"net/http"
	"strings"
	"time"
)

// MaxValidatorLength caps an ETag or Last-Modified the bot keeps. Real
// entity-tags are hashes or version numbers of a few dozen bytes and an
// HTTP-date is 29; a longer one is not kept, so it is never sent back, and
// 20 pages of validators stay a small part of a document.
const MaxValidatorLength = 1024

// ETag returns raw when it is one entity-tag as RFC 9110 §8.8.3 writes it
// (`"opaque"` or `W/"opaque"`, the opaque part visible ASCII other than
// `"`) and at most MaxValidatorLength bytes, else "". What is kept is
// what the bot echoes in If-None-Match, so nothing that could break out of
// a header (CR, LF, NUL, other controls) or that a server might read
// differently (non-ASCII obs-text, lists, unquoted tags) is kept: a page
// without a kept validator is simply fetched in full next time.
func ETag(raw string) string {
	if len(raw) > MaxValidatorLength {
		return ""
	}
	opaque := strings.TrimPrefix(raw, "W/")
	if len(opaque) < 2 || opaque[0] != '"' || opaque[len(opaque)-1] != '"' {
		return ""
	}
	for i := 1; i < len(opaque)-1; i++ {
		if c := opaque[i]; c < 0x21 || c == '"' || c > 0x7e {
			return ""
		}
	}
	return raw
}

// LastModified returns raw when it is an HTTP-date (RFC 9110 §5.6.7, the
// three forms http.ParseTime reads) of printable ASCII within
// MaxValidatorLength, else "". It is kept as received, because that is
// what If-Modified-Since should echo (RFC 9110 §13.1.3).
func LastModified(raw string) string {
	if len(raw) > MaxValidatorLength || strings.IndexFunc(raw, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		return ""
	}
	if _, err := http.ParseTime(raw); err != nil {
		return ""
	}
	return raw
}

// LastModifiedAsOf is LastModified for a response that carried the Date
// header date and was received at received: a Last-Modified later than
// the response's Date (RFC 9110 §8.8.2.1 forbids it), or later than its
// receipt when there is no usable Date, is not kept. Echoed as
// If-Modified-Since, a date in the future would make the server answer
// 304 until then, however the page changed.
func LastModifiedAsOf(raw, date string, received time.Time) string {
	lm := LastModified(raw)
	if lm == "" {
		return ""
	}
	t, _ := http.ParseTime(lm)
	limit := received
	if d, err := http.ParseTime(date); err == nil {
		limit = d
	}
	if t.After(limit) {
		return ""
	}
	return lm
}
