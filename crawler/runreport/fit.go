package runreport

import (
	"bytes"
	"encoding/json"
)

// Marshal is the one JSON encoding of crawl documents and reports: compact,
// and without the HTML escaping of encoding/json (which turns each '<' of a
// hostile title into six bytes). MaxDocumentBytes is measured in it.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Fit trims c until Marshal(c) is at most max bytes. The per-field caps keep
// an ordinary document far below MaxDocumentBytes; only a site that fills
// every cap with characters JSON must escape gets here. What goes first is
// what matters least to the index: skipped entries (counted in
// SkippedOmitted), then off-site links, then, from the last page back, a
// page's validators, inbound anchors, h3, h2, h1 and description. URLs and titles of
// indexed pages go last of all. It reports whether anything was removed.
func Fit(c *Crawl, max int) bool {
	trimmed := false
	for {
		total := encodedLen(c)
		if total <= max {
			return trimmed
		}
		if !fitOnce(c, total, max) {
			return trimmed // nothing left to remove
		}
		trimmed = true
	}
}

// fitOnce removes parts of c, subtracting each part's encoded size from
// total, until the estimate is at most max. The estimate can be off by the
// few bytes of SkippedOmitted's digits, so Fit measures again afterwards.
func fitOnce(c *Crawl, total, max int) bool {
	removed := false
	for total > max && len(c.Skipped) > 0 {
		n := len(c.Skipped)
		total -= elementLen(c.Skipped[n-1], n)
		c.Skipped = c.Skipped[:n-1]
		c.SkippedOmitted++
		removed = true
	}
	for total > max && len(c.OffSiteLinks) > 0 {
		n := len(c.OffSiteLinks)
		total -= elementLen(c.OffSiteLinks[n-1], n)
		c.OffSiteLinks = c.OffSiteLinks[:n-1]
		removed = true
	}
	trims := []func(*Page){
		// Without its validators a page is fetched in full next time:
		// the least loss.
		func(p *Page) { p.ETag, p.LastModified = "", "" },
		func(p *Page) { p.InboundAnchors = []string{} },
		func(p *Page) { p.Headings.H3 = []string{} },
		func(p *Page) { p.Headings.H2 = []string{} },
		func(p *Page) { p.Headings.H1 = []string{} },
		func(p *Page) { p.Description = "" },
	}
	for i := len(c.Pages) - 1; i >= 0 && total > max; i-- {
		for _, trim := range trims {
			if total <= max {
				break
			}
			before := encodedLen(c.Pages[i])
			trim(&c.Pages[i])
			if after := encodedLen(c.Pages[i]); after < before {
				total -= before - after
				removed = true
			}
		}
	}
	for total > max && len(c.Pages) > 0 {
		n := len(c.Pages)
		total -= elementLen(c.Pages[n-1], n)
		c.Pages = c.Pages[:n-1]
		removed = true
	}
	return removed
}

// elementLen is what removing the last element of an n-element JSON array
// saves: the element and, unless it is the only one, its comma.
func elementLen(v any, n int) int {
	l := encodedLen(v)
	if n > 1 {
		l++
	}
	return l
}

func encodedLen(v any) int {
	b, err := Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}
