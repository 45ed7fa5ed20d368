package reporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/politeness"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

type manager struct {
	mu      sync.Mutex
	reports []runreport.Report
	auth    []string
	ctype   []string
	answer  func(n int) int // status for the n-th post (1-based)
}

func (m *manager) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var rep runreport.Report
		if r.Method != http.MethodPost || json.Unmarshal(body, &rep) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		m.reports = append(m.reports, rep)
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.ctype = append(m.ctype, r.Header.Get("Content-Type"))
		n := len(m.reports)
		m.mu.Unlock()
		code := http.StatusNoContent
		if m.answer != nil {
			code = m.answer(n)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func fastClient(url string) *Client {
	c := New(url, "tok-123", nil)
	c.Backoff = politeness.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	c.FinalFor = 2 * time.Second
	return c
}

func TestProgressAndFinal(t *testing.T) {
	m := &manager{}
	srv := m.start(t)
	c := fastClient(srv.URL)
	c.Progress(context.Background(), runreport.Crawl{Site: "http://a.test:80", Pages: []runreport.Page{{URL: "http://a.test/"}}})
	if err := c.Final(context.Background(), runreport.Crawl{Site: "http://a.test:80"}); err != nil {
		t.Fatal(err)
	}
	if len(m.reports) != 2 || m.reports[0].Final || !m.reports[1].Final || len(m.reports[0].Result.Pages) != 1 {
		t.Fatalf("reports %+v", m.reports)
	}
	for i := range m.auth {
		if m.auth[i] != "Bearer tok-123" || m.ctype[i] != "application/json" {
			t.Errorf("post %d: Authorization %q Content-Type %q", i, m.auth[i], m.ctype[i])
		}
	}
}

func TestFinalRetriesUntilManagerIsBack(t *testing.T) {
	m := &manager{answer: func(n int) int {
		switch n {
		case 1:
			return http.StatusServiceUnavailable
		case 2:
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	}}
	srv := m.start(t)
	if err := fastClient(srv.URL).Final(context.Background(), runreport.Crawl{}); err != nil {
		t.Fatal(err)
	}
	if len(m.reports) != 3 {
		t.Fatalf("posts %d, want 3", len(m.reports))
	}
}

func TestFinalRetriesNetworkErrors(t *testing.T) {
	m := &manager{}
	srv := m.start(t)
	addr := srv.Listener.Addr().String()
	srv.Close() // manager down
	c := fastClient("http://" + addr + "/results")
	c.FinalFor = 300 * time.Millisecond
	start := time.Now()
	err := c.Final(context.Background(), runreport.Crawl{})
	if err == nil {
		t.Fatal("delivered to a closed port")
	}
	if time.Since(start) < 100*time.Millisecond {
		t.Errorf("gave up after %v without retrying", time.Since(start))
	}
}

func TestFinalStopsOnClientError(t *testing.T) {
	m := &manager{answer: func(int) int { return http.StatusUnauthorized }}
	srv := m.start(t)
	err := fastClient(srv.URL).Final(context.Background(), runreport.Crawl{})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Fatalf("err %v", err)
	}
	if len(m.reports) != 1 {
		t.Fatalf("posts %d, want 1 (4xx is not retried)", len(m.reports))
	}
}

// TestProgressIsSpaced: the first progress goes out at once, the next not
// before ProgressEvery has passed since the last one started; the calls in
// between send nothing, and the final report is never held back.
func TestProgressIsSpaced(t *testing.T) {
	m := &manager{}
	srv := m.start(t)
	c := fastClient(srv.URL)
	c.ProgressEvery = 5 * time.Second
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return clock }
	pages := func(n int) runreport.Crawl {
		crawl := runreport.Crawl{Site: "http://a.test:80"}
		for i := range n {
			crawl.Pages = append(crawl.Pages, runreport.Page{URL: fmt.Sprintf("http://a.test/%d", i)})
		}
		return crawl
	}
	for i, step := range []time.Duration{0, time.Second, 3 * time.Second, 999 * time.Millisecond, time.Millisecond, 4 * time.Second, time.Second} {
		clock = clock.Add(step)
		c.Progress(context.Background(), pages(i+1))
	}
	if err := c.Final(context.Background(), pages(7)); err != nil {
		t.Fatal(err)
	}
	// Sent: page 1 at 0 s, page 5 at 5 s (4.999 s is too early), page 7 at
	// 10 s; then the final.
	var got []int
	for _, r := range m.reports {
		got = append(got, len(r.Result.Pages))
	}
	if want := []int{1, 5, 7, 7}; !slices.Equal(got, want) || !m.reports[3].Final || m.reports[2].Final {
		t.Fatalf("reports carried %v pages (final last: %v), want %v", got, m.reports[len(m.reports)-1].Final, want)
	}
}

func TestProgressFailureIsNotFatal(t *testing.T) {
	m := &manager{answer: func(int) int { return http.StatusInternalServerError }}
	srv := m.start(t)
	c := fastClient(srv.URL)
	c.Progress(context.Background(), runreport.Crawl{}) // must return, not retry
	if len(m.reports) != 1 {
		t.Fatalf("progress posted %d times, want 1", len(m.reports))
	}
}

func TestRetryable(t *testing.T) {
	for err, want := range map[error]bool{
		&StatusError{500}: true, &StatusError{503}: true, &StatusError{429}: true,
		&StatusError{400}: false, &StatusError{401}: false, &StatusError{404}: false,
		errors.New("connection refused"): true,
	} {
		if retryable(err) != want {
			t.Errorf("retryable(%v) != %v", err, want)
		}
	}
}
