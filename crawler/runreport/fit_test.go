package runreport

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// worstCase fills every cap of the document with characters that JSON
// escapes to two bytes: what the most hostile site could make the crawler
// report before Fit.
func worstCase() Crawl {
	q := func(n int) string { return strings.Repeat(`"`, n) }
	list := func(items, n int) []string {
		out := make([]string, items)
		for i := range out {
			out[i] = q(n)
		}
		return out
	}
	c := Crawl{Site: "https://example.com:443", UserAgent: "LohiSoftBot/1.0"}
	for i := 0; i < MaxPages; i++ {
		c.Pages = append(c.Pages, Page{
			URL:            fmt.Sprintf("https://example.com/%d?%s", i, q(MaxURLLength-30)),
			StatusCode:     200,
			Title:          q(MaxTitleLength),
			Description:    q(MaxDescriptionLength),
			Headings:       Headings{H1: list(MaxHeadingsPerLevel, MaxHeadingLength), H2: list(MaxHeadingsPerLevel, MaxHeadingLength), H3: list(MaxHeadingsPerLevel, MaxHeadingLength)},
			InboundAnchors: list(MaxInboundAnchors, MaxAnchorLength),
			FetchedAt:      time.Unix(0, 0),
		})
	}
	for i := 0; i < MaxOffSiteLinks; i++ {
		c.OffSiteLinks = append(c.OffSiteLinks, OffSiteLink{URL: fmt.Sprintf("https://o%d.example/?%s", i, q(MaxURLLength-30)), Anchors: list(MaxOffSiteAnchors, MaxAnchorLength)})
	}
	for i := 0; i < MaxSkipped; i++ {
		c.Skipped = append(c.Skipped, Skip{URL: fmt.Sprintf("https://example.com/s%d?%s", i, q(MaxURLLength-30)), Reason: q(MaxReasonLength)})
	}
	return c
}

func marshalLen(t *testing.T, c Crawl) int {
	t.Helper()
	b, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestFitWorstCase(t *testing.T) {
	c := worstCase()
	before := marshalLen(t, c)
	if before <= MaxDocumentBytes {
		t.Fatalf("the worst case is only %d bytes: the test does not exercise Fit", before)
	}
	if !Fit(&c, MaxDocumentBytes) {
		t.Fatal("Fit reported nothing trimmed")
	}
	after := marshalLen(t, c)
	if after > MaxDocumentBytes {
		t.Fatalf("after Fit: %d bytes", after)
	}
	// What matters least goes first: every page is still there with its
	// URL and title, and what was dropped from the skipped list is counted.
	if len(c.Pages) != MaxPages {
		t.Errorf("%d pages kept", len(c.Pages))
	}
	for _, p := range c.Pages {
		if p.Title == "" || p.URL == "" {
			t.Errorf("page lost its URL or title")
		}
	}
	if len(c.Skipped)+c.SkippedOmitted != MaxSkipped || c.SkippedOmitted == 0 {
		t.Errorf("skipped %d listed + %d omitted", len(c.Skipped), c.SkippedOmitted)
	}
	// Skipped entries and off-site links are enough here: no page text
	// was touched.
	for _, p := range c.Pages {
		if len(p.InboundAnchors) != MaxInboundAnchors || len(p.Headings.H3) != MaxHeadingsPerLevel || p.Description == "" {
			t.Errorf("%s: page texts trimmed although dropping links was enough", p.URL[:22])
		}
	}
	if len(c.Skipped) != 0 || len(c.OffSiteLinks) == 0 || len(c.OffSiteLinks) == MaxOffSiteLinks {
		t.Errorf("kept %d skipped entries and %d off-site links", len(c.Skipped), len(c.OffSiteLinks))
	}
	t.Logf("worst case %d bytes, after Fit %d bytes", before, after)
}

func TestFitLeavesOrdinaryDocumentsAlone(t *testing.T) {
	c := Crawl{Site: "https://example.com:443", Pages: []Page{{URL: "https://example.com/", Title: "Home"}}, Skipped: []Skip{{URL: "https://example.com/x", Reason: "noindex"}}}
	if Fit(&c, MaxDocumentBytes) || len(c.Skipped) != 1 || c.SkippedOmitted != 0 {
		t.Errorf("an ordinary document was trimmed: %+v", c)
	}
}

func TestFitTrimsInOrder(t *testing.T) {
	for _, limit := range []int{900_000, 600_000, 300_000, 100_000, 60_000} {
		c := worstCase()
		Fit(&c, limit)
		if n := marshalLen(t, c); n > limit {
			t.Errorf("limit %d: %d bytes", limit, n)
		}
		// Off-site links go only after every skipped entry, and page
		// texts only after every off-site link.
		if len(c.OffSiteLinks) > 0 && len(c.Skipped) == MaxSkipped {
			t.Errorf("limit %d: off-site links trimmed before skipped entries", limit)
		}
		last := c.Pages[len(c.Pages)-1]
		if len(last.InboundAnchors) == 0 && len(c.OffSiteLinks) > 0 {
			t.Errorf("limit %d: page texts trimmed before off-site links", limit)
		}
	}
}

func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	b, err := Marshal(Page{Title: "<b>&</b>"})
	if err != nil || !strings.Contains(string(b), `"title":"<b>&</b>"`) {
		t.Errorf("%s %v", b, err)
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"  abc  ", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"ab čd", 4, "ab"},                             // 'č' is two bytes: not split
		{"ab\xffcd", 10, "ab\uFFFDcd"},                 // invalid UTF-8 replaced
		{"ab cd", 3, "ab"},                             // no trailing space after the cut
		{"a\tb\u0085c\u202Ed\u2069e\x7f", 20, "abcde"}, // controls and bidi dropped
		{"\u200Fשלום", 20, "\u200Fשלום"},               // a plain direction mark is text
	} {
		if got := Cut(c.in, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	if got := CutAll([]string{"a", " ", "bcd", "e", "f"}, 2, 2); len(got) != 2 || got[0] != "a" || got[1] != "bc" {
		t.Errorf("CutAll = %q", got)
	}
}
