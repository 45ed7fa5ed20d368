package runreport

import (
	"strings"
	"unicode/utf8"
)

// The limits of the crawl document. They are defined here, once, because
// three parties must agree on them: the crawler caps what it puts into the
// document, the manager's results endpoint refuses reports that exceed them,
// and the SiteIndex types (api/v1beta1, api/v1alpha1) validate with them. A
// test in api/v1alpha1 checks that every CRD version's maxLength/maxItems
// match.
const (
	// MaxPages is the published crawl budget: at most 20 page requests
	// per site per crawl.
	MaxPages = 20

	// MaxURLLength is the longest URL the crawler requests or records. A
	// longer link is skipped with a short reason (2,048 bytes is what
	// most servers and browsers handle).
	MaxURLLength = 2048

	MaxTitleLength       = 512
	MaxDescriptionLength = 1024
	MaxHeadingsPerLevel  = 16
	MaxHeadingLength     = 256
	MaxInboundAnchors    = 16
	MaxAnchorLength      = 256
	MaxOffSiteLinks      = 50
	MaxOffSiteAnchors    = 4

	// MaxSkipped is how many skipped URLs the document lists; the rest
	// are only counted in SkippedOmitted.
	MaxSkipped = 100
	// MaxReasonLength caps a skip reason, which may quote what the site
	// sent (a Content-Type, a Location).
	MaxReasonLength = 256

	// MaxDocumentBytes bounds the crawl document as Marshal encodes it,
	// for any site however hostile: Fit trims the document to it.
	MaxDocumentBytes = 1 << 20
	// MaxReportBytes bounds one POST to the results endpoint: a document
	// and the report's envelope.
	MaxReportBytes = MaxDocumentBytes + 1<<10
)

// Cut trims s to at most n bytes without splitting a UTF-8 sequence,
// replaces invalid UTF-8 (which the API server would reject), drops
// control and bidi formatting characters and trims surrounding white
// space. The crawler's extractor already cleans what it keeps; Cut holds
// the same line for every other string that reaches a document (URLs,
// reasons) and for the manager, which trusts nothing a crawler Pod sends.
func Cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, IsControlOrBidi) >= 0 {
		s = strings.Map(func(r rune) rune {
			if IsControlOrBidi(r) {
				return -1
			}
			return r
		}, s)
	}
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimSpace(s[:n])
}

// CutAll keeps the first maxItems non-empty strings of in, each Cut to
// maxLen. It returns nil when nothing is kept.
func CutAll(in []string, maxItems, maxLen int) []string {
	var out []string
	for _, s := range in {
		if len(out) == maxItems {
			break
		}
		if s = Cut(s, maxLen); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IsControlOrBidi reports whether r must not appear in a stored text: C0
// and C1 control characters (tab, newline and the like included: stored
// texts are single lines), DEL, and the bidi embedding, override and
// isolate characters, which can make a title read differently from what
// it says.
func IsControlOrBidi(r rune) bool {
	return r < 0x20 || 0x7F <= r && r <= 0x9F ||
		0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}
