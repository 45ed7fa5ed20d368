package reporter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// hangingManager accepts connections and never answers, the worst a results
// endpoint can do to a crawler that is being stopped.
func hangingManager(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL
}

func TestFinalAfterStopIsBoundedWhenEndpointHangs(t *testing.T) {
	c := fastClient(hangingManager(t))
	c.FinalFor = time.Minute
	c.StopGrace = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel) // SIGTERM while the first post hangs
	start := time.Now()
	err := c.Final(ctx, runreport.Crawl{})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "stopping") {
		t.Fatalf("err = %v, want a not-delivered error naming the stop", err)
	}
	if took < 450*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("Final returned after %v, want about 200ms + 300ms grace", took)
	}
}

func TestFinalAfterStopIsBoundedWhenEndpointKeepsFailing(t *testing.T) {
	m := &manager{answer: func(int) int { return http.StatusServiceUnavailable }}
	srv := m.start(t)
	c := fastClient(srv.URL)
	c.FinalFor = time.Minute
	c.StopGrace = 400 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped before the crawl even reported
	start := time.Now()
	if err := c.Final(ctx, runreport.Crawl{}); err == nil {
		t.Fatal("delivered to an endpoint that only answers 503")
	}
	if took := time.Since(start); took > 1200*time.Millisecond {
		t.Errorf("Final returned after %v, want at most the 400ms grace", took)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reports) < 2 {
		t.Errorf("%d attempts: the grace is for retrying, not for giving up at once", len(m.reports))
	}
}

func TestFinalAfterStopLongRetryAfterIsNotWaitedFor(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	c := fastClient(srv.URL)
	c.FinalFor = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := c.Final(ctx, runreport.Crawl{}); err == nil {
		t.Fatal("delivered")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Final waited %v for a Retry-After beyond the stop grace", took)
	}
}

func TestFinalAfterStopStillDelivers(t *testing.T) {
	m := &manager{answer: func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	}}
	srv := m.start(t)
	c := fastClient(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	partial := runreport.Crawl{Site: "http://a.test:80", Pages: []runreport.Page{{URL: "http://a.test/"}}}
	if err := c.Final(ctx, partial); err != nil {
		t.Fatalf("partial result not delivered after a stop: %v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.reports) != 2 || !m.reports[1].Final || len(m.reports[1].Result.Pages) != 1 {
		t.Errorf("reports %+v", m.reports)
	}
}

func TestFinalWithoutStopKeepsItsRetryWindow(t *testing.T) {
	// Not stopped: the endpoint's silence is waited out until FinalFor,
	// not cut at the stop grace.
	c := fastClient(hangingManager(t))
	c.FinalFor = 600 * time.Millisecond
	c.StopGrace = 50 * time.Millisecond
	start := time.Now()
	err := c.Final(context.Background(), runreport.Crawl{})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "retry time is up") {
		t.Fatalf("err = %v", err)
	}
	if took < 550*time.Millisecond || took > 2*time.Second {
		t.Errorf("Final returned after %v, want about FinalFor (600ms)", took)
	}
}
