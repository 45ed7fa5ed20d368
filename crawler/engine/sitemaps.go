package engine

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/politeness"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/sitemap"
	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
)

// maxSitemapRequests is the most a crawl spends on sitemaps, redirects
// included. Sitemap requests count against the page budget: the budget the
// bot publishes is how much it requests.
const maxSitemapRequests = 2

// maxNamedSitemaps bounds the robots.txt Sitemap lines considered (each is
// checked against robots.txt in turn): far more than two requests need.
const maxNamedSitemaps = 50

// sitemapRead is one crawl's reading of its sitemaps.
type sitemapRead struct {
	pending   []*url.URL // sitemaps still to read, in order
	requested map[string]bool
	sent      int
	rank      *sitemap.Ranking
	queued    map[string]bool // links queued before the sitemaps were read
	notRead   counts          // sitemaps named but not read
}

// readSitemaps reads the site's sitemaps, right after the start URL, and
// puts the URLs they rank highest at the head of the queue, before the
// links found so far. Nothing here ends the crawl but the site's own
// etiquette (a challenge, a long Retry-After): a sitemap that cannot be used
// is listed in skipped with the reason, and the crawl goes on by links.
func (c *crawler) readSitemaps(ctx context.Context) {
	// A sitemap is worth a request only if one is left for a page after
	// it.
	if c.stopped || ctx.Err() != nil || c.requests+1 >= c.cfg.MaxPages {
		return
	}
	r := &sitemapRead{requested: map[string]bool{}, queued: map[string]bool{}}
	for _, q := range c.queue {
		r.queued[q.String()] = true
	}
	// A request can end a second queued URL as well as its own (a
	// redirect to it, a canonical naming it): keep twice what the budget
	// has left, so that sitemap URLs still come before links then.
	r.rank = sitemap.NewRanking(2 * (c.cfg.MaxPages - c.requests))
	r.pending = c.namedSitemaps(&r.notRead)
	for len(r.pending) > 0 && !c.stopped && ctx.Err() == nil {
		if r.sent >= maxSitemapRequests || c.requests+1 >= c.cfg.MaxPages {
			break
		}
		u := r.pending[0]
		r.pending = r.pending[1:]
		if r.requested[u.String()] {
			continue
		}
		r.requested[u.String()] = true
		if !c.policy.Allowed(c.token, u.String()) {
			r.notRead[disallowed]++
			continue
		}
		// A sitemap is not a page: requested once, as a sitemap, however
		// the site links it (many link /sitemap.xml from every page).
		c.seen[u.String()] = true
		c.dequeue(u)
		r.sent++
		c.readSitemap(ctx, r, u)
	}
	if c.stopped || ctx.Err() != nil {
		return // the crawl ends; its own entries say why
	}
	for _, u := range r.pending {
		switch {
		case r.requested[u.String()]:
		case r.sent >= maxSitemapRequests:
			r.notRead[overLimit]++
		default:
			r.notRead[noBudget]++
		}
		r.requested[u.String()] = true
	}
	if s := r.notRead.String(notReadWords); s != "" {
		c.skip(c.robotsURL().String(), "sitemaps not read: "+s)
	}
	c.queueFirst(r.rank.Entries())
}

func (c *crawler) robotsURL() *url.URL {
	return &url.URL{Scheme: c.start.Scheme, Host: c.start.Host, Path: "/robots.txt"}
}

// namedSitemaps returns the sitemaps robots.txt names on this site, in its
// order, or else the site's /sitemap.xml; n counts the names not taken.
func (c *crawler) namedSitemaps(n *counts) []*url.URL {
	var out []*url.URL
	if c.policy.Rules != nil {
		for _, s := range c.policy.Rules.Sitemaps {
			u, v := c.listedURL(s)
			switch {
			case v != usable:
				n[v]++
			case len(out) == maxNamedSitemaps:
				n[overLimit]++
			default:
				out = append(out, u)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, &url.URL{Scheme: c.start.Scheme, Host: c.start.Host, Path: "/sitemap.xml"})
	}
	return out
}

// readSitemap requests one sitemap, once: a sitemap's requests are counted
// in twos, so none is retried, and its failure gives up the sitemap, never
// the site (a Retry-After it sends is still obeyed).
func (c *crawler) readSitemap(ctx context.Context, r *sitemapRead, u *url.URL) {
	var n counts
	var kind sitemap.Kind
	gate := c.gate(ctx, u)
	resp, err := c.send(ctx, gate, u, true, 1, func(ctx context.Context) (*fetch.Response, error) {
		var challenge []byte
		resp, err := c.client.Stream(ctx, u, sitemap.MaxBytes, func(h *http.Response, body io.Reader) error {
			switch {
			case h.StatusCode >= 200 && h.StatusCode < 300:
				d := sitemap.NewDecoder(body)
				defer func() { kind = d.Kind() }()
				return c.takeSitemap(r, d, &n)
			case wantsChallengeCheck(h):
				challenge, _ = io.ReadAll(io.LimitReader(body, fetch.DefaultMaxBody))
			}
			return nil
		})
		if resp != nil {
			resp.Body = challenge
		}
		return resp, err
	})
	if resp == nil {
		if ctx.Err() != nil {
			c.skip(u.String(), "sitemap: "+stopReason(ctx))
			return
		}
		c.log.Warn("sitemap request failed", "url", u.String(), "err", err)
		c.skip(u.String(), "sitemap: "+err.Error())
		return
	}
	// A sitemap is requested once: a back-off answer gives it up (its wait
	// still holds for the next request); the rest is as for a page.
	if code := resp.StatusCode; politeness.BackOffStatus(code) && !isChallenge(code, resp.Header, resp.Body) {
		c.skip(u.String(), fmt.Sprintf("sitemap: HTTP %d (not retried)", code))
		if wait := c.retryWait(1, resp); wait > c.cfg.MaxWait {
			c.stop(wait)
		} else {
			gate.NotBefore(time.Now().Add(wait))
		}
		return
	}
	next, read := c.status("sitemap: ", u, resp, 0)
	switch {
	case next != nil:
		r.pending = append([]*url.URL{next}, r.pending...)
	case !read:
	case resp.StatusCode == http.StatusNotModified: // to a request without validators
		c.skip(u.String(), "sitemap: HTTP 304")
	default:
		c.skip(u.String(), sitemapReason(kind, n, err))
	}
}

// takeSitemap reads a sitemap's entries: a URL set's (or text list's) into
// the ranking, an index's into the sitemaps to read next, as many as
// requests are left for (and then stops reading it). It returns why
// reading ended early.
func (c *crawler) takeSitemap(r *sitemapRead, d *sitemap.Decoder, n *counts) error {
	next := 0 // where the next sitemap of an index goes in pending
	for {
		e, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		index := d.Kind() == sitemap.Index
		if index && r.sent+next >= maxSitemapRequests {
			return errNoSitemapRequest
		}
		n[listed]++
		u, v := c.listedURL(e.Loc)
		if v == usable {
			// Known: a sitemap already requested (an index that lists
			// itself or a sitemap read before), a page already requested
			// (the start URL listed as a sitemap), or a URL already
			// requested as a sitemap listed as a page.
			switch k := u.String(); {
			case !c.policy.Allowed(c.token, k):
				v = disallowed
			case r.requested[k], c.seen[k] && !r.queued[k]:
				v = known
			}
		}
		n[v]++
		switch {
		case v != usable:
		case index:
			r.pending = slices.Insert(r.pending, next, u)
			next++
		default:
			e.Loc = u.String()
			r.rank.Add(e)
		}
	}
}

var errNoSitemapRequest = fmt.Errorf("no sitemap request left for its sitemaps (at most %d per crawl)", maxSitemapRequests)

// listedURL is what the crawl makes of a URL that robots.txt or a sitemap
// lists: the clean URL, or why not. Only a URL written in full counts
// (sitemap.Named): a relative one, or text that is no URL, is unusable. It
// does not ask robots.txt, which callers do when they take the URL.
func (c *crawler) listedURL(loc string) (*url.URL, verdict) {
	u, ok := sitemap.Named(loc)
	switch {
	case loc == "" || !ok || len(u.String()) > runreport.MaxURLLength:
		return nil, unusable
	case !urlnorm.SameSite(u, c.start):
		return nil, onOtherSite
	}
	return u, usable
}

// queueFirst puts the ranked sitemap URLs at the head of the queue, in
// their order, before the links found so far; a link a sitemap lists moves
// up to its sitemap place.
func (c *crawler) queueFirst(entries []sitemap.Entry) {
	if len(entries) == 0 {
		return
	}
	queue := make([]*url.URL, 0, len(entries)+len(c.queue))
	first := map[string]bool{}
	for _, e := range entries {
		u, err := url.Parse(e.Loc) // a normalised URL parses back to itself
		if err != nil {
			continue
		}
		first[e.Loc], c.seen[e.Loc] = true, true
		queue = append(queue, u)
	}
	for _, q := range c.queue {
		if !first[q.String()] {
			queue = append(queue, q)
		}
	}
	c.log.Info("sitemap URLs queued", "count", len(first))
	c.queue = queue
}

// verdict is what became of one URL a sitemap (or robots.txt) lists.
type verdict int

const (
	listed verdict = iota // every entry
	usable
	onOtherSite
	disallowed
	unusable // empty, not http(s), malformed, over the URL limit
	known    // already crawled (a sitemap's sitemap: already read)
	overLimit
	noBudget
	nVerdicts
)

type counts [nVerdicts]int

// Words for counts, in the order they are written.
var (
	urlWords     = []word{{usable, "usable"}, {onOtherSite, "on other sites"}, {disallowed, "disallowed by robots.txt"}, {unusable, "unusable"}, {known, "already crawled"}}
	indexWords   = []word{{usable, "to read next"}, {onOtherSite, "on other sites"}, {disallowed, "disallowed by robots.txt"}, {unusable, "unusable"}, {known, "already read"}}
	notReadWords = []word{{onOtherSite, "on other sites"}, {overLimit, fmt.Sprintf("over the limit of %d sitemap requests", maxSitemapRequests)}, {disallowed, "disallowed by robots.txt"}, {unusable, "unusable"}, {noBudget, "for want of budget"}}
)

type word struct {
	v    verdict
	text string
}

// String writes the non-zero counts: "1 usable, 2 on other sites".
func (n counts) String(words []word) string {
	var parts []string
	for _, w := range words {
		if n[w.v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[w.v], w.text))
		}
	}
	return strings.Join(parts, ", ")
}

// sitemapReason is the skipped entry of a sitemap that was read: what it
// listed, and why reading stopped early if it did.
func sitemapReason(kind sitemap.Kind, n counts, err error) string {
	what, unit, words := "sitemap", "URL", urlWords
	if kind == sitemap.Index {
		what, unit, words = "sitemap index", "sitemap", indexWords
	}
	var s string
	switch {
	case n[listed] == 0 && err != nil:
		return what + ": " + err.Error()
	case n[listed] == 0:
		s = what + ": no " + unit + "s"
	case n[listed] == 1:
		s = fmt.Sprintf("%s: 1 %s (%s)", what, unit, n.String(words))
	default:
		s = fmt.Sprintf("%s: %d %ss (%s)", what, n[listed], unit, n.String(words))
	}
	if err != nil {
		s += "; stopped: " + err.Error()
	}
	return s
}
