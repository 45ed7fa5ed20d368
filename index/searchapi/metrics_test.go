package searchapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lohisoft/crawl-operator/index/backend"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// counts scrapes the package's collectors as the manager's registry does.
func counts(t *testing.T) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(Collectors()...)
	return testutil.Metrics(t, reg)
}

// Real requests against a real SQLite store, and against a backend that
// never connected (503), are counted by endpoint and status code and timed.
func TestRequestMetrics(t *testing.T) {
	h := newHandler(t)
	// Not started, so never connected: every call fails with
	// store.ErrUnavailable, as during an outage.
	down := &Handler{Store: backend.New("postgres", func(context.Context) (store.Store, error) { return nil, errors.New("unreachable") })}
	before := counts(t)
	for _, r := range []struct {
		h            http.Handler
		method, path string
		code         int
	}{
		{h, "GET", "/api/v1/search?q=otter", 200},
		{h, "GET", "/api/v1/search?q=otter&limit=2", 200},
		{h, "GET", "/api/v1/search", 400},
		{h, "GET", "/api/v1/sites", 200},
		{h, "GET", "/api/v1/sites/a.example/pages", 200},
		{h, "POST", "/api/v1/sites", 405},
		{h, "GET", "/api/v1/nothing/here", 404},
		{down, "GET", "/api/v1/search?q=otter", 503},
	} {
		if rec := do(r.h, r.method, r.path); rec.Code != r.code {
			t.Fatalf("%s %s = %d, want %d", r.method, r.path, rec.Code, r.code)
		}
	}
	after := counts(t)
	for series, want := range map[string]float64{
		`crawl_operator_search_requests_total{code="200",endpoint="search"}`: 2,
		`crawl_operator_search_requests_total{code="400",endpoint="search"}`: 1,
		`crawl_operator_search_requests_total{code="503",endpoint="search"}`: 1,
		`crawl_operator_search_requests_total{code="200",endpoint="sites"}`:  1,
		`crawl_operator_search_requests_total{code="405",endpoint="sites"}`:  1,
		`crawl_operator_search_requests_total{code="200",endpoint="pages"}`:  1,
		`crawl_operator_search_requests_total{code="404",endpoint="other"}`:  1,
		// Histograms: the number of observations.
		`crawl_operator_search_request_duration_seconds{endpoint="search"}`: 4,
		`crawl_operator_search_request_duration_seconds{endpoint="sites"}`:  2,
		`crawl_operator_search_request_duration_seconds{endpoint="pages"}`:  1,
		`crawl_operator_search_request_duration_seconds{endpoint="other"}`:  1,
	} {
		if got := after[series] - before[series]; got != want {
			t.Errorf("%s grew by %v, want %v", series, got, want)
		}
	}
	for series := range after {
		if strings.Contains(series, "a.example") {
			t.Errorf("a host became a label: %s", series)
		}
	}
}

// A dashboard of an index nobody has searched yet finds its series: each
// endpoint's 200s and latency exist from the start.
func TestSeriesExistBeforeTheFirstRequest(t *testing.T) {
	got := counts(t)
	for _, endpoint := range []string{"search", "sites", "pages"} {
		for _, series := range []string{
			`crawl_operator_search_requests_total{code="200",endpoint="` + endpoint + `"}`,
			`crawl_operator_search_request_duration_seconds{endpoint="` + endpoint + `"}`,
		} {
			if _, ok := got[series]; !ok {
				t.Errorf("%s is missing before any request", series)
			}
		}
	}
}
