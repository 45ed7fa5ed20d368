// Package runreport holds the document a crawl produces. It is the contract
// between the crawler (which prints it, or reports it to the manager) and the
// manager (which stores it in a SiteIndex), so it lives in its own package with
// no behaviour beyond JSON shape.
package runreport

import "time"

// Crawl is the document `crawler crawl` prints on stdout and reports to the
// manager. Field names are part of the public command-line interface.
type Crawl struct {
	// Site is the crawled site as scheme://host:port.
	Site string `json:"site"`
	// UpgradedFrom is the site the crawl was asked for when its start URL
	// redirected to the https origin of the same host (default ports
	// both): Site is then that https site, whose robots.txt applies.
	UpgradedFrom string `json:"upgradedFrom,omitempty"`
	UserAgent    string `json:"userAgent"`
	Robots       Robots `json:"robots"`
	Pages        []Page `json:"pages"`
	// Skipped lists at most MaxSkipped URLs that were not indexed, with
	// the reason; SkippedOmitted counts the ones left off the list.
	Skipped        []Skip `json:"skipped"`
	SkippedOmitted int    `json:"skippedOmitted,omitempty"`
	// RetryAfter, when set, is the earliest time the site may be crawled
	// again (the site asked us to back off). RFC 3339.
	RetryAfter string `json:"retryAfter,omitempty"`
	// OffSiteLinks are links from the indexed pages to other sites, with
	// their anchor texts: recorded, never fetched.
	OffSiteLinks []OffSiteLink `json:"offSiteLinks,omitempty"`
	// Stats measures what the crawl cost the site.
	Stats Stats `json:"stats"`
	// EgressIP is the source address the crawl was verified to leave
	// from, as an echo service outside the cluster saw it before the
	// first request to the site (--egress-echo-url); absent when the
	// crawl was not verified.
	EgressIP string `json:"egressIP,omitempty"`
}

// Stats measures a crawl.
type Stats struct {
	// BytesReceived counts every byte read from the site's connections:
	// status lines, headers and bodies of robots.txt and every page (TLS
	// records included on https), as they came over the wire.
	BytesReceived int64 `json:"bytesReceived"`
	// PagesUnchanged counts the pages the site answered 304 Not Modified.
	PagesUnchanged int `json:"pagesUnchanged"`
}

// OffSiteLink is a link that leaves the crawled site.
type OffSiteLink struct {
	URL     string   `json:"url"`
	Anchors []string `json:"anchors"`
}

// Robots records how robots.txt was answered.
type Robots struct {
	// Status is the HTTP status code of robots.txt, or 0 when it could not
	// be fetched (network error, timeout).
	Status    int       `json:"status"`
	FetchedAt time.Time `json:"fetchedAt,omitzero"`
}

// Page is everything the bot keeps of one page. Body text is never part of it.
type Page struct {
	URL            string    `json:"url"`
	StatusCode     int       `json:"statusCode"`
	Title          string    `json:"title"`
	Description    string    `json:"description"`
	Headings       Headings  `json:"headings"`
	InboundAnchors []string  `json:"inboundAnchors"`
	FetchedAt      time.Time `json:"fetchedAt"`
	// Lang is the page's language tag (Lang), lower-case, or "" when the
	// page declares none that is valid. Metadata: it picks the stemmer
	// and is never searched as text.
	Lang string `json:"lang,omitempty"`
	// ETag and LastModified are the page's validators as the site sent
	// them (ETag, LastModified); absent when it sent none the bot keeps.
	// The next crawl sends them back in If-None-Match and
	// If-Modified-Since.
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
	// Unchanged marks a page the site answered 304 Not Modified: its
	// statusCode is 304 and its title, description and headings are empty
	// because no body came; the index keeps what it stored for the page
	// and refreshes its fetch time.
	Unchanged bool `json:"unchanged,omitempty"`
}

// Headings are the h1–h3 texts in document order.
type Headings struct {
	H1 []string `json:"h1"`
	H2 []string `json:"h2"`
	H3 []string `json:"h3"`
}

// Skip is a URL the crawl did not index, and why (disallowed by robots.txt,
// 401/403, noindex, budget, non-HTML, ...).
type Skip struct {
	URL    string `json:"url"`
	Reason string `json:"reason"`
}

// Previous is what the results endpoint answers to the crawler's GET of its
// report URL: the pages the index holds for the run's target (from its last
// complete crawl), with the validators kept for each. The crawler sends the
// validators back, and requeues the pages when one of them answers 304,
// whose links it cannot read.
type Previous struct {
	Site  string      `json:"site"`
	Pages []KnownPage `json:"pages"`
}

// KnownPage is one page of Previous.
type KnownPage struct {
	URL          string `json:"url"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
}

// MaxPreviousBytes bounds the endpoint's answer as the crawler reads it: at
// most MaxPages pages of a URL and two validators each, with room for JSON
// escaping.
const MaxPreviousBytes = 2 * MaxPages * (MaxURLLength + 2*MaxValidatorLength + 64)

// Report is what the crawler POSTs to the manager's results endpoint
// (`--report-url`, `Authorization: Bearer <--report-token>`): the crawl so far
// after every page, and once more with Final set when the crawl ends.
type Report struct {
	Final  bool  `json:"final"`
	Result Crawl `json:"result"`
}
