package runreport

import (
	"strings"
	"testing"
	"time"
)

// The hostile validators of issue 22: what a site may send as ETag or
// Last-Modified, and whether it is kept (and so ever echoed back in
// If-None-Match / If-Modified-Since).
func TestETag(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		keep     bool
	}{
		{"strong", `"abc123"`, true},
		{"weak", `W/"abc123"`, true},
		{"empty tag", `""`, true},
		{"punctuation allowed in etagc", `"a-b_c.d:e/f+g=h~"`, true},
		{"no header", ``, false},
		{"unquoted", `abc123`, false},
		{"lower-case weak prefix", `w/"abc"`, false},
		{"quote inside", `"ab"c"`, false},
		{"only an opening quote", `"abc`, false},
		{"space inside", `"a b"`, false},
		{"CR LF inside", "\"a\r\nSet-Cookie: x=1\"", false},
		{"LF inside", "\"a\nb\"", false},
		{"NUL", "\"a\x00b\"", false},
		{"tab", "\"a\tb\"", false},
		{"DEL", "\"a\x7fb\"", false},
		{"non-ASCII (obs-text)", "\"caf\xc3\xa9\"", false},
		{"invalid UTF-8", "\"\xff\xfe\"", false},
		{"list of tags", `"a", "b"`, false},
		{"at the limit", `"` + strings.Repeat("a", MaxValidatorLength-2) + `"`, true},
		{"one byte over", `"` + strings.Repeat("a", MaxValidatorLength-1) + `"`, false},
		{"64 KiB", `"` + strings.Repeat("a", 64<<10) + `"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ETag(tc.in)
			if tc.keep && got != tc.in || !tc.keep && got != "" {
				t.Errorf("ETag(%.40q) = %.40q, keep=%v", tc.in, got, tc.keep)
			}
		})
	}
}

func TestLastModified(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		keep     bool
	}{
		{"IMF-fixdate", "Tue, 15 Nov 1994 08:12:31 GMT", true},
		{"RFC 850 (obsolete, still an HTTP-date)", "Tuesday, 15-Nov-94 08:12:31 GMT", true},
		{"asctime (obsolete, still an HTTP-date)", "Tue Nov 15 08:12:31 1994", true},
		{"empty", "", false},
		{"not a date", "yesterday", false},
		{"RFC 3339", "1994-11-15T08:12:31Z", false},
		{"unix seconds", "784887151", false},
		{"CR LF appended", "Tue, 15 Nov 1994 08:12:31 GMT\r\nX: y", false},
		{"non-ASCII", "Tue, 15 Nov 1994 08:12:31 GMT\u00a0", false},
		{"too long", "Tue, 15 Nov 1994 08:12:31 GMT" + strings.Repeat(" ", MaxValidatorLength), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LastModified(tc.in)
			if tc.keep && got != tc.in || !tc.keep && got != "" {
				t.Errorf("LastModified(%.40q) = %.40q, keep=%v", tc.in, got, tc.keep)
			}
		})
	}
}

// A Last-Modified later than the response's own Date (or, without a Date,
// than when the crawler received it) is a clock the server got wrong:
// echoed as If-Modified-Since it would make the server answer 304 until
// that time, whatever the page became meanwhile.
func TestLastModifiedNotAfter(t *testing.T) {
	received := time.Date(2026, 8, 23, 12, 0, 0, 0, time.UTC)
	lm := "Sun, 23 Aug 2026 12:00:00 GMT"
	for _, tc := range []struct {
		name, lm, date string
		keep           bool
	}{
		{"equal to Date", lm, lm, true},
		{"before Date", "Sun, 23 Aug 2026 11:00:00 GMT", lm, true},
		{"after Date", "Sun, 23 Aug 2026 12:00:01 GMT", lm, false},
		{"far future, no Date", "Fri, 01 Jan 2100 00:00:00 GMT", "", false},
		{"no Date, equal to receipt", lm, "", true},
		{"no Date, a second after receipt", "Sun, 23 Aug 2026 12:00:01 GMT", "", false},
		{"Date unparsable: receipt decides", "Sun, 23 Aug 2026 11:00:00 GMT", "soon", true},
		{"server clock ahead: its Last-Modified and Date agree", "Fri, 01 Jan 2100 00:00:00 GMT", "Fri, 01 Jan 2100 00:00:00 GMT", true},
		{"unparsable", "soon", lm, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LastModifiedAsOf(tc.lm, tc.date, received)
			if tc.keep && got != tc.lm || !tc.keep && got != "" {
				t.Errorf("LastModifiedAsOf(%q, %q) = %q, keep=%v", tc.lm, tc.date, got, tc.keep)
			}
		})
	}
}
