// Package engine crawls one site: robots.txt first, then the start URL, the
// site's sitemaps and the URLs they rank highest, then breadth-first over
// the site's own links, within the page budget and the politeness rules, and
// produces the runreport.Crawl document. The rules it keeps are the promises
// LohiSoftBot makes to site owners; see docs/crawler.md.
package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/lohisoft/crawl-operator/crawler/extract"
	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/politeness"
	"github.com/lohisoft/crawl-operator/crawler/robots"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// Public defaults. The crawl budget and the document's limits are in
// package runreport, shared with the manager.
const (
	DefaultUserAgent = "LohiSoftBot/1.0 (+https://lohisoft.com/bot)"
	DefaultToken     = "LohiSoftBot"
	DefaultDelay     = time.Second
	// MaxRedirects bounds one redirect chain of a page (each hop is a
	// page request and counts against the budget anyway).
	MaxRedirects = 5
	// ChallengeRetryAfter is how long a site that showed a bot-protection
	// challenge is left alone.
	ChallengeRetryAfter = 24 * time.Hour

	maxFrontier = 1000 // URLs remembered for the queue
)

// ErrBadInput marks errors in what the caller asked for (not in the site).
var ErrBadInput = errors.New("bad input")

// Config is one crawl's settings. Zero values take the defaults.
type Config struct {
	MaxPages  int           // 1..runreport.MaxPages; 0 means runreport.MaxPages
	Delay     time.Duration // minimum gap between request starts to a host
	UserAgent string
	// Token is the robots.txt product token. Empty means the product of
	// UserAgent (the leading [A-Za-z_-] run, "LohiSoftBot" for the default
	// UA), falling back to DefaultToken.
	Token string
	// Fetch configures the HTTP client; its UserAgent is set from above.
	Fetch fetch.Config
	// Timeout bounds the whole crawl (0: no bound beyond ctx).
	Timeout time.Duration
	// MaxAttempts is how often one URL is tried when the server answers
	// 429/5xx or the network fails (default 3).
	MaxAttempts int
	// MaxFailures is how many failed requests in a row make the crawler
	// give up on the site (default 5).
	MaxFailures int
	// MaxWait is the longest back-off waited inside one crawl (default 2
	// minutes); a longer Retry-After ends the crawl with RetryAfter set.
	MaxWait time.Duration
	Backoff politeness.Backoff
	// Progress, if set, receives the crawl so far after every page that
	// took a request (not after URLs skipped without one).
	Progress func(runreport.Crawl)
	Log      *slog.Logger
	// RobotsCache, if set, is consulted and filled (per scheme+host+port,
	// at most 24 h).
	RobotsCache *robots.Cache
	// Now is the clock for fetchedAt and retryAfter (default time.Now).
	Now func() time.Time
	// Previous are the pages the index holds from the site's last crawl,
	// with their validators (the results endpoint's answer): their
	// validators are sent back, and they are queued when a 304 hides a
	// page's links (conditional.go).
	Previous []runreport.KnownPage
}

// TokenFor returns the robots.txt product token for a user agent.
func TokenFor(userAgent string) string {
	if t := robots.ProductToken(strings.TrimSpace(userAgent)); t != "" {
		return t
	}
	return DefaultToken
}

// Crawl crawls the site of start. It returns an error only for bad input;
// every problem with the site itself ends up in the document (skipped
// entries, robots status, retryAfter).
func Crawl(ctx context.Context, cfg Config, start string) (runreport.Crawl, error) {
	if cfg.MaxPages == 0 {
		cfg.MaxPages = runreport.MaxPages
	}
	if cfg.MaxPages < 1 || cfg.MaxPages > runreport.MaxPages {
		return runreport.Crawl{}, fmt.Errorf("%w: max pages must be between 1 and %d, got %d", ErrBadInput, runreport.MaxPages, cfg.MaxPages)
	}
	if cfg.Delay < 0 {
		return runreport.Crawl{}, fmt.Errorf("%w: delay must not be negative", ErrBadInput)
	}
	u, err := urlnorm.ParseStart(start)
	if err != nil {
		return runreport.Crawl{}, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	if len(u.String()) > runreport.MaxURLLength {
		return runreport.Crawl{}, fmt.Errorf("%w: URL longer than %d bytes", ErrBadInput, runreport.MaxURLLength)
	}
	c := newCrawler(cfg, urlnorm.Clean(u))
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	c.run(ctx)
	return c.snapshot(), nil
}

type crawler struct {
	cfg    Config
	log    *slog.Logger
	client *fetch.Client
	hosts  *politeness.Hosts
	token  string
	start  *url.URL

	// upgradable: the start URL's site is plain HTTP on port 80 and its
	// first visit is not over, so a redirect to https on the same host
	// moves the crawl there (adopt).
	upgradable bool

	res      runreport.Crawl
	policy   robots.Policy
	addrs    map[string][]netip.Addr // host → IPv4 addresses, for the per-address gates
	requests int                     // page requests sent (the budget)
	failures int                     // failed requests in a row
	stopped  bool

	// URLs are keyed by resource (key, resource.go).
	seen      map[string]bool
	queue     []*url.URL
	pageIndex map[string]int      // URL → index in res.Pages
	anchors   map[string][]string // target URL → anchor texts
	// redirected: recorded URL → URLs whose anchors are its own (those that
	// redirected to it, named it canonical or duplicated it).
	redirected map[string][]string
	offSite    map[string]int            // URL → index in res.OffSiteLinks
	bodies     map[[sha256.Size]byte]int // body hash → index in res.Pages
	prev       previous                  // the previous run's pages and validators
	unchanged  int                       // pages answered 304 Not Modified
}

func newCrawler(cfg Config, start *url.URL) *crawler {
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.Token == "" {
		cfg.Token = TokenFor(cfg.UserAgent)
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = 5
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 2 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	fc := cfg.Fetch
	fc.UserAgent = cfg.UserAgent
	return &crawler{
		cfg:    cfg,
		log:    log.With("site", urlnorm.Origin(start)),
		client: fetch.New(fc),
		hosts:  &politeness.Hosts{Gap: cfg.Delay},
		token:  cfg.Token,
		start:  start,
		upgradable: func() bool {
			st, err := site.Parse(start.String())
			_, ok := st.Secure()
			return err == nil && ok
		}(),
		res: runreport.Crawl{
			Site:      urlnorm.Origin(start),
			UserAgent: cfg.UserAgent,
			Pages:     []runreport.Page{},
			Skipped:   []runreport.Skip{},
		},
		seen:       map[string]bool{},
		addrs:      map[string][]netip.Addr{},
		pageIndex:  map[string]int{},
		anchors:    map[string][]string{},
		redirected: map[string][]string{},
		offSite:    map[string]int{},
		bodies:     map[[sha256.Size]byte]int{},
		prev:       newPrevious(cfg.Previous),
	}
}

// skip records a URL that is not indexed. The URL and the reason may carry
// what the site sent (a Location, a Content-Type, an error quoting either),
// so both are capped before they enter the document or the log.
func (c *crawler) skip(u string, reason string) {
	u, reason = runreport.Cut(u, runreport.MaxURLLength), runreport.Cut(reason, runreport.MaxReasonLength)
	c.log.Info("skipped", "url", u, "reason", reason)
	if len(c.res.Skipped) >= runreport.MaxSkipped {
		c.res.SkippedOmitted++
		return
	}
	c.res.Skipped = append(c.res.Skipped, runreport.Skip{URL: u, Reason: reason})
}

// stop ends the crawl; retryAfter > 0 asks the operator to stay away that
// long.
func (c *crawler) stop(retryAfter time.Duration) {
	c.stopped = true
	if retryAfter > 0 {
		at := c.cfg.Now().Add(retryAfter).UTC().Truncate(time.Second)
		if prev, err := time.Parse(time.RFC3339, c.res.RetryAfter); err != nil || at.After(prev) {
			c.res.RetryAfter = at.Format(time.RFC3339)
		}
	}
}

func (c *crawler) run(ctx context.Context) {
	// Refuse before sending anything when the site cannot be reached under
	// the address rules (IPv4 only, public only).
	d := c.cfg.Fetch.Dialer
	if _, err := d.Addresses(ctx, c.start.Hostname()); err != nil && fetch.IsPermanent(err) {
		c.log.Error("site refused", "err", err)
		c.skip(c.start.String(), "refused: "+err.Error())
		return
	}
	c.readRobots(ctx)
	if c.stopped {
		return
	}
	c.enqueue(c.start)
	c.notRobotsAgain()
	for first := true; len(c.queue) > 0 && !c.stopped; first = false {
		if ctx.Err() != nil {
			c.skipRest(stopReason(ctx))
			return
		}
		if c.requests >= c.cfg.MaxPages {
			c.skipRest("crawl budget exhausted")
			return
		}
		u := c.queue[0]
		c.queue = c.queue[1:]
		sent := c.requests
		c.visit(ctx, u)
		if c.requests > sent { // a page was requested: report progress
			c.progress()
		}
		if first { // the start URL first, the sitemaps next
			c.upgradable = false
			c.readSitemaps(ctx)
		}
	}
	if ctx.Err() != nil && len(c.queue) > 0 {
		c.skipRest(stopReason(ctx))
	}
}

// stopReason says why the crawl ended early: its time limit, or a signal
// (the Pod being stopped).
func stopReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "crawl timeout"
	}
	return "crawl interrupted"
}

func (c *crawler) skipRest(reason string) {
	for _, u := range c.queue {
		if !c.policy.Allowed(c.token, u.String()) {
			c.skip(u.String(), "disallowed by robots.txt")
			continue
		}
		c.skip(u.String(), reason)
	}
	c.queue = nil
}

func (c *crawler) progress() {
	if c.cfg.Progress != nil {
		c.cfg.Progress(c.snapshot())
	}
}

func (c *crawler) readRobots(ctx context.Context) {
	origin := urlnorm.Origin(c.start)
	if c.cfg.RobotsCache != nil {
		if p, ok := c.cfg.RobotsCache.Get(origin); ok {
			c.setPolicy(p)
			return
		}
	}
	var fetchedAt time.Time
	challenged := 0
	var refused error
	get := func(ctx context.Context, u *url.URL) (*robots.Response, error) {
		o, err := c.request(ctx, u, false, func(r *http.Response) bool {
			return r.StatusCode >= 200 && r.StatusCode < 300
		})
		if err != nil && fetch.IsPermanent(err) {
			refused = err
		}
		if err != nil && (o.resp == nil || !errors.Is(err, errGivenUp)) {
			return nil, err
		}
		// A server that kept answering 429/5xx still gave a status:
		// report it, not "unreachable".
		fetchedAt = o.resp.Started
		if isChallenge(o.resp.StatusCode, o.resp.Header, o.resp.Body) {
			challenged = o.resp.StatusCode
		}
		return &robots.Response{Status: o.resp.StatusCode, Location: o.resp.Header.Get("Location"), Body: o.resp.Body}, nil
	}
	p := robots.Fetch(ctx, get, c.start)
	if !fetchedAt.IsZero() {
		c.res.Robots.FetchedAt = fetchedAt.UTC()
	}
	c.log.Info("robots.txt", "status", p.Status, "access", p.Access.String(), "reason", p.Reason)
	if refused != nil {
		// robots.txt (or its redirect) points where the address rules
		// forbid: that will not change in a second, so no retryAfter; the
		// operator's own schedule decides when to look again.
		c.res.Robots.Status = p.Status
		c.skip(c.start.String(), "refused: robots.txt: "+refused.Error())
		c.stop(0)
		return
	}
	if challenged != 0 {
		c.res.Robots.Status = p.Status
		c.skip(c.start.String(), fmt.Sprintf("bot protection challenge on robots.txt (HTTP %d): not bypassed, site left alone", challenged))
		c.stop(ChallengeRetryAfter)
		return
	}
	if c.cfg.RobotsCache != nil {
		c.cfg.RobotsCache.Put(origin, p)
	}
	c.setPolicy(p)
}

// notRobotsAgain: robots.txt is no page, so a link or a sitemap naming it
// is not worth a second request (unless it is the start URL, queued
// already).
func (c *crawler) notRobotsAgain() {
	c.seen[c.robotsURL().String()] = true
}

// adopt moves the crawl to the https site the start URL redirected to (on
// the same host, default ports: site.IsSecureUpgrade): the site lives
// there, so its pages, its links and its own robots.txt (RFC 9309: rules
// are per scheme, host and port) are what count from now on, and the
// report says which site was asked for.
func (c *crawler) adopt(ctx context.Context, secure *url.URL) {
	from := c.res.Site
	c.upgradable = false
	c.start = secure
	c.res.Site, c.res.UpgradedFrom = urlnorm.Origin(secure), from
	c.log.Info("site upgraded to https", "from", from, "to", c.res.Site)
	c.readRobots(ctx)
	c.notRobotsAgain()
}

func (c *crawler) setPolicy(p robots.Policy) {
	c.policy = p
	c.res.Robots.Status = p.Status
	if p.BackOff() {
		// Complete disallow (RFC 9309 §2.3.1.4): nothing is fetched and
		// the operator is told when to come back.
		c.skip(c.start.String(), p.Reason)
		c.stop(c.cfg.Backoff.Delay(1))
		return
	}
	if g := p.Group(c.token); g.HasCrawlDelay {
		gap := politeness.Gap(c.cfg.Delay, g.CrawlDelay)
		c.hosts.Gate(c.start.Hostname()).RaiseGap(gap)
		c.log.Info("crawl-delay", "gap", gap)
	}
}

func (c *crawler) enqueue(u *url.URL) {
	k := u.String()
	if c.seen[k] || len(c.seen) >= maxFrontier {
		return
	}
	c.seen[k] = true
	if len(k) > runreport.MaxURLLength {
		c.skip(k, fmt.Sprintf("URL longer than %d bytes", runreport.MaxURLLength))
		return
	}
	c.queue = append(c.queue, u)
}

// outcome is one URL's final response after retries.
type outcome struct {
	resp *fetch.Response
}

var (
	errBudget  = errors.New("crawl budget exhausted")
	errGivenUp = errors.New("gave up on the site")
)

// request sends GETs for u until one is not a back-off answer, the attempts
// run out, or the site is given up. Every attempt waits at the host's gate
// (one request at a time, spaced starts, Retry-After). page requests count
// against the budget.
func (c *crawler) request(ctx context.Context, u *url.URL, page bool, wantBody func(*http.Response) bool) (outcome, error) {
	gate := c.gate(ctx, u)
	get := func(ctx context.Context) (*fetch.Response, error) {
		return c.client.GetIf(ctx, u, c.conditionFor(u, page), func(r *http.Response) bool {
			return wantBody(r) || wantsChallengeCheck(r)
		})
	}
	for attempt := 1; ; attempt++ {
		if page && c.requests >= c.cfg.MaxPages {
			return outcome{}, errBudget
		}
		resp, err := c.send(ctx, gate, u, page, attempt, get)
		if err == nil {
			if isChallenge(resp.StatusCode, resp.Header, resp.Body) {
				return outcome{resp: resp}, nil
			}
			if !politeness.BackOffStatus(resp.StatusCode) {
				c.failures = 0
				return outcome{resp: resp}, nil
			}
		} else {
			if ctx.Err() != nil {
				return outcome{}, ctx.Err()
			}
			c.log.Warn("request failed", "url", u.String(), "err", err, "attempt", attempt)
			if fetch.IsPermanent(err) || errors.Is(err, fetch.ErrBrokenResponse) {
				// Neither changes by asking again, and a broken page is
				// not the host failing: no retry, no failure counted.
				return outcome{}, err
			}
		}
		c.failures++
		wait := c.retryWait(attempt, resp)
		if attempt >= c.cfg.MaxAttempts || c.failures >= c.cfg.MaxFailures || wait > c.cfg.MaxWait || exceedsDeadline(ctx, wait) {
			// The crawler comes back no earlier than the site asked, and
			// never sooner than the next back-off step.
			c.stop(max(wait, c.cfg.Backoff.Delay(attempt+1)))
			what := "network error"
			if resp != nil {
				what = fmt.Sprintf("HTTP %d", resp.StatusCode)
			}
			c.log.Warn("giving up on the site", "url", u.String(), "after", what, "attempts", attempt, "retryAfter", c.res.RetryAfter)
			return outcome{resp: resp}, fmt.Errorf("%w: %s after %d attempt(s)", errGivenUp, what, attempt)
		}
		c.log.Info("backing off", "url", u.String(), "wait", wait)
		gate.NotBefore(time.Now().Add(wait))
	}
}

// gate is where requests to u's host wait their turn: one slot per host name
// and per address it resolves to.
func (c *crawler) gate(ctx context.Context, u *url.URL) politeness.Set {
	return c.hosts.For(u.Hostname(), c.addresses(ctx, u.Hostname()))
}

// send makes one attempt at u through its gate, holding the slot until the
// response is read; a page request (sitemaps too) counts against the budget.
// It fails without a request only when ctx ends while it waits.
func (c *crawler) send(ctx context.Context, gate politeness.Set, u *url.URL, page bool, attempt int, get func(context.Context) (*fetch.Response, error)) (*fetch.Response, error) {
	release, err := gate.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if page {
		c.requests++
	}
	resp, err := get(ctx)
	release()
	if resp != nil {
		c.log.Info("fetched", "url", u.String(), "status", resp.StatusCode, "bytes", len(resp.Body), "truncated", resp.Truncated, "attempt", attempt)
	}
	return resp, err
}

// retryWait is how long a host that answered resp (nil: none came) is
// left alone before the next attempt: its Retry-After, else the back-off
// step.
func (c *crawler) retryWait(attempt int, resp *fetch.Response) time.Duration {
	if resp != nil {
		if ra, ok := politeness.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return ra
		}
	}
	return c.cfg.Backoff.Delay(attempt)
}

// addresses returns the IPv4 addresses host resolves to under the dialer's
// rules, looked up once per crawl; nil when it does not resolve (the
// request then fails on its own, and only the host's gate applies).
func (c *crawler) addresses(ctx context.Context, host string) []netip.Addr {
	if a, ok := c.addrs[host]; ok {
		return a
	}
	d := c.cfg.Fetch.Dialer
	a, err := d.Addresses(ctx, host)
	if err != nil {
		a = nil
	}
	c.addrs[host] = a
	return a
}

func exceedsDeadline(ctx context.Context, wait time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < wait
}

// wantsChallengeCheck reads the body of the statuses bot protection uses, so
// a challenge page can be recognised (and the site left alone).
func wantsChallengeCheck(r *http.Response) bool {
	switch r.StatusCode {
	case http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	}
	return false
}

func wantPageBody(r *http.Response) bool {
	if r.StatusCode < 200 || r.StatusCode >= 300 {
		return false
	}
	ct := r.Header.Get("Content-Type")
	return ct == "" || extract.IsHTML(ct)
}

// visit fetches one queued URL, following its redirect chain.
func (c *crawler) visit(ctx context.Context, u *url.URL) {
	cur := u
	for hop := 0; ; hop++ {
		if !c.policy.Allowed(c.token, cur.String()) {
			c.skip(cur.String(), "disallowed by robots.txt")
			return
		}
		o, err := c.request(ctx, cur, true, wantPageBody)
		switch {
		case errors.Is(err, errBudget):
			c.skip(cur.String(), "crawl budget exhausted")
			return
		case errors.Is(err, errGivenUp):
			c.skip(cur.String(), err.Error())
			c.skipRest(err.Error())
			return
		case errors.Is(err, fetch.ErrBrokenResponse):
			c.skip(cur.String(), err.Error())
			return
		case ctx.Err() != nil:
			c.skip(cur.String(), stopReason(ctx))
			return
		case err != nil:
			c.skip(cur.String(), "refused: "+err.Error())
			if fetch.IsPermanent(err) {
				c.stop(0)
			}
			return
		}
		resp := o.resp
		next, read := c.status("", cur, resp, hop)
		switch {
		case next != nil:
			c.alias(key(next), key(cur))
			cur = next
			if !urlnorm.SameSite(next, c.start) {
				// Only a secure upgrade gets here (redirectTarget).
				if c.adopt(ctx, next); c.stopped {
					return
				}
			}
			continue
		case !read:
		case resp.StatusCode == http.StatusNotModified:
			c.notModified(cur, resp)
		default:
			c.page(cur, resp)
		}
		return
	}
}

// status applies what a response's status means for any request of the
// crawl, a page's or a sitemap's (what starts the skipped entry: "" or
// "sitemap: "), so the two cannot drift apart: a bot-protection challenge
// leaves the site alone; a redirect is followed only on this site, to a URL
// not requested yet, at most MaxRedirects deep; 401 and 403 are not
// bypassed; any other status but 2xx and 304 ends the URL. It returns the
// redirect target to request next (the redirect's skipped entry written),
// or read when the caller reads the response (a 2xx, or a 304 to a
// conditional request); neither when the URL is done with, its skipped
// entry written.
func (c *crawler) status(what string, cur *url.URL, resp *fetch.Response, hop int) (next *url.URL, read bool) {
	switch code := resp.StatusCode; {
	case isChallenge(code, resp.Header, resp.Body):
		c.skip(cur.String(), what+challengeReason(code))
		c.stop(ChallengeRetryAfter)
	case code >= 200 && code < 300, code == http.StatusNotModified:
		return nil, true
	case code >= 300 && code < 400:
		next := c.redirectTarget(what, cur, resp, hop)
		if next != nil {
			c.skip(cur.String(), fmt.Sprintf("%sHTTP %d: redirects to %s", what, code, next))
		}
		return next, false
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		c.skip(cur.String(), fmt.Sprintf("%sHTTP %d: access restricted, not bypassed", what, code))
	default:
		c.skip(cur.String(), fmt.Sprintf("%sHTTP %d", what, code))
	}
	return nil, false
}

// redirectTarget is where a redirect leads, when the crawl follows it (and
// the target is then taken off the queue: it is requested now); nil, with
// the skipped entry written, when not.
func (c *crawler) redirectTarget(what string, cur *url.URL, resp *fetch.Response, hop int) *url.URL {
	loc := resp.Header.Get("Location")
	next, ok := urlnorm.Resolve(cur, loc)
	why := ""
	switch {
	case loc == "" || !ok:
		why = fmt.Sprintf("HTTP %d without a usable Location", resp.StatusCode)
	case !urlnorm.SameSite(next, c.start) && !c.upgrades(what, next):
		why = fmt.Sprintf("redirects off-site to %s (not followed)", next)
	case len(next.String()) > runreport.MaxURLLength:
		why = fmt.Sprintf("redirects to a URL longer than %d bytes", runreport.MaxURLLength)
	case hop+1 > MaxRedirects:
		why = "too many redirects"
	case c.isPage(next):
		c.alias(key(next), key(cur))
		why = "redirects to " + next.String() + " (already crawled)"
	case next.String() == cur.String() || key(next) != key(cur) && c.seen[key(next)] && !c.inQueue(next):
		// (A redirect that only adds a session id is followed: the
		// server insists, and the page is recorded without it.)
		why = "redirect loop via " + next.String()
	default:
		c.seen[key(next)] = true
		c.dequeue(next)
		return next
	}
	c.skip(cur.String(), what+why)
	return nil
}

// upgrades reports whether a page redirect to next moves the crawl to the
// https site of its plain-HTTP start URL (adopt): only during the start
// URL's visit, so a site cannot switch the crawl halfway through.
func (c *crawler) upgrades(what string, next *url.URL) bool {
	return what == "" && c.upgradable && site.IsSecureUpgrade(c.start.String(), next.String())
}

func (c *crawler) isPage(u *url.URL) bool {
	_, ok := c.pageIndex[key(u)]
	return ok
}

func (c *crawler) inQueue(u *url.URL) bool {
	k := key(u)
	for _, q := range c.queue {
		if q.String() == k {
			return true
		}
	}
	return false
}

// dequeue removes u from the queue: the redirect chain fetches it now, or
// a page was recorded as it.
func (c *crawler) dequeue(u *url.URL) {
	k := key(u)
	for i, q := range c.queue {
		if q.String() == k {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			return
		}
	}
}

// page handles a 2xx response: extract, honour noindex/nofollow, record.
func (c *crawler) page(u *url.URL, resp *fetch.Response) {
	// Without a Content-Type the bytes decide whether this is HTML, but
	// not its encoding: the sniffed type always says UTF-8, and would
	// override the page's own <meta charset>.
	ct := resp.Header.Get("Content-Type")
	kind := ct
	if kind == "" {
		kind = sniffType(resp.Body)
	}
	if !extract.IsHTML(kind) {
		c.skip(u.String(), "not HTML ("+mediaType(kind)+")")
		return
	}
	p, err := extract.Extract(bytes.NewReader(resp.Body), ct, c.token)
	if err != nil {
		c.skip(u.String(), "unreadable HTML: "+err.Error())
		return
	}
	dir := p.Robots.Merge(extract.HeaderDirectives(resp.Header.Values("X-Robots-Tag"), c.token))
	base := u
	if p.Base != "" {
		if b, ok := urlnorm.Resolve(u, p.Base); ok {
			base = b
		}
	}
	if !dir.NoFollow {
		for _, l := range p.Links {
			if l.NoFollow {
				continue
			}
			target, ok := resolve(base, l.Href)
			if !ok {
				continue
			}
			if !urlnorm.SameSite(target, c.start) {
				if !dir.NoIndex {
					c.addOffSite(target.String(), l.Text)
				}
				continue
			}
			// A noindex page is not stored, and neither is its text in
			// the anchors of other pages.
			if !dir.NoIndex && l.Text != "" {
				c.addAnchor(target.String(), l.Text)
			}
			c.enqueue(target)
		}
	}
	if dir.NoIndex {
		c.skip(u.String(), "noindex")
		return
	}
	etag, lastModified := c.validators(resp)
	c.record(u, resp.Body, c.canonical(u, base, resp.Header.Values("Link"), p.Canonical), runreport.Page{
		StatusCode:  resp.StatusCode,
		Title:       runreport.Cut(p.Title, runreport.MaxTitleLength),
		Description: runreport.Cut(p.Description, runreport.MaxDescriptionLength),
		Headings: runreport.Headings{
			H1: headings(p.H1),
			H2: headings(p.H2),
			H3: headings(p.H3),
		},
		FetchedAt:    resp.Started.UTC(),
		Lang:         pageLang(p.Lang, resp.Header.Get("Content-Language")),
		ETag:         etag,
		LastModified: lastModified,
	})
}

// pageLang is the page's own <html lang> when it is a valid tag, else the
// server's Content-Language: the page knows its language better than a
// server default does.
func pageLang(htmlLang, contentLanguage string) string {
	if l := runreport.Lang(htmlLang); l != "" {
		return l
	}
	return runreport.Lang(contentLanguage)
}

// sniffType is http.DetectContentType, which takes a page with a UTF-16
// byte-order mark for text/plain, made to look through the mark.
func sniffType(body []byte) string {
	head := body[:min(len(body), 1024)]
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		if dec, _, _ := transform.Bytes(unicode.BOMOverride(unicode.UTF8.NewDecoder()), head); len(dec) > 0 {
			return http.DetectContentType(dec)
		}
	}
	return http.DetectContentType(body)
}

func headings(h []string) []string {
	if h = runreport.CutAll(h, runreport.MaxHeadingsPerLevel, runreport.MaxHeadingLength); h == nil {
		return []string{}
	}
	return h
}

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	if mt = strings.TrimSpace(mt); mt == "" {
		return "no content type"
	}
	return mt
}

func (c *crawler) addAnchor(target, text string) {
	list := c.anchors[target]
	if text = runreport.Cut(text, runreport.MaxAnchorLength); text == "" || len(list) >= runreport.MaxInboundAnchors {
		return
	}
	for _, t := range list {
		if t == text {
			return
		}
	}
	c.anchors[target] = append(list, text)
}

func (c *crawler) addOffSite(target, text string) {
	i, ok := c.offSite[target]
	if !ok {
		if len(c.res.OffSiteLinks) >= runreport.MaxOffSiteLinks || len(target) > runreport.MaxURLLength {
			return
		}
		i = len(c.res.OffSiteLinks)
		c.offSite[target] = i
		c.res.OffSiteLinks = append(c.res.OffSiteLinks, runreport.OffSiteLink{URL: target, Anchors: []string{}})
	}
	l := &c.res.OffSiteLinks[i]
	if text = runreport.Cut(text, runreport.MaxAnchorLength); text == "" || len(l.Anchors) >= runreport.MaxOffSiteAnchors {
		return
	}
	for _, t := range l.Anchors {
		if t == text {
			return
		}
	}
	l.Anchors = append(l.Anchors, text)
}

// snapshot returns a copy of the crawl so far with each page's inbound
// anchors (including those of URLs that redirected to it).
func (c *crawler) snapshot() runreport.Crawl {
	out := c.res
	out.Stats = c.stats()
	out.Pages = make([]runreport.Page, len(c.res.Pages))
	copy(out.Pages, c.res.Pages)
	for i := range out.Pages {
		out.Pages[i].InboundAnchors = c.inbound(out.Pages[i].URL)
	}
	out.Skipped = append([]runreport.Skip{}, c.res.Skipped...)
	if c.res.OffSiteLinks != nil {
		out.OffSiteLinks = make([]runreport.OffSiteLink, len(c.res.OffSiteLinks))
		for i, l := range c.res.OffSiteLinks {
			out.OffSiteLinks[i] = runreport.OffSiteLink{URL: l.URL, Anchors: append([]string{}, l.Anchors...)}
		}
	}
	if runreport.Fit(&out, runreport.MaxDocumentBytes) {
		c.log.Warn("document trimmed to its size limit", "limit", runreport.MaxDocumentBytes)
	}
	return out
}

func (c *crawler) inbound(u string) []string {
	texts := []string{}
	seen := map[string]bool{}
	visited := map[string]bool{}
	var walk func(string)
	walk = func(k string) {
		if visited[k] {
			return
		}
		visited[k] = true
		for _, t := range c.anchors[k] {
			if !seen[t] && len(texts) < runreport.MaxInboundAnchors {
				seen[t] = true
				texts = append(texts, t)
			}
		}
		for _, src := range c.redirected[k] {
			walk(src)
		}
	}
	walk(u)
	return texts
}
