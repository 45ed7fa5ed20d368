// Package politeness holds the etiquette rules that pace LohiSoftBot: one
// request per host at a time, a minimum gap between request starts, and
// backing off when a server says it is overloaded.
package politeness

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxCrawlDelay caps a robots.txt Crawl-delay: a site asking for more than a
// minute between requests still gets a minute (and the 20-page budget keeps
// the visit short).
const MaxCrawlDelay = 60 * time.Second

// Gap is the minimum time between two requests to one host:
// the configured delay, raised to the site's Crawl-delay (capped).
func Gap(delay, crawlDelay time.Duration) time.Duration {
	return max(delay, min(crawlDelay, MaxCrawlDelay))
}

// Gate serialises requests to one host and spaces their starts. The zero
// value is not usable; use NewGate or Hosts.
type Gate struct {
	slot chan struct{} // one token: held for the whole request

	mu  sync.Mutex
	gap time.Duration
	// lastEnd is when the previous request finished. The gap is counted
	// from there, not from its start: the server sees a request start a
	// little after the client decides to send it (connection set-up,
	// scheduling), and counting from the end keeps every start-to-start
	// gap the server observes at least the gap, with no jitter below it.
	lastEnd   time.Time
	notBefore time.Time
}

// NewGate returns a gate with the given minimum gap between starts.
func NewGate(gap time.Duration) *Gate {
	g := &Gate{slot: make(chan struct{}, 1), gap: gap}
	return g
}

// RaiseGap sets the gap to d if that is longer (a Crawl-delay never
// shortens the configured delay).
func (g *Gate) RaiseGap(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gap = max(g.gap, d)
}

// CurrentGap returns the gap in force.
func (g *Gate) CurrentGap() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gap
}

// NotBefore forbids any request start before t (Retry-After, back-off).
func (g *Gate) NotBefore(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.After(g.notBefore) {
		g.notBefore = t
	}
}

// Acquire waits until this host has no request in flight and the gap since
// the previous request (and any back-off) has passed. The caller must call
// release when the response has been read.
func (g *Gate) Acquire(ctx context.Context) (release func(), err error) {
	select {
	case g.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		g.mu.Lock()
		next := g.notBefore
		if !g.lastEnd.IsZero() {
			next = later(next, g.lastEnd.Add(g.gap))
		}
		wait := time.Until(next)
		if wait <= 0 {
			g.mu.Unlock()
			break
		}
		g.mu.Unlock()
		if err := Sleep(ctx, wait); err != nil {
			<-g.slot
			return nil, err
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.lastEnd = time.Now()
			g.mu.Unlock()
			<-g.slot
		})
	}, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Hosts hands out one Gate per host name (ports of one host share it: they
// are the same machine to its owner).
type Hosts struct {
	Gap   time.Duration
	mu    sync.Mutex
	gates map[string]*Gate
}

// Gate returns the gate for host, creating it on first use.
func (h *Hosts) Gate(host string) *Gate {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gates == nil {
		h.gates = make(map[string]*Gate)
	}
	g, ok := h.gates[host]
	if !ok {
		g = NewGate(h.Gap)
		h.gates[host] = g
	}
	return g
}

// For returns the gates a request to host must pass: the host name's and
// one per IPv4 address the name resolves to. Several names of one server
// (127.0.0.1 and localhost, www and the bare domain) then still get one
// request at a time with the gap between them: the delay is a promise to
// the machine, not to a spelling of its name.
func (h *Hosts) For(host string, addrs []netip.Addr) Set {
	set := Set{h.Gate(host)}
	for _, a := range addrs {
		set = append(set, h.Gate("ip:"+a.Unmap().String()))
	}
	return set
}

// Set is the gates of one request. The crawler sends one request at a time,
// so acquiring them one after the other cannot deadlock.
type Set []*Gate

// Acquire passes every gate of the set (see Gate.Acquire); release frees
// them all.
func (s Set) Acquire(ctx context.Context) (release func(), err error) {
	releases := make([]func(), 0, len(s))
	releaseAll := func() {
		for _, r := range releases {
			r()
		}
	}
	for _, g := range s {
		r, err := g.Acquire(ctx)
		if err != nil {
			releaseAll()
			return nil, err
		}
		releases = append(releases, r)
	}
	return releaseAll, nil
}

// NotBefore forbids request starts before t at every gate of the set.
func (s Set) NotBefore(t time.Time) {
	for _, g := range s {
		g.NotBefore(t)
	}
}

// Sleep waits for d or until ctx is done.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BackOffStatus reports whether a status code asks the crawler to slow down
// and try later: 429 and every 5xx.
func BackOffStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500 && code < 600
}

// ParseRetryAfter reads a Retry-After value in either form RFC 9110 allows:
// delay-seconds or an HTTP-date. A date in the past means "now" (0).
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 63); err == nil {
		if n > uint64(365*24*3600) {
			n = 365 * 24 * 3600
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return d, true
	}
	return 0, true
}

// Backoff is exponential back-off for responses without Retry-After.
type Backoff struct {
	Base time.Duration // first wait; zero means one second
	Max  time.Duration // cap; zero means ten minutes
}

// Delay returns the wait before retry number attempt (1-based): Base,
// 2×Base, 4×Base, ... up to Max.
func (b Backoff) Delay(attempt int) time.Duration {
	base, ceiling := b.Base, b.Max
	if base <= 0 {
		base = time.Second
	}
	if ceiling <= 0 {
		ceiling = 10 * time.Minute
	}
	d := base
	for i := 1; i < attempt; i++ {
		d *= 2
		if d >= ceiling || d <= 0 {
			return ceiling
		}
	}
	return min(d, ceiling)
}
