// Package testsite is an httptest web site that records every request it
// gets (path, start and end time, headers) and how many were in flight at
// once, so tests can check the crawler's etiquette from the server's side.
package testsite

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Request is one request as the server saw it.
type Request struct {
	Path       string // path and query
	Target     string // the request-target exactly as the client sent it
	Start, End time.Time
	Header     http.Header
	RemoteAddr string
}

// Site is a recording test server on 127.0.0.1.
type Site struct {
	*httptest.Server
	mu          sync.Mutex
	routes      map[string]http.HandlerFunc
	fallback    http.HandlerFunc
	headers     http.Header
	reqs        []Request
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
}

// New starts a site that answers 404 until routes are added.
func New(t testing.TB) *Site {
	s := &Site{routes: map[string]http.HandlerFunc{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Listen starts a site on addr (host:port: a fixed port such as 80 or 443
// needs root), over TLS with cert when cert is not nil.
func Listen(t testing.TB, addr string, cert *tls.Certificate) *Site {
	t.Helper()
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &Site{routes: map[string]http.HandlerFunc{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Listener.Close()
	s.Listener = l
	if cert != nil {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *Site) serve(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	// Recorded on arrival, not on completion: a handler that hijacks and
	// closes the connection lets the client see the end before the handler
	// returns, and the test must still count that request.
	s.mu.Lock()
	idx := len(s.reqs)
	s.reqs = append(s.reqs, Request{Path: r.URL.RequestURI(), Target: r.RequestURI, Start: time.Now(), Header: r.Header.Clone(), RemoteAddr: r.RemoteAddr})
	h, ok := s.routes[r.URL.RequestURI()]
	if !ok {
		h, ok = s.routes[r.URL.Path]
	}
	if !ok && s.fallback != nil {
		h, ok = s.fallback, true
	}
	for k, v := range s.headers {
		w.Header()[k] = v
	}
	s.mu.Unlock()
	if ok {
		h(w, r)
	} else {
		http.NotFound(w, r)
	}
	s.mu.Lock()
	s.reqs[idx].End = time.Now()
	s.mu.Unlock()
}

// Handle routes a path (or path?query) to h.
func (s *Site) Handle(path string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[path] = h
}

// Headers adds h to every answer, before the route's handler runs.
func (s *Site) Headers(h http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.headers = h.Clone()
}

// Fallback answers every request that no route matches (404 without it).
func (s *Site) Fallback(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = h
}

// HTML serves body as text/html at path.
func (s *Site) HTML(path, body string) {
	s.Handle(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	})
}

// Validated serves body as text/html at path with the validators etag (when
// not "") and modified (when not zero), and answers a conditional GET the
// way net/http's file server does (http.ServeContent: If-None-Match by weak
// comparison first, then If-Modified-Since): 304 Not Modified when the
// validators the request sends still match.
func (s *Site) Validated(path, body, etag string, modified time.Time) {
	s.Handle(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		http.ServeContent(w, r, "", modified, strings.NewReader(body))
	})
}

// Robots serves body as /robots.txt.
func (s *Site) Robots(body string) {
	s.Handle("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, body)
	})
}

// Redirect answers path with a redirect to target.
func (s *Site) Redirect(path, target string, code int) {
	s.Handle(path, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, code)
	})
}

// Requests returns the requests received so far, in order of arrival.
func (s *Site) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count returns how many requests asked for path (path and query).
func (s *Site) Count(path string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Path == path {
			n++
		}
	}
	return n
}

// PageRequests counts requests other than /robots.txt.
func (s *Site) PageRequests() int {
	n := 0
	for _, r := range s.Requests() {
		if !strings.HasPrefix(r.Path, "/robots.txt") {
			n++
		}
	}
	return n
}

// MaxInFlight is the largest number of requests the server handled at once.
func (s *Site) MaxInFlight() int { return int(s.maxInFlight.Load()) }

// Page builds a small HTML page with a title, an h1, a body paragraph and
// links (href → text).
func Page(title, body string, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p>\n", title, title, body)
	for i := 0; i+1 < len(links); i += 2 {
		fmt.Fprintf(&b, "<a href=%q>%s</a>\n", links[i], links[i+1])
	}
	b.WriteString("</body></html>")
	return b.String()
}
