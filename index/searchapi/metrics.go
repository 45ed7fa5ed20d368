package searchapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Endpoint labels: one per route, never the raw path, whose hosts and typos
// would grow the series without bound.
const (
	endpointSearch = "search"
	endpointSites  = "sites"
	endpointPages  = "pages"
	endpointOther  = "other"
)

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crawl_operator_search_requests_total",
		Help: "Search API requests, by endpoint (search, sites, pages, other) and HTTP status code.",
	}, []string{"endpoint", "code"})
	latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "crawl_operator_search_request_duration_seconds",
		Help:    "Time to answer a search API request, by endpoint.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"endpoint"})
)

// Collectors are the package's metrics, for the manager's registry.
// Each endpoint's latency and its 200s exist from the start, at 0, so a
// dashboard of an index nobody has searched yet shows zeros.
func Collectors() []prometheus.Collector {
	for _, e := range []string{endpointSearch, endpointSites, endpointPages} {
		latency.WithLabelValues(e)
		requests.WithLabelValues(e, strconv.Itoa(http.StatusOK))
	}
	return []prometheus.Collector{requests, latency}
}

// statusRecorder remembers the status code a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// observe counts one request of endpoint that started at start.
func observe(endpoint string, rec *statusRecorder, start time.Time) {
	code := rec.code
	if code == 0 {
		code = http.StatusOK
	}
	requests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
	latency.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
}
