package reportendpoint

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// Defaults of the failure limit per source address.
const (
	// DefaultFailureRate is how many failed authentications per second a
	// source may make, on average, before it gets 429.
	DefaultFailureRate = 2.0
	// DefaultFailureBurst is how many it may make in a row.
	DefaultFailureBurst = 20
	// negativeTTL is how long "no such Pod" from the API server is
	// remembered for a name the cache does not know either.
	negativeTTL = 5 * time.Second
	// maxTracked bounds the memory of the limiter and the negative cache;
	// when full, entries that have nothing left to say are dropped first.
	maxTracked = 10000
)

// checkNames refuses a namespace or Pod name that no Pod can have, before
// anything is looked up: "a/b" (from a%2Fb), "..", empty, too long.
func checkNames(ns, name string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fail("malformed_name", http.StatusBadRequest, "malformed namespace in the URL: want POST /v1/runs/{namespace}/{pod}")
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fail("malformed_name", http.StatusBadRequest, "malformed pod name in the URL: want POST /v1/runs/{namespace}/{pod}")
	}
	return nil
}

// lookupRun finds the crawler Pod a token is for. The manager's cache
// holds every crawler Pod, so a wrong token or an unknown name is answered
// from memory: a client guessing tokens costs the API server nothing. Only
// a name the cache does not know is asked of the API server (a Pod created
// a moment ago), and "not found" is then remembered for negativeTTL; with
// cacheOnly it is not asked at all. fromAPI says whether pod was read from
// the API server; a Pod found in the cache must be read again before it is
// trusted to be live. A namespace the manager does not watch holds no run
// of its: nothing is looked up.
func (s *Server) lookupRun(ctx context.Context, key client.ObjectKey, token string, cacheOnly bool) (pod *corev1.Pod, fromAPI bool, err error) {
	if !s.Namespaces.Has(key.Namespace) {
		return nil, false, errUnknownRun
	}
	pod = &corev1.Pod{}
	cached := s.Client != nil && s.Reader != nil
	if cached {
		err := s.Client.Get(ctx, key, pod)
		switch {
		case err == nil:
			if !crawlpod.IsCrawlerPod(pod) || !crawlpod.TokenMatches(pod, token) {
				return nil, false, errUnknownRun
			}
			return pod, false, nil
		case !apierrors.IsNotFound(err):
			return nil, false, err
		}
		if cacheOnly || s.absent.has(key.String(), s.now()) {
			return nil, false, errUnknownRun
		}
	}
	err = s.reader().Get(ctx, key, pod)
	if apierrors.IsNotFound(err) {
		if cached {
			s.absent.add(key.String(), s.now())
		}
		return nil, true, errUnknownRun
	}
	if err != nil {
		return nil, true, err
	}
	if !crawlpod.IsCrawlerPod(pod) || !crawlpod.TokenMatches(pod, token) {
		return nil, true, errUnknownRun
	}
	return pod, true, nil
}

var errUnknownRun = fail(reasonWrongToken, http.StatusForbidden, "unknown run or wrong token")

// source names the client for the failure limit: its IP address.
func source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// tooMany answers a source that failed too often: 429 with Retry-After.
func tooMany(wait time.Duration) error {
	secs := max(1, int(wait.Round(time.Second)/time.Second))
	return &httpError{code: http.StatusTooManyRequests, reason: reasonRateLimited, msg: "too many failed requests from this address; retry later",
		header: http.Header{"Retry-After": []string{strconv.Itoa(secs)}}}
}

// failureLimiter is a token bucket per source address, spent by failed
// requests only: a crawler with its run's token is never slowed down.
type failureLimiter struct {
	rate  float64
	burst float64

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func (l *failureLimiter) refill(b *bucket, now time.Time) {
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
}

// wait returns how long src must wait before its next failure is heard,
// zero when it may go on.
func (l *failureLimiter) wait(src string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[src]
	if b == nil {
		return 0
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// failed spends one token of src.
func (l *failureLimiter) failed(src string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	b := l.buckets[src]
	if b == nil {
		if len(l.buckets) >= maxTracked {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[src] = b
	}
	l.refill(b, now)
	b.tokens = max(0, b.tokens-1)
}

// prune drops full buckets (they say nothing), or all when none is full.
func (l *failureLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= l.burst {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxTracked {
		clear(l.buckets)
	}
}

// negativeCache remembers names the API server said do not exist.
type negativeCache struct {
	mu sync.Mutex
	m  map[string]time.Time // expiry
}

func (c *negativeCache) has(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.m[key]
	if ok && now.After(exp) {
		delete(c.m, key)
		return false
	}
	return ok
}

func (c *negativeCache) add(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]time.Time{}
	}
	if len(c.m) >= maxTracked {
		for k, exp := range c.m {
			if now.After(exp) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxTracked {
			clear(c.m)
		}
	}
	c.m[key] = now.Add(negativeTTL)
}
