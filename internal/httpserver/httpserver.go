// Package httpserver runs an HTTP handler as a controller-runtime Runnable
// on every replica (no leader election): the index API and the results
// endpoint must answer wherever a request lands.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// DrainTimeout is how long requests in flight when the manager stops may
// go on before their connections are closed.
const DrainTimeout = 10 * time.Second

// Runnable serves Handler on Addr until the manager stops.
type Runnable struct {
	Name    string
	Addr    string
	Handler http.Handler

	mu sync.Mutex
	// stopped is closed once the server has stopped; nil until Start.
	stopped chan struct{}
}

// NeedLeaderElection is false: every replica serves.
func (r *Runnable) NeedLeaderElection() bool { return false }

// Start listens and serves until ctx ends. Then it stops taking
// connections and returns at once, leaving the requests in flight to
// finish in the background (Wait): controller-runtime gives up the
// leader's Lease only once every runnable has returned, and a crawler's
// report or a search still running must not keep the other replica from
// leading (it also serves them).
func (r *Runnable) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return fmt.Errorf("%s endpoint: %w", r.Name, err)
	}
	srv := &http.Server{Handler: r.Handler, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10}
	stopped := make(chan struct{})
	r.mu.Lock()
	r.stopped = stopped
	r.mu.Unlock()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger := ctrl.Log.WithValues("endpoint", r.Name, "address", ln.Addr().String())
	logger.Info("serving")
	select {
	case err := <-errc:
		close(stopped)
		return fmt.Errorf("%s endpoint: %w", r.Name, err)
	case <-ctx.Done():
	}
	// Shutdown closes the listener before anything else; the goroutine
	// has done that once it signals.
	closed := make(chan struct{})
	srv.RegisterOnShutdown(func() { close(closed) })
	go func() {
		defer close(stopped)
		drain, cancel := context.WithTimeout(context.Background(), DrainTimeout)
		defer cancel()
		if err := srv.Shutdown(drain); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Info("requests still in flight after the drain timeout are cut", "timeout", DrainTimeout)
			_ = srv.Close()
		}
	}()
	<-closed
	return nil
}

// Wait returns once the server Start ran has stopped: the requests in
// flight when it was told to stop have finished or were cut after
// DrainTimeout. Without Start it returns at once.
func (r *Runnable) Wait() {
	r.mu.Lock()
	stopped := r.stopped
	r.mu.Unlock()
	if stopped != nil {
		<-stopped
	}
}
