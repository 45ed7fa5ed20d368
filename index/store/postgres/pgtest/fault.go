package pgtest

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy on loopback in front of the test server. Cutting it
// is a real network fault for whoever connects through it (open
// connections are reset, new ones refused) without disturbing other tests
// that use the server directly.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

// StartProxy starts a proxy to the test server and stops it when t ends.
func StartProxy(t testing.TB) *Proxy {
	t.Helper()
	u, err := url.Parse(ServerDSN())
	if err != nil {
		t.Fatalf("TEST_POSTGRES_DSN must be a postgres:// URL: %v", err)
	}
	p := &Proxy{t: t, target: u.Host, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Cut)
	return p
}

// DSN rewrites dsn (from Schema) to connect through the proxy.
func (p *Proxy) DSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		p.t.Fatal(err)
	}
	u.Host = p.addr
	return u.String()
}

// Cut closes the listener and every connection: the server is gone for
// clients of the proxy.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore listens again on the same address.
func (p *Proxy) Restore() {
	p.t.Helper()
	var ln net.Listener
	var err error
	// The port was ours a moment ago; retry briefly in case the kernel
	// has not released it yet.
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("proxy: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(ln, c)
		}
	}()
}

func (p *Proxy) forward(ln net.Listener, c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln != ln { // cut meanwhile
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// Server stops and starts the machine's PostgreSQL cluster. Other tests
// share it, so keep each outage short.
type Server struct {
	t       testing.TB
	version string
}

// ControlServer returns the local cluster's controls, and makes sure the
// server runs again when t ends, whatever happened. Without pg_ctlcluster
// (or as a user who may not use it) the test fails under CI=true and is
// skipped otherwise.
//
// Every test that uses the server holds a shared lock on a file in the
// temporary directory while it runs (Schema takes it); ControlServer takes
// the exclusive lock, so the server is stopped only while no test of any
// process on this machine is using it, and tests that start meanwhile wait
// until it is back.
func ControlServer(t testing.TB) *Server {
	t.Helper()
	version, err := clusterVersion()
	if err != nil {
		msg := "cannot stop and start the PostgreSQL test server: " + err.Error()
		if Required() {
			t.Fatal(msg + "\n\tCI=true or REQUIRE_POSTGRES=1: the outage tests must run")
		}
		t.Skip("!!! SKIPPING POSTGRESQL OUTAGE TEST !!! " + msg)
	}
	holdExclusive(t)
	if err := waitReachable(30 * time.Second); err != nil {
		t.Fatalf("PostgreSQL test server unreachable before the outage test: %v", err)
	}
	return &Server{t: t, version: version}
}

// Stop stops the server (fast shutdown: connections are closed). It is
// started again when the test ends, whatever happens.
func (s *Server) Stop() {
	s.t.Helper()
	s.t.Cleanup(func() {
		if err := s.ctl("start"); err != nil && !strings.Contains(err.Error(), "already running") {
			s.t.Errorf("start PostgreSQL again: %v", err)
		}
		if err := waitReachable(30 * time.Second); err != nil {
			s.t.Errorf("PostgreSQL not reachable after the test: %v", err)
		}
	})
	if err := s.ctl("stop", "--", "-m", "fast"); err != nil {
		s.t.Fatalf("stop PostgreSQL: %v", err)
	}
}

// Start starts the server and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.ctl("start"); err != nil {
		s.t.Fatalf("start PostgreSQL: %v", err)
	}
	if err := waitReachable(30 * time.Second); err != nil {
		s.t.Fatalf("PostgreSQL not reachable after start: %v", err)
	}
}

func (s *Server) ctl(args ...string) error {
	cmd := exec.Command("pg_ctlcluster", append([]string{"--skip-systemctl-redirect", s.version, "main"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return errors.New(strings.TrimSpace(string(out)) + ": " + err.Error())
	}
	return nil
}

func clusterVersion() (string, error) {
	if _, err := exec.LookPath("pg_ctlcluster"); err != nil {
		return "", err
	}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		return "", errors.New("TEST_POSTGRES_DSN names another server than the local cluster")
	}
	dirs, err := filepath.Glob("/etc/postgresql/*/main")
	if err != nil || len(dirs) == 0 {
		return "", errors.New("no cluster in /etc/postgresql/*/main")
	}
	sort.Strings(dirs)
	return filepath.Base(filepath.Dir(dirs[0])), nil
}

func waitReachable(d time.Duration) error {
	end := time.Now().Add(d)
	for {
		err := ping(ServerDSN())
		if err == nil || time.Now().After(end) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Reachable reports whether the test server answers now.
func Reachable() bool {
	return ping(ServerDSN()) == nil
}
