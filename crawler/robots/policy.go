package robots

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Access is the overall answer robots.txt gave for a site.
type Access int

const (
	// UseRules means robots.txt was read (2xx) and its rules decide.
	UseRules Access = iota
	// FullAllow means there is no usable robots.txt (4xx other than 429,
	// or too many redirects): RFC 9309 §2.3.1.3 lets the crawler fetch
	// anything.
	FullAllow
	// FullDisallow means robots.txt could not be read because the server
	// is struggling or refused us (429, 5xx, timeout, network error): RFC
	// 9309 §2.3.1.4 forbids crawling, and the crawler backs off.
	FullDisallow
)

func (a Access) String() string {
	switch a {
	case UseRules:
		return "rules"
	case FullAllow:
		return "full allow"
	default:
		return "full disallow"
	}
}

// Policy is how the crawler treats one site after asking for its robots.txt.
type Policy struct {
	// Status is the HTTP status of the last robots.txt response, 0 when no
	// response came (network error, timeout, refused address).
	Status int
	Access Access
	Rules  *Rules
	// Reason says in words why Access is what it is (for logs and skips).
	Reason string
}

// MaxRedirects is how many redirects are followed for robots.txt (RFC 9309
// §2.3.1.2: at least five).
const MaxRedirects = 5

// FromStatus turns one final robots.txt response into a Policy. 3xx here
// means the redirect chain was longer than MaxRedirects (Fetch follows the
// shorter ones), which RFC 9309 treats as unavailable.
func FromStatus(status int, body []byte) Policy {
	switch {
	case status >= 200 && status < 300:
		return Policy{Status: status, Access: UseRules, Rules: Parse(body), Reason: "robots.txt rules"}
	case status >= 300 && status < 400:
		return Policy{Status: status, Access: FullAllow, Reason: fmt.Sprintf("robots.txt redirected more than %d times (treated as unavailable)", MaxRedirects)}
	case status == 429:
		return Policy{Status: status, Access: FullDisallow, Reason: "robots.txt answered 429 Too Many Requests"}
	case status >= 400 && status < 500:
		return Policy{Status: status, Access: FullAllow, Reason: fmt.Sprintf("robots.txt answered %d (no restrictions)", status)}
	case status >= 500 && status < 600:
		return Policy{Status: status, Access: FullDisallow, Reason: fmt.Sprintf("robots.txt answered %d (server error)", status)}
	}
	return Policy{Status: status, Access: FullDisallow, Reason: fmt.Sprintf("robots.txt answered unexpected status %d", status)}
}

// Unreachable is the Policy when no response could be had.
func Unreachable(err error) Policy {
	return Policy{Access: FullDisallow, Reason: "robots.txt unreachable: " + err.Error()}
}

// BackOff reports whether the site asked (or showed the need) for the
// crawler to stay away for now.
func (p Policy) BackOff() bool { return p.Access == FullDisallow }

// Allowed reports whether a URL (or path) may be fetched by token. With
// rules, it is allowed only if every spelling a common server resolves it
// to is (Group.Allowed): "//private/x", "/%2e%2e/private/x" and
// "/private;jsessionid=1" are all refused under "Disallow: /private".
func (p Policy) Allowed(token, target string) bool {
	switch p.Access {
	case FullAllow:
		return true
	case FullDisallow:
		return false
	}
	return p.Rules.Group(token).Allowed(target)
}

// Group returns the rules for token (empty for full allow/disallow).
func (p Policy) Group(token string) Group {
	if p.Access != UseRules {
		return Group{}
	}
	return p.Rules.Group(token)
}

// Response is one robots.txt answer, as much as Fetch needs of it.
type Response struct {
	Status   int
	Location string // Location header, for 3xx
	Body     []byte // at least the first MaxSize bytes
}

// GetFunc sends one GET for robots.txt. The crawler passes its polite,
// size-capped client here so that robots.txt is fetched with the same
// User-Agent, the same per-host gate and the same retries as pages.
type GetFunc func(ctx context.Context, u *url.URL) (*Response, error)

// Fetch asks for site's /robots.txt, follows up to MaxRedirects redirects
// (to any host: RFC 9309 allows it), and classifies the outcome.
func Fetch(ctx context.Context, get GetFunc, site *url.URL) Policy {
	u := &url.URL{Scheme: site.Scheme, Host: site.Host, Path: "/robots.txt"}
	for redirects := 0; ; redirects++ {
		resp, err := get(ctx, u)
		if err != nil {
			return Unreachable(err)
		}
		if resp.Status < 300 || resp.Status >= 400 || redirects == MaxRedirects {
			return FromStatus(resp.Status, resp.Body)
		}
		next, err := u.Parse(strings.TrimSpace(resp.Location))
		if resp.Location == "" || err != nil || (next.Scheme != "http" && next.Scheme != "https") {
			p := FromStatus(resp.Status, nil)
			p.Reason = fmt.Sprintf("robots.txt answered %d without a usable Location (treated as unavailable)", resp.Status)
			return p
		}
		next.Fragment = ""
		u = next
	}
}

// DefaultTTL is the longest a robots.txt answer is reused (RFC 9309 §2.4:
// SHOULD NOT be cached for more than 24 hours).
const DefaultTTL = 24 * time.Hour

// Cache keeps Policies per scheme+host+port for at most TTL. Back-off
// policies are not cached: the next crawl must ask again.
type Cache struct {
	TTL time.Duration    // zero means DefaultTTL; capped at DefaultTTL
	Now func() time.Time // zero means time.Now
	mu  sync.Mutex
	m   map[string]cacheItem // key: lower-case scheme://host:port
}

type cacheItem struct {
	p       Policy
	expires time.Time
}

func (c *Cache) ttl() time.Duration {
	if c.TTL <= 0 || c.TTL > DefaultTTL {
		return DefaultTTL
	}
	return c.TTL
}

func (c *Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Get returns a cached Policy for origin if one is still fresh.
func (c *Cache) Get(origin string) (Policy, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.m[strings.ToLower(origin)]
	if !ok || !c.now().Before(it.expires) {
		return Policy{}, false
	}
	return it.p, true
}

// Put stores p for origin unless it is a back-off policy.
func (c *Cache) Put(origin string, p Policy) {
	if p.BackOff() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]cacheItem)
	}
	c.m[strings.ToLower(origin)] = cacheItem{p: p, expires: c.now().Add(c.ttl())}
}
