package engine

import (
	"cmp"
	"net/http"
	"net/url"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
)

// Conditional recrawl (issue 22). The index keeps each page's ETag and
// Last-Modified as the site sent them; the next crawl gets them in
// Config.Previous, sends them back, and a site whose page did not change
// answers 304 Not Modified without a body. Such a page is reported as
// unchanged (the index keeps its stored fields and refreshes its fetch time)
// and costs one request of the budget like any other.

// previous is Config.Previous by resource (key, resource.go).
type previous struct {
	pages map[string]runreport.KnownPage
	// urls are the previous run's pages in their order, queued once the
	// first 304 hides a page's links (requeued).
	urls     []*url.URL
	requeued bool
}

func newPrevious(known []runreport.KnownPage) previous {
	p := previous{pages: map[string]runreport.KnownPage{}}
	for _, k := range known {
		u, err := url.Parse(k.URL)
		if err != nil || u.Host == "" {
			continue
		}
		u = urlnorm.Clean(urlnorm.Normalize(u))
		if _, dup := p.pages[key(u)]; dup {
			continue
		}
		p.pages[key(u)] = k
		p.urls = append(p.urls, u)
	}
	return p
}

// conditionFor returns the validators a page request for u sends: those the
// previous run kept for u, each only if it is still one the bot would keep
// (runreport.ETag, runreport.LastModified), so nothing the results endpoint
// hands over can break out of its header. robots.txt is always fetched in
// full.
func (c *crawler) conditionFor(u *url.URL, page bool) fetch.Conditional {
	if !page {
		return fetch.Conditional{}
	}
	k := c.prev.pages[key(u)]
	return fetch.Conditional{IfNoneMatch: runreport.ETag(k.ETag), IfModifiedSince: runreport.LastModified(k.LastModified)}
}

// validators returns the validators of a response that the bot keeps: an
// ETag as runreport.ETag allows, a Last-Modified that is an HTTP-date no
// later than the response's Date (or its receipt). A site that sent none
// gets none: the bot never invents one.
func (c *crawler) validators(resp *fetch.Response) (etag, lastModified string) {
	return runreport.ETag(resp.Header.Get("ETag")),
		runreport.LastModifiedAsOf(resp.Header.Get("Last-Modified"), resp.Header.Get("Date"), c.cfg.Now())
}

// notModified handles a 304 to the page request for u. To a request that
// carried validators it means the page is as the index has it: an
// unchanged page is recorded with its validators (each the 304's own when it
// sends one the bot keeps, RFC 9110 §15.4.5, else the one sent), and the previous
// run's pages are queued, since this page's links cannot be read. To a
// request without validators it says nothing about the page: a failed
// fetch of the URL, never a page with empty fields.
func (c *crawler) notModified(u *url.URL, resp *fetch.Response) {
	sent := c.conditionFor(u, true)
	if sent.IsZero() {
		c.skip(u.String(), "HTTP 304 to a request without validators")
		return
	}
	etag, lastModified := c.validators(resp)
	etag, lastModified = cmp.Or(etag, sent.IfNoneMatch), cmp.Or(lastModified, sent.IfModifiedSince)
	// No body: nothing to compare with other pages, no canonical named.
	c.record(u, nil, nil, runreport.Page{
		StatusCode:   http.StatusNotModified,
		Headings:     runreport.Headings{H1: []string{}, H2: []string{}, H3: []string{}},
		FetchedAt:    resp.Started.UTC(),
		ETag:         etag,
		LastModified: lastModified,
		Unchanged:    true,
	})
	c.unchanged++
	if !c.prev.requeued {
		c.prev.requeued = true
		for _, p := range c.prev.urls {
			if urlnorm.SameSite(p, c.start) {
				c.enqueue(p)
			}
		}
	}
}

// stats measures the crawl so far.
func (c *crawler) stats() runreport.Stats {
	return runreport.Stats{BytesReceived: c.client.BytesReceived(), PagesUnchanged: c.unchanged}
}
