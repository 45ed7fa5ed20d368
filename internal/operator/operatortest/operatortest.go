// Package operatortest runs the operator in tests exactly as cmd/manager
// wires it: options for a test on loopback, and a manager that stops with
// the test.
package operatortest

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/internal/operator"
)

// Options are the manager's defaults for a test: no metrics, probe or
// results listeners (the results endpoint is served on a test server),
// SQLite in a temporary directory, the index server on a free loopback
// port, and FCrDNS answered by a DNS server on loopback that knows zone.
func Options(t testing.TB, zone dnstest.Zone) operator.Options {
	t.Helper()
	o := operator.Defaults()
	o.Manager.MetricsAddr, o.Manager.MetricsSecure, o.Manager.ProbeAddr, o.Manager.ResultsAddr = "0", false, "0", "0"
	o.Pod.Image = "crawler:test"
	o.Pod.ResultsURL = "http://results.test:8083"
	o.Index.Storage = "sqlite://" + filepath.Join(t.TempDir(), "index.db")
	o.Index.BindAddress = "127.0.0.1:0"
	o.Index.DNSServer = dnstest.Start(t, zone).Addr
	o.Index.CheckInterval = time.Hour
	return o
}

// Running is an operator of a test, its results endpoint on a loopback
// test server.
type Running struct {
	*operator.Operator
	// ResultsURL is the base URL of the results endpoint, once started.
	ResultsURL string

	results *httptest.Server
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

// New wires the operator from o, as the user of cfg, without starting it:
// a test may wrap its parts first (the results endpoint's Reader). Several
// managers run in one test process, so controller names are not checked;
// adjust may change the manager's options further.
func New(t testing.TB, cfg *rest.Config, o operator.Options, adjust ...func(*ctrl.Options)) *Running {
	t.Helper()
	adjust = append([]func(*ctrl.Options){func(m *ctrl.Options) {
		m.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	}}, adjust...)
	op, err := operator.New(cfg, o, adjust...)
	if err != nil {
		t.Fatal(err)
	}
	return &Running{Operator: op}
}

// Start serves the results endpoint and starts the manager; it stops when
// the test ends, or at Stop.
func (r *Running) Start(t testing.TB) *Running {
	t.Helper()
	r.results = httptest.NewServer(r.Results.Handler())
	r.ResultsURL = r.results.URL
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		if err := r.Operator.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(r.Stop)
	return r
}

// Stop stops the manager, waits until it has stopped and closes the
// results endpoint. Calling it again does nothing.
func (r *Running) Stop() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
		r.results.Close()
	})
}
