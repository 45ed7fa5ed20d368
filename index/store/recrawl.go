package store

import (
	"cmp"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// Validators are what the index keeps of a page for the next crawl's
// conditional requests: its ETag and Last-Modified as the site sent them,
// or "" for one it did not send (or that the bot does not keep:
// runreport.ETag, runreport.LastModified).
type Validators struct {
	URL, ETag, LastModified string
}

// HasUnchanged reports whether the crawl found pages the site answered 304
// Not Modified.
func (d SiteDoc) HasUnchanged() bool {
	for _, p := range d.Pages {
		if p.Unchanged {
			return true
		}
	}
	return false
}

// Carry completes a document with unchanged pages from what the index
// holds for its site: stored, the site's pages by URL, and storedLinks, its
// links to other sites. A backend calls it inside the write that replaces
// the site, so nothing can change in between.
//
//   - An unchanged page keeps every stored field (status code, texts,
//     language) and gets the crawl's fetch time; each validator is the
//     crawl's when it has one, else the stored one. An unchanged page the
//     index does not hold (it was emptied since) has no fields to keep and
//     is left out: it has no validators either, so the next crawl fetches
//     it in full.
//   - The crawl could not read the links of unchanged pages, so the link
//     texts it found are incomplete: every page's own-site anchors are the
//     crawl's followed by the stored ones (runreport.MaxInboundAnchors at
//     most), and the site's links to other sites are the crawl's followed
//     by the stored ones to other URLs (runreport.MaxOffSiteLinks and
//     MaxLinksIntoSite per site at most). A text that went from a page
//     therefore stays until a crawl reads every page in full.
//
// A document without unchanged pages is returned as it is: it replaces
// everything, as a full crawl always did.
func Carry(doc SiteDoc, stored map[string]Page, storedLinks []Link) SiteDoc {
	if !doc.HasUnchanged() {
		return doc
	}
	out := doc
	out.Pages = make([]Page, 0, len(doc.Pages))
	for _, p := range doc.Pages {
		old, held := stored[p.URL]
		if p.Unchanged {
			if !held {
				continue
			}
			kept := old
			kept.FetchedAt = p.FetchedAt
			kept.ETag, kept.LastModified = cmp.Or(p.ETag, old.ETag), cmp.Or(p.LastModified, old.LastModified)
			kept.Anchors = p.Anchors // the crawl's, merged below
			p = kept
		}
		p.Unchanged, p.ExternalAnchors = false, nil
		if held {
			p.Anchors = union(runreport.MaxInboundAnchors, p.Anchors, old.Anchors)
		}
		out.Pages = append(out.Pages, p)
	}
	out.Links = append([]Link(nil), doc.Links...)
	seen := map[string]bool{}
	into := map[site.Site]int{}
	for _, l := range doc.Links {
		seen[l.URL] = true
		if s, err := site.Parse(l.URL); err == nil {
			into[s]++
		}
	}
	for _, l := range storedLinks {
		s, err := site.Parse(l.URL)
		if len(out.Links) == runreport.MaxOffSiteLinks {
			break
		}
		if err != nil || seen[l.URL] || into[s] >= MaxLinksIntoSite {
			continue
		}
		seen[l.URL] = true
		into[s]++
		out.Links = append(out.Links, l)
	}
	return out
}

// union returns the distinct non-empty strings of lists, in order, at most n.
func union(n int, lists ...[]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, s := range l {
			if len(out) == n {
				return out
			}
			if s != "" && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}
