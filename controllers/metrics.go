package controllers

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

var (
	crawlsStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crawl_operator_crawls_started_total",
		Help: "Crawler Pods started.",
	})
	crawlsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crawl_operator_crawls_finished_total",
		Help: "Crawls finished, by result (succeeded, failed).",
	}, []string{"result"})
	pagesIndexed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crawl_operator_pages_indexed_total",
		Help: "Pages indexed by successful crawls.",
	})
	crawlDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "crawl_operator_crawl_duration_seconds",
		Help:    "Wall time of successful crawls, from container start to end.",
		Buckets: prometheus.ExponentialBuckets(5, 2, 10),
	})
	exclusionsEnforced = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crawl_operator_exclusions_enforced_total",
		Help: "CrawlTargets stopped or purged because an Exclusion covers them.",
	})
	purgedPages = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crawl_operator_pages_purged_total",
		Help: "Indexed pages removed because an Exclusion covers their site.",
	})
	crawlsRunningDesc = prometheus.NewDesc("crawl_operator_crawls_running",
		"Crawler Pods not yet finished, by egress node.", []string{"node"}, nil)
	targetsDesc = prometheus.NewDesc("crawl_operator_targets",
		"CrawlTargets by phase; phase Waiting is the queue.", []string{"phase"}, nil)
)

// RegisterMetrics adds the crawl metrics to controller-runtime's registry,
// which the manager serves on its metrics endpoint. The gauges are read from
// the cache at scrape time, so they cannot drift from the cluster. They
// describe the whole fleet, which every replica's cache holds, so only the
// leader reports them (once elected is closed: mgr.Elected(), closed at
// start without leader election): summed over two replicas they would
// count every crawl twice. Calling it again (tests run several managers in
// one process) makes the gauges follow the new manager.
func RegisterMetrics(cache client.Reader, elected <-chan struct{}) {
	state.mu.Lock()
	state.cache, state.elected = cache, elected
	state.mu.Unlock()
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(crawlsStarted, crawlsFinished, pagesIndexed, crawlDuration,
			exclusionsEnforced, purgedPages, state)
	})
}

var (
	registerOnce sync.Once
	state        = &stateCollector{}
)

type stateCollector struct {
	mu      sync.Mutex
	cache   client.Reader
	elected <-chan struct{}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- crawlsRunningDesc
	ch <- targetsDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	cache, elected := c.cache, c.elected
	c.mu.Unlock()
	if cache == nil || !closed(elected) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var pods corev1.PodList
	if err := cache.List(ctx, &pods, client.MatchingLabels{crawlpod.LabelName: crawlpod.NameValue}); err == nil {
		perNode := map[string]int{}
		for i := range pods.Items {
			if !crawlpod.Finished(&pods.Items[i]) {
				perNode[pods.Items[i].Annotations[crawlpod.AnnotationEgressNode]]++
			}
		}
		for node, n := range perNode {
			ch <- prometheus.MustNewConstMetric(crawlsRunningDesc, prometheus.GaugeValue, float64(n), node)
		}
	}
	var targets crawlv1.CrawlTargetList
	if err := cache.List(ctx, &targets); err == nil {
		perPhase := map[crawlv1.CrawlPhase]int{}
		for _, phase := range []crawlv1.CrawlPhase{crawlv1.PhasePending, crawlv1.PhaseWaiting, crawlv1.PhaseRunning,
			crawlv1.PhaseSucceeded, crawlv1.PhaseFailed, crawlv1.PhaseExcluded, crawlv1.PhaseDuplicate} {
			perPhase[phase] = 0
		}
		for _, t := range targets.Items {
			if t.Status.Phase != "" {
				perPhase[t.Status.Phase]++
			}
		}
		for phase, n := range perPhase {
			ch <- prometheus.MustNewConstMetric(targetsDesc, prometheus.GaugeValue, float64(n), string(phase))
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
