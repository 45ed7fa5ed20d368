// Package backend keeps the connection to the search backend: it connects
// in the background with back-off, so the manager starts and does all its
// other work while PostgreSQL is down, watches the backend's health, fails
// calls fast with store.ErrUnavailable while it is unreachable, and tells
// whoever asked when it is back.
package backend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lohisoft/crawl-operator/index/store"
)

// Defaults of the timing fields.
const (
	DefaultMinRetry      = 500 * time.Millisecond
	DefaultMaxRetry      = time.Second
	DefaultCheckInterval = 5 * time.Second
	// pingTimeout bounds one health check.
	pingTimeout = 3 * time.Second
	// openTimeout bounds one connection attempt, migrations included.
	openTimeout = time.Minute
)

// Opener connects to the backend and brings its schema up to date.
type Opener func(ctx context.Context) (store.Store, error)

// Pinger is a store that can tell whether its database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Backend is a store.Store whose database may come and go. Its zero value is
// not usable; make one with New and run Start (a manager Runnable).
type Backend struct {
	open Opener
	// Name says which backend this is in logs and errors; never a
	// password.
	name string

	// MinRetry and MaxRetry bound the back-off between attempts while the
	// backend is unreachable; CheckInterval is the time between health
	// checks while it is up.
	MinRetry, MaxRetry, CheckInterval time.Duration

	mu      sync.Mutex
	st      store.Store // nil until the first connection succeeds
	up      bool
	lastErr error
	since   time.Time // when up last changed
	onUp    []func()
	wake    chan struct{}
	closed  bool
}

// New returns a Backend that connects with open. name describes it
// (e.g. "postgres") in messages.
func New(name string, open Opener) *Backend {
	return &Backend{
		open: open, name: name,
		MinRetry: DefaultMinRetry, MaxRetry: DefaultMaxRetry, CheckInterval: DefaultCheckInterval,
		lastErr: errors.New("not connected yet"),
		since:   time.Now(),
		wake:    make(chan struct{}, 1),
	}
}

// OnUp registers f to run, in its own goroutine, every time the backend
// becomes reachable: on the first connection and after every outage.
func (b *Backend) OnUp(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onUp = append(b.onUp, f)
}

// Available reports whether the backend answered its last check.
func (b *Backend) Available() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.up
}

// Status says whether the backend is up, since when, and the last error
// while it is down.
func (b *Backend) Status() (up bool, since time.Time, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.up {
		return true, b.since, nil
	}
	return false, b.since, b.lastErr
}

// Check is a health check (controller-runtime's healthz.Checker): nil while
// the backend is up, otherwise why not.
func (b *Backend) Check(*http.Request) error {
	up, since, err := b.Status()
	if up {
		return nil
	}
	return fmt.Errorf("%s index backend unreachable since %s: %v", b.name, since.UTC().Format(time.RFC3339), err)
}

// NeedLeaderElection is false: every replica serves search.
func (b *Backend) NeedLeaderElection() bool { return false }

// Start connects, then watches the backend until ctx ends: a health check
// every CheckInterval while it is up, and every MinRetry..MaxRetry (doubling)
// while it is down.
func (b *Backend) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("index-backend").WithValues("backend", b.name)
	delay := b.MinRetry
	failures := 0
	for {
		b.mu.Lock()
		st, up, closed := b.st, b.up, b.closed
		b.mu.Unlock()
		if closed {
			return nil
		}
		var err error
		if st == nil {
			octx, cancel := context.WithTimeout(ctx, openTimeout)
			st, err = b.open(octx)
			cancel()
			if err == nil {
				b.mu.Lock()
				if b.closed {
					b.mu.Unlock()
					st.Close()
					return nil
				}
				b.st = st
				b.mu.Unlock()
			}
		} else {
			err = b.ping(ctx, st)
		}
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err == nil && !up:
			b.setUp(true, nil)
			logger.Info("index backend reachable", "failedAttempts", failures)
			delay, failures = b.MinRetry, 0
		case err != nil && (up || failures == 0):
			b.setUp(false, err)
			logger.Error(err, "index backend unreachable; search answers 503, the syncer catches up when it is back", "retryIn", delay)
		case err != nil:
			b.setUp(false, err)
			logger.V(1).Info("index backend still unreachable", "error", err.Error(), "retryIn", delay)
		}
		if err != nil {
			failures++
		}
		wait := b.CheckInterval
		if err != nil {
			wait = delay
			delay = min(2*delay, b.MaxRetry)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		case <-b.wake:
		}
	}
}

func (b *Backend) ping(ctx context.Context, st store.Store) error {
	p, ok := st.(Pinger)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return p.Ping(ctx)
}

func (b *Backend) setUp(up bool, err error) {
	b.mu.Lock()
	was := b.up
	b.up, b.lastErr = up, err
	if was != up {
		b.since = time.Now()
	}
	hooks := append([]func(){}, b.onUp...)
	b.mu.Unlock()
	if up {
		backendUp.Set(1)
	} else {
		backendUp.Set(0)
	}
	if up && !was {
		for _, f := range hooks {
			go f()
		}
	}
}

// store returns the connected store, or ErrUnavailable.
func (b *Backend) store() (store.Store, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.st == nil || !b.up {
		return nil, fmt.Errorf("%w: %v", store.ErrUnavailable, b.lastErr)
	}
	return b.st, nil
}

// failed looks at the error of a call: errors in what the caller asked for
// pass through; anything else makes the backend check its health at once,
// and when the database does not answer, the error becomes ErrUnavailable.
func (b *Backend) failed(ctx context.Context, st store.Store, err error) error {
	if err == nil || errors.Is(err, store.ErrBadQuery) || errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
		return err
	}
	if perr := b.ping(context.WithoutCancel(ctx), st); perr != nil {
		b.setUp(false, perr)
		// The watcher logs it and takes over from here, with its back-off.
		select {
		case b.wake <- struct{}{}:
		default:
		}
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return err
}

// ReplaceSite implements store.Store.
func (b *Backend) ReplaceSite(ctx context.Context, doc store.SiteDoc) error {
	st, err := b.store()
	if err != nil {
		return err
	}
	return b.failed(ctx, st, st.ReplaceSite(ctx, doc))
}

// DeleteSource implements store.Store.
func (b *Backend) DeleteSource(ctx context.Context, source string, keep ...string) (int64, error) {
	st, err := b.store()
	if err != nil {
		return 0, err
	}
	n, err := st.DeleteSource(ctx, source, keep...)
	return n, b.failed(ctx, st, err)
}

// PurgeDomain implements store.Store.
func (b *Backend) PurgeDomain(ctx context.Context, domain string) (store.Removed, error) {
	st, err := b.store()
	if err != nil {
		return nil, err
	}
	r, err := st.PurgeDomain(ctx, domain)
	return r, b.failed(ctx, st, err)
}

// Sources implements store.Store.
func (b *Backend) Sources(ctx context.Context) ([]store.SourceRun, error) {
	st, err := b.store()
	if err != nil {
		return nil, err
	}
	r, err := st.Sources(ctx)
	return r, b.failed(ctx, st, err)
}

// Validators implements store.Store.
func (b *Backend) Validators(ctx context.Context, source, site string) ([]store.Validators, error) {
	st, err := b.store()
	if err != nil {
		return nil, err
	}
	r, err := st.Validators(ctx, source, site)
	return r, b.failed(ctx, st, err)
}

// Search implements store.Store.
func (b *Backend) Search(ctx context.Context, query string, limit int) ([]store.Result, error) {
	st, err := b.store()
	if err != nil {
		return nil, err
	}
	r, err := st.Search(ctx, query, limit)
	return r, b.failed(ctx, st, err)
}

// Sites implements store.Store.
func (b *Backend) Sites(ctx context.Context) ([]store.SiteInfo, error) {
	st, err := b.store()
	if err != nil {
		return nil, err
	}
	r, err := st.Sites(ctx)
	return r, b.failed(ctx, st, err)
}

// Pages implements store.Store.
func (b *Backend) Pages(ctx context.Context, host string) ([]store.SitePage, error) {
	st, err := b.store()
	if err != nil {
		return nil, err
	}
	r, err := st.Pages(ctx, host)
	return r, b.failed(ctx, st, err)
}

// Close closes the connection, if there is one.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.up = false
	if b.st == nil {
		return nil
	}
	st := b.st
	b.st = nil
	return st.Close()
}

// Connected returns the underlying store once connected, for tests that
// inspect it.
func (b *Backend) Connected() store.Store {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st
}

var backendUp = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "crawl_operator_index_backend_up",
	Help: "1 when the search index backend answered its last health check, 0 while it is unreachable.",
})

// Collectors are the package's metrics, for the manager's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{backendUp} }
