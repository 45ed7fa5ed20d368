package engine

import (
	"crypto/sha256"
	"net/url"
	"slices"

	"github.com/lohisoft/crawl-operator/crawler/extract"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
)

// One URL per resource: a crawl knows a page by its key, the normalised
// URL without tracking parameters and session ids (urlnorm.Clean). Links,
// sitemap URLs, canonical URLs and the start URL are cleaned before they are
// queued, so the crawler requests them clean; a redirect target is requested
// as the server wrote it (a server that insists on a session id would
// otherwise redirect for ever) and recorded under its key.

// key is the URL u's resource is known by in a crawl.
func key(u *url.URL) string { return urlnorm.Clean(u).String() }

// resolve turns an href (a link, a sitemap's <loc>, a canonical URL) found
// at base into the clean URL the crawl uses for it.
func resolve(base *url.URL, href string) (*url.URL, bool) {
	u, ok := urlnorm.Resolve(base, href)
	if !ok {
		return nil, false
	}
	return urlnorm.Clean(u), true
}

// alias lets the anchors of URL from count for the page recorded as to.
func (c *crawler) alias(to, from string) {
	if to != from {
		c.redirected[to] = append(c.redirected[to], from)
	}
}

// canonical returns the URL a fetched page names as canonical (its Link
// header, whose target is relative to u, or its <link rel="canonical">,
// relative to base), cleaned and without its fragment, when the crawler
// takes it: nil when the page names none, names two different ones, names
// itself, or names a URL the crawler may not or cannot record it under:
// another site, a URL robots.txt disallows (the page stays under its own
// URL, and nothing is ever fetched for a canonical), one longer than the
// URL limit, or one this crawl already met that is not a page (it answered
// with a redirect or an error). A URL not met yet is taken on the site's
// word.
func (c *crawler) canonical(u, base *url.URL, linkHeader []string, href string) *url.URL {
	var named []*url.URL
	if h := extract.LinkCanonical(linkHeader); h != "" {
		if t, ok := resolve(u, h); ok {
			named = append(named, t)
		}
	}
	if href != "" {
		if t, ok := resolve(base, href); ok {
			named = append(named, t)
		}
	}
	if len(named) == 0 {
		return nil
	}
	t := named[0]
	k := t.String()
	why := ""
	switch {
	case len(named) == 2 && named[1].String() != k:
		why = "Link header and <link> disagree"
	case k == key(u):
		return nil
	case !urlnorm.SameSite(t, c.start):
		why = "another site"
	case len(k) > runreport.MaxURLLength:
		why = "too long"
	case !c.policy.Allowed(c.token, k):
		why = "disallowed by robots.txt"
	case c.seen[k] && !c.inQueue(t) && !c.isPage(t):
		why = "not a page"
	default:
		return t
	}
	c.log.Info("canonical not taken", "url", u.String(), "canonical", k, "why", why)
	return nil
}

// record adds a fetched page to the crawl, once per resource: under canon
// when that is not recorded yet (and canon is then not fetched in this
// crawl); not at all when the page recorded as canon, or one with the same
// (non-empty) body, has the same stored fields, or canon answered 304 (the
// page's anchors then count for that one). A canonical page recorded with
// other fields was named wrongly (a site that names its home page on every
// page): the page keeps its own URL.
func (c *crawler) record(fetched *url.URL, body []byte, canon *url.URL, p runreport.Page) {
	own := key(fetched)
	at := own
	if canon != nil {
		i, recorded := c.pageIndex[canon.String()]
		switch {
		case !recorded:
			at = canon.String()
		case sameStored(c.res.Pages[i], p) || c.res.Pages[i].Unchanged:
			// (An unchanged page has no fields to compare: it is as the
			// index has it, and the site names it canonical.)
			c.alias(canon.String(), own)
			c.skip(fetched.String(), "duplicate of "+canon.String()+" (rel=canonical)")
			return
		}
	}
	// An empty body (a 304 of a conditional request has none) says nothing
	// about which resource it is.
	sum := sha256.Sum256(body)
	if i, ok := c.bodies[sum]; ok && len(body) > 0 && sameStored(c.res.Pages[i], p) {
		c.alias(c.res.Pages[i].URL, own)
		c.skip(fetched.String(), "duplicate of "+c.res.Pages[i].URL+" (same content)")
		return
	}
	if at != own {
		c.alias(at, own)
		c.skip(fetched.String(), "recorded as "+at+" (rel=canonical)")
		c.seen[at] = true
		c.dequeue(canon)
		// Validators belong to the URL that sent them: sent with a
		// request for the canonical URL they would be invented.
		p.ETag, p.LastModified = "", ""
	}
	p.URL = at
	c.pageIndex[at] = len(c.res.Pages)
	if _, ok := c.bodies[sum]; !ok && len(body) > 0 {
		c.bodies[sum] = len(c.res.Pages)
	}
	c.res.Pages = append(c.res.Pages, p)
}

// sameStored reports whether two pages keep the same fields (all but the
// URL and the fetch time).
func sameStored(a, b runreport.Page) bool {
	return a.StatusCode == b.StatusCode && a.Title == b.Title && a.Description == b.Description && a.Lang == b.Lang &&
		slices.Equal(a.Headings.H1, b.Headings.H1) && slices.Equal(a.Headings.H2, b.Headings.H2) && slices.Equal(a.Headings.H3, b.Headings.H3)
}
