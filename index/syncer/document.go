package syncer

import (
	"fmt"
	"net/url"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// SourceOf names the SiteIndex a document comes from.
func SourceOf(namespace, name string) string { return namespace + "/" + name }

// Document turns a SiteIndex into what the backend stores. excluded tells
// whether a host is covered by an Exclusion: a SiteIndex of an excluded
// site yields ok=false (nothing may be stored), and links into excluded
// domains are dropped so their link texts are not stored either.
//
// The SiteIndex was written from a crawler's report and is checked again
// here rather than trusted: pages off the site and links to the site itself
// are dropped, and duplicate page URLs keep their first entry. URLs are put
// in canonical form. Off-site links are taken only from a complete
// SiteIndex (a run's final result), at most store.MaxLinksIntoSite into any
// one other site.
func Document(si *crawlv1.SiteIndex, excluded func(host string) bool) (doc store.SiteDoc, ok bool, err error) {
	s, err := site.Parse(si.Spec.Site)
	if err != nil {
		return store.SiteDoc{}, false, fmt.Errorf("SiteIndex %s/%s: spec.site: %w", si.Namespace, si.Name, err)
	}
	if excluded(s.Host) {
		return store.SiteDoc{}, false, nil
	}
	doc = store.SiteDoc{Source: SourceOf(si.Namespace, si.Name), Site: s.String()}
	if t := si.Status.CrawledAt; t != nil {
		doc.CrawledAt = t.Time
	}
	seen := map[string]bool{}
	for _, p := range si.Status.Pages {
		u, ok := canonical(p.URL)
		if !ok || seen[u] {
			continue
		}
		if ps, err := site.Parse(u); err != nil || ps != s {
			continue
		}
		seen[u] = true
		page := store.Page{
			URL: u, StatusCode: int(p.StatusCode), Title: p.Title, Description: p.Description,
			H1: p.Headings.H1, H2: p.Headings.H2, H3: p.Headings.H3, Anchors: p.InboundAnchors,
			Lang: runreport.Lang(p.Lang),
		}
		if p.FetchedAt != nil {
			page.FetchedAt = p.FetchedAt.Time
		}
		doc.Pages = append(doc.Pages, page)
	}
	if !si.Status.Complete {
		// Off-site links count only from a run's final, accepted result:
		// progress reports (of a first crawl, shown as they come) put no
		// text on other sites' pages.
		return doc, true, nil
	}
	into := map[site.Site]int{}
	seenLinks := map[string]bool{}
	for _, l := range si.Status.OffSiteLinks {
		u, ok := canonical(l.URL)
		if !ok || seenLinks[u] {
			continue
		}
		ls, err := site.Parse(u)
		if err != nil || ls == s || excluded(ls.Host) || into[ls] == store.MaxLinksIntoSite {
			continue
		}
		seenLinks[u] = true
		into[ls]++
		doc.Links = append(doc.Links, store.Link{URL: u, Anchors: l.Anchors})
	}
	return doc, true, nil
}

// canonical writes a URL the way the crawler does (crawler/urlnorm), so a
// link from one site finds the page of another however either was written.
func canonical(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	return urlnorm.Normalize(u).String(), true
}
