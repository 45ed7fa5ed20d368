// Package registry serves an OCI registry on this machine: the
// distribution project's own registry (the one behind the registry:2
// image), built from the Go module proxy and run in-process, since no
// registry image can be pulled here. The dev cluster uses it for
// `make release-push` (`devcluster registry up`), and the release tests
// start one on 127.0.0.1:0.
package registry

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"

	// The storage drivers Start chooses between register themselves.
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

// Server is a running registry.
type Server struct {
	// Addr is HOST:PORT, the form image references and `helm push
	// oci://` take.
	Addr string
	srv  *http.Server

	mu       sync.Mutex
	requests []Request
}

// Request is one request the registry answered: who pulled what is what
// tests check (a node's containerd, not an import, ran an image).
type Request struct {
	Method, Path, UserAgent string
}

// Requests are the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, UserAgent: r.UserAgent()})
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// Start serves a registry on addr (127.0.0.1:0 picks a free port). Blobs
// and manifests live under root, or in memory when root is "": a test's
// registry needs nothing on disk, the dev cluster's outlives restarts.
func Start(root, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// The registry logs every request through logrus; a test's or the
	// dev cluster's log has no use for them.
	logrus.SetOutput(io.Discard)
	app := handlers.NewApp(context.Background(), config(root))
	s := &Server{Addr: ln.Addr().String()}
	s.srv = &http.Server{Handler: s.record(app), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// config is the registry's configuration: plain HTTP (loopback only), no
// auth, deletes allowed so that tests and people can replace what they
// pushed.
func config(root string) *configuration.Configuration {
	c := &configuration.Configuration{}
	c.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	if root != "" {
		c.Storage = configuration.Storage{"filesystem": configuration.Parameters{"rootdirectory": root}}
	}
	c.Storage["delete"] = configuration.Parameters{"enabled": true}
	// The secret signs upload state between requests of one upload; one
	// process serves them all, so a fixed value is enough.
	c.HTTP.Secret = "crawl-operator-dev-registry"
	c.Log.AccessLog.Disabled = true
	return c
}

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("registry %s: %w", s.Addr, err)
	}
	return nil
}
