// Package store defines the search backend: what is kept of a site and how
// it is searched. Backends live in the sqlite and postgres packages and pass
// the contract suite in storetest.
//
// What a backend keeps is exactly what the bot page promises: per page the
// URL, title, meta description, h1–h3 headings and the texts of links
// pointing to it. There is no field for body text anywhere.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// Limits of a search.
const (
	DefaultLimit = 10
	MaxLimit     = 100
	// MaxQueryLength is the longest query accepted, in bytes.
	MaxQueryLength = 256
	// MaxExternalAnchors caps the link texts other sites contribute to one
	// page, so a page linked from thousands of sites keeps a bounded row.
	MaxExternalAnchors = 64
	// MaxLinksIntoSite caps the links one crawled site contributes into
	// any one other site: a crawl (or a stolen run token) can put its link
	// texts on at most this many pages of a site it does not own.
	MaxLinksIntoSite = 5
)

// Errors callers tell apart.
var (
	ErrNotFound = errors.New("not found")
	ErrBadQuery = errors.New("bad query")
	// ErrUnavailable means the backend cannot be reached right now (not
	// connected yet, or an outage): retrying later may succeed.
	ErrUnavailable = errors.New("index backend unavailable")
	// ErrExcluded means a write was refused because an Exclusion covers
	// the site: what the owner asked to be removed must not come back.
	ErrExcluded = errors.New("site is excluded")
)

// Removed counts the pages a purge removed, by source (the SiteIndex
// namespace/name the rows were written from).
type Removed map[string]int64

// Total is the number of pages removed.
func (r Removed) Total() int64 {
	var n int64
	for _, v := range r {
		n += v
	}
	return n
}

// Page is what is kept of one page.
type Page struct {
	URL         string
	StatusCode  int
	Title       string
	Description string
	H1, H2, H3  []string
	// Anchors are texts of links to the page from its own site.
	Anchors []string
	// ExternalAnchors are texts of links to the page from other sites. A
	// backend fills them from the other sites' Links; on write they are
	// ignored.
	ExternalAnchors []string
	FetchedAt       time.Time
	// Lang is the page's language tag, lower-case ("en", "nl-be"), or ""
	// when unknown. It picks the stemmer; it is metadata, never searched.
	Lang string
	// ETag and LastModified are the page's validators as the site sent
	// them ("" for none), for the next crawl's conditional requests.
	ETag, LastModified string
	// Unchanged marks, on write, a page the site answered 304 Not
	// Modified: the backend keeps what it holds of the page (Carry).
	// Never set on a page read back.
	Unchanged bool
}

// Link is a link from a site to a page of another site, with its texts.
type Link struct {
	URL     string
	Anchors []string
}

// SiteDoc is one site as the latest crawl saw it.
type SiteDoc struct {
	// Source names the SiteIndex the document comes from (namespace/name),
	// so rows can be removed when the SiteIndex goes.
	Source string
	// Site is scheme://host:port as site.Site renders it.
	Site string
	// Run names the crawl the document comes from (the crawler Pod). It
	// is stored with the site, so a manager that starts can tell whether
	// the backend already holds what a SiteIndex says was indexed.
	Run       string
	CrawledAt time.Time
	Pages     []Page
	Links     []Link
	// BytesReceived and PagesUnchanged are the crawl's stats
	// (runreport.Stats), shown on the dashboard.
	BytesReceived  int64
	PagesUnchanged int
}

// Validate checks what a backend relies on: a normalised site, pages of
// that site only and links to other sites only.
func (d SiteDoc) Validate() error {
	if d.Source == "" {
		return errors.New("site document has no source")
	}
	s, err := site.Parse(d.Site)
	if err != nil {
		return fmt.Errorf("site document of %s: %w", d.Source, err)
	}
	if s.String() != d.Site {
		return fmt.Errorf("site %q is not normalised (want %q)", d.Site, s.String())
	}
	seen := map[string]bool{}
	for _, p := range d.Pages {
		ps, err := site.Parse(p.URL)
		if err != nil || ps != s {
			return fmt.Errorf("page %q is not on site %s", p.URL, d.Site)
		}
		if seen[p.URL] {
			return fmt.Errorf("page %q appears twice", p.URL)
		}
		seen[p.URL] = true
	}
	for _, l := range d.Links {
		ls, err := site.Parse(l.URL)
		if err != nil || ls == s {
			return fmt.Errorf("link %q does not lead to another site", l.URL)
		}
	}
	return nil
}

// Host returns the host of a normalised site.
func Host(siteURL string) string { return site.HostOf(siteURL) }

// Result is one search hit. It points the way back to the page; there is
// nothing else to answer with.
type Result struct {
	URL         string
	Title       string
	Description string
	Site        string
	Lang        string
}

// SourceRun is what the backend holds of one source: its site and the run
// the rows come from.
type SourceRun struct {
	Source, Site, Run string
}

// SiteInfo summarises one indexed site.
type SiteInfo struct {
	Site      string
	Host      string
	Pages     int
	CrawledAt time.Time
	// BytesReceived and PagesUnchanged are the stats of the crawl the
	// site's rows come from.
	BytesReceived  int64
	PagesUnchanged int
}

// SitePage is a page together with the site it belongs to.
type SitePage struct {
	Site string
	Page
}

// Store is a search backend. Every method is safe for concurrent use.
type Store interface {
	// ReplaceSite makes doc the only content of its site and of its
	// source: pages and links the site had before are removed, and the
	// external anchors of pages its old and new links point to are
	// recomputed. Replacing twice with the same document changes nothing.
	// A document with unchanged pages is first completed from what the
	// site had (Carry), in the same transaction.
	ReplaceSite(ctx context.Context, doc SiteDoc) error
	// Validators lists the pages of site written from source, sorted by
	// URL, with their validators: what the next crawl of the site sends
	// back. None (and no error) when the backend holds no such site.
	Validators(ctx context.Context, source, site string) ([]Validators, error)
	// DeleteSource removes every site written from source except the
	// sites in keep (none: every site) and returns the number of pages
	// removed.
	DeleteSource(ctx context.Context, source string, keep ...string) (int64, error)
	// PurgeDomain removes every site whose host is domain or a subdomain
	// of it (site.InDomain), and the links that point into it, and returns
	// the number of pages removed per source.
	PurgeDomain(ctx context.Context, domain string) (Removed, error)
	// Sources lists the sources that have rows, with their site and run,
	// sorted by source, in one query.
	Sources(ctx context.Context) ([]SourceRun, error)
	// Search returns up to limit pages matching every term of query, best
	// first: a term in the title counts more than in headings, headings
	// more than link texts, link texts more than the description.
	Search(ctx context.Context, query string, limit int) ([]Result, error)
	// Sites lists the indexed sites, sorted.
	Sites(ctx context.Context) ([]SiteInfo, error)
	// Pages lists the pages of every site on host, sorted by URL, or
	// ErrNotFound when no site of host is indexed.
	Pages(ctx context.Context, host string) ([]SitePage, error)
	Close() error
}

// CheckLimit rejects limits outside 1..MaxLimit.
func CheckLimit(limit int) error {
	if limit < 1 || limit > MaxLimit {
		return fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrBadQuery, MaxLimit, limit)
	}
	return nil
}

// Clean returns doc with every text made storable by any backend: valid
// UTF-8 without NUL bytes (PostgreSQL refuses both; a hostile page can
// contain either).
func (d SiteDoc) Clean() SiteDoc {
	out := d
	out.Pages = make([]Page, len(d.Pages))
	for i, p := range d.Pages {
		p.URL, p.Title, p.Description = cleanText(p.URL), cleanText(p.Title), cleanText(p.Description)
		p.H1, p.H2, p.H3 = cleanList(p.H1), cleanList(p.H2), cleanList(p.H3)
		p.Anchors, p.ExternalAnchors = cleanList(p.Anchors), nil
		p.Lang = cleanLang(p.Lang)
		p.ETag, p.LastModified = runreport.ETag(p.ETag), runreport.LastModified(p.LastModified)
		out.Pages[i] = p
	}
	out.Links = make([]Link, len(d.Links))
	for i, l := range d.Links {
		out.Links[i] = Link{URL: cleanText(l.URL), Anchors: cleanList(l.Anchors)}
	}
	return out
}

func cleanText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// MaxLangLength is the longest language tag kept (RFC 5646 §4.4.1 asks
// for 35 characters at least).
const MaxLangLength = 35

// cleanLang keeps a tag only if it is made of ASCII letters, digits and
// hyphens and not over-long: callers validate tags already (runreport),
// this only guards the column.
func cleanLang(s string) string {
	s = strings.ToLower(s)
	if len(s) > MaxLangLength || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return ""
	}
	return s
}

func cleanList(l []string) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = cleanText(s)
	}
	return out
}
