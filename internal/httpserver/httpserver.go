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
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Runnable serves Handler on Addr until the manager stops.
type Runnable struct {
	Name    string
	Addr    string
	Handler http.Handler
}

// NeedLeaderElection is false: every replica serves.
func (r *Runnable) NeedLeaderElection() bool { return false }

// Start listens, serves, and shuts down gracefully when ctx ends.
func (r *Runnable) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return fmt.Errorf("%s endpoint: %w", r.Name, err)
	}
	srv := &http.Server{Handler: r.Handler, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	ctrl.Log.Info("serving", "endpoint", r.Name, "address", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("%s endpoint: %w", r.Name, err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
