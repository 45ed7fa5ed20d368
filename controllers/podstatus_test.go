package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The crawler's words reach conditions and Events from the last line of
// its log, whichever format it logs in.
func TestLastLine(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tt := range []struct{ log, want string }{
		{"crawler: bad input: bad port\n", "crawler: bad input: bad port"},
		{"level=INFO msg=start\ncrawler: final report: 403\n\n", "crawler: final report: 403"},
		{`{"time":"2026-12-01T10:00:00Z","level":"INFO","msg":"robots.txt"}` + "\n" +
			`{"time":"2026-12-01T10:00:01Z","level":"ERROR","msg":"bad input: invalid URL \"http://a.example:0/\": bad port"}` + "\n",
			`bad input: invalid URL "http://a.example:0/": bad port`},
		// Not a record: shown as it is.
		{`{"level":"ERROR"}`, `{"level":"ERROR"}`},
		{"{not json", "{not json"},
		{`{"msg":"` + long + `"}`, long[:200] + "…"},
		// 199 bytes, then a 2-byte character across the 200-byte cut.
		{strings.Repeat("x", 199) + strings.Repeat("é", 10), strings.Repeat("x", 199) + "…"},
		{strings.Repeat("ж", 150), strings.Repeat("ж", 100) + "…"},
	} {
		got := lastLine(tt.log)
		if !utf8.ValidString(got) {
			t.Errorf("lastLine(%q) = %q: not valid UTF-8", tt.log, got)
		}
		if got != tt.want {
			t.Errorf("lastLine(%q) = %q, want %q", tt.log, got, tt.want)
		}
	}
}
