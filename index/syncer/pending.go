package syncer

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// pendingSet holds the SiteIndexes whose rows should have been removed
// from the backend but were not yet, with the time the first attempt failed.
type pendingSet struct {
	mu sync.Mutex
	m  map[types.NamespacedName]time.Time
}

func (p *pendingSet) fail(key types.NamespacedName, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.NamespacedName]time.Time{}
	}
	if _, ok := p.m[key]; !ok {
		p.m[key] = at
	}
}

func (p *pendingSet) done(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, key)
}

func (p *pendingSet) keys() []types.NamespacedName {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(p.m))
	for k := range p.m {
		out = append(out, k)
	}
	return out
}

// state returns how many SiteIndexes wait and since when the oldest does.
func (p *pendingSet) state() (n int, oldest time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.m {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	return len(p.m), oldest
}

// Lag reports how many SiteIndexes still have rows to remove from the
// backend, and for how long the oldest of them has waited (zero when the
// index is up to date).
func (s *Syncer) Lag(now time.Time) (pending int, lag time.Duration) {
	n, oldest := s.pending.state()
	if n == 0 {
		return 0, 0
	}
	return n, now.Sub(oldest)
}

var (
	syncFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crawl_operator_index_sync_failures_total",
		Help: "Removals of SiteIndex rows from the search backend that failed, by reason: unavailable (backend unreachable) or error.",
	}, []string{"reason"})
	upserts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crawl_operator_index_sync_upserts_total",
		Help: "Run results written to the search backend by the results endpoint (each write replaces the site's rows).",
	})
	reindexRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crawl_operator_index_reindex_requests_total",
		Help: "Crawls a starting manager asked for because the search backend did not hold the last complete crawl a SiteIndex records (backend emptied or restored from an older backup).",
	})
	removals = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crawl_operator_index_sync_removals_total",
		Help: "SiteIndexes whose rows were removed from the search backend: deleted, or their site excluded.",
	})
	pendingDesc = prometheus.NewDesc("crawl_operator_index_sync_pending",
		"SiteIndexes whose rows are still to be removed from the search backend.", nil, nil)
	lagDesc = prometheus.NewDesc("crawl_operator_index_sync_lag_seconds",
		"How far the search backend is behind the SiteIndexes: the age of the oldest removal not yet done (0 when up to date).", nil, nil)

	registerOnce sync.Once
	current      struct {
		sync.Mutex
		s *Syncer
	}
)

// register makes s the syncer the metrics describe (the last one set up;
// a manager has one) and registers the metrics once per process.
func register(s *Syncer) {
	current.Lock()
	current.s = s
	current.Unlock()
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(syncFailures, upserts, removals, reindexRequests, lagCollector{})
		syncFailures.WithLabelValues("unavailable")
		syncFailures.WithLabelValues("error")
	})
}

type lagCollector struct{}

func (lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- lagDesc
}

func (lagCollector) Collect(ch chan<- prometheus.Metric) {
	current.Lock()
	s := current.s
	current.Unlock()
	var n int
	var lag time.Duration
	if s != nil {
		n, lag = s.Lag(time.Now())
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, lag.Seconds())
}
