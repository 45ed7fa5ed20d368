package controllers

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/controllers/crawlqueue"
	"github.com/lohisoft/crawl-operator/internal/egress"
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
	crawlFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crawl_operator_crawl_failures_total",
		Help: "Failed crawls, by cause: oom_killed, deadline_exceeded (activeDeadlineSeconds, or the Pod never finished), pod_deleted, no_result (exited without delivering it), bad_input, address_refused, backed_off (the site asked for it), error.",
	}, []string{"cause"})
	crawlsLost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crawl_operator_crawls_lost_total",
		Help: "Crawls given up because their egress node was gone or not Ready for longer than --egress-node-lost-after, by node; each was started again on another node and is not counted as finished or failed.",
	}, []string{"node"})
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
		"Crawler Pods not yet finished, by egress node, as the crawl queue counts them (with those just created and not yet in the cache).", []string{"node"}, nil)
	targetsDesc = prometheus.NewDesc("crawl_operator_targets",
		"CrawlTargets by phase; phase Waiting is the queue.", []string{"phase"}, nil)
	queueWaitingDesc = prometheus.NewDesc("crawl_operator_queue_waiting",
		"CrawlTargets due for a crawl and waiting in the crawl queue, by what they wait for: no-egress-node, host-busy, no-free-slot, or older-first (a slot is free and older targets take it first).",
		[]string{"reason"}, nil)
	nodesUsableDesc = prometheus.NewDesc("crawl_operator_egress_nodes_usable",
		"Egress nodes that may take a crawl now (Ready, labelled, FCrDNS-verified when the check is on, and not quarantined after an egress address mismatch).", nil, nil)
	slotsPerNodeDesc = prometheus.NewDesc("crawl_operator_crawl_slots_per_node",
		"Crawls one egress node may run at once (--max-crawls-per-node).", nil, nil)
	queueOldestDesc = prometheus.NewDesc("crawl_operator_queue_oldest_wait_seconds",
		"How long the first CrawlTarget in the crawl queue has been due; 0 when none waits.", nil, nil)
	egressMismatchDesc = prometheus.NewDesc("crawl_operator_egress_address_mismatch",
		"1 from the moment a crawler on the egress node could not verify that sites see the node's published address (--egress-echo-url) until a crawl there verifies it; 0 otherwise. While it is 1 the node is quarantined or on probation.",
		[]string{"node"}, nil)
)

// queueReasons name, for the queue metric, what a waiter waits for.
var queueReasons = map[crawlqueue.Wait]string{
	crawlqueue.NoNode:   "no-egress-node",
	crawlqueue.HostBusy: "host-busy",
	crawlqueue.NodeFull: "no-free-slot",
	crawlqueue.AllFull:  "no-free-slot",
	crawlqueue.Behind:   "older-first",
}

// RegisterMetrics adds the crawl metrics to controller-runtime's registry,
// which the manager serves on its metrics endpoint. The gauges are read from
// the cache and the crawl queue at scrape time, so they cannot drift. They
// describe the whole fleet, which every replica's cache holds, so only the
// leader reports them (once elected is closed: mgr.Elected(), closed at
// start without leader election): summed over two replicas they would
// count every crawl twice. Calling it again (tests run several managers in
// one process) makes the gauges follow the new manager.
//
// The egress address mismatch gauge comes from quarantine, the leader's
// memory (egress.Quarantine), so it too is the leader's alone.
func RegisterMetrics(cache client.Reader, elected <-chan struct{}, queue *crawlqueue.Queue, quarantine *egress.Quarantine) {
	state.mu.Lock()
	state.cache, state.elected, state.queue, state.quarantine = cache, elected, queue, quarantine
	state.mu.Unlock()
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(crawlsStarted, crawlsFinished, crawlFailures, crawlsLost, pagesIndexed, crawlDuration,
			exclusionsEnforced, purgedPages, state)
		// Every series exists from the start, at 0: a dashboard of a
		// manager that never crawled shows zeros, not "no data", and
		// rate() sees the first failure.
		for _, result := range []string{"succeeded", "failed"} {
			crawlsFinished.WithLabelValues(result)
		}
		for _, cause := range failureCauses {
			crawlFailures.WithLabelValues(cause)
		}
	})
}

var (
	registerOnce sync.Once
	state        = &stateCollector{}
)

type stateCollector struct {
	mu         sync.Mutex
	cache      client.Reader
	elected    <-chan struct{}
	queue      *crawlqueue.Queue
	quarantine *egress.Quarantine
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- crawlsRunningDesc
	ch <- targetsDesc
	ch <- queueWaitingDesc
	ch <- queueOldestDesc
	ch <- nodesUsableDesc
	ch <- slotsPerNodeDesc
	ch <- egressMismatchDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	cache, elected, queue, quarantine := c.cache, c.elected, c.queue, c.quarantine
	c.mu.Unlock()
	if cache == nil || !closed(elected) {
		return
	}
	if queue != nil {
		st := queue.Stats()
		collectQueue(ch, st, time.Now())
		collectMismatches(ch, st.Nodes, quarantine)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Counting reads the cache's objects without copying them: a copy of
	// 100,000 CrawlTargets per scrape would be 150 MB of garbage.
	var targets crawlv1.CrawlTargetList
	if err := cache.List(ctx, &targets, client.UnsafeDisableDeepCopy); err == nil {
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

func collectQueue(ch chan<- prometheus.Metric, st crawlqueue.Stats, now time.Time) {
	perReason := map[string]int{}
	for _, r := range queueReasons {
		perReason[r] = 0
	}
	for w, n := range st.Waiting {
		perReason[queueReasons[w]] += n
	}
	for r, n := range perReason {
		ch <- prometheus.MustNewConstMetric(queueWaitingDesc, prometheus.GaugeValue, float64(n), r)
	}
	// Every usable node has its series, 0 when idle, so slot use can be
	// read per node; a node that lost its egress role still shows its
	// unfinished crawls.
	running := maps.Clone(st.Running)
	if running == nil {
		running = map[string]int{}
	}
	for _, node := range st.Nodes {
		running[node] += 0
	}
	for node, n := range running {
		ch <- prometheus.MustNewConstMetric(crawlsRunningDesc, prometheus.GaugeValue, float64(n), node)
	}
	ch <- prometheus.MustNewConstMetric(nodesUsableDesc, prometheus.GaugeValue, float64(len(st.Nodes)))
	ch <- prometheus.MustNewConstMetric(slotsPerNodeDesc, prometheus.GaugeValue, float64(st.MaxPerNode))
	oldest := 0.0
	if !st.OldestDue.IsZero() {
		oldest = max(0, now.Sub(st.OldestDue).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, oldest)
}

// collectMismatches reports every usable egress node (0 unless it is on
// probation) and every node the quarantine knows, so an alert sees a node
// go to 1 and back, and a dashboard shows 0 before anything went wrong.
func collectMismatches(ch chan<- prometheus.Metric, usable []string, q *egress.Quarantine) {
	value := map[string]float64{}
	for _, node := range usable {
		value[node] = 0
	}
	if q != nil {
		for _, st := range q.States() {
			value[st.Node] = 0
			if st.Unverified {
				value[st.Node] = 1
			}
		}
	}
	for node, v := range value {
		ch <- prometheus.MustNewConstMetric(egressMismatchDesc, prometheus.GaugeValue, v, node)
	}
}

// countFailure counts one failed crawl and its cause.
func countFailure(cause string) {
	crawlsFinished.WithLabelValues("failed").Inc()
	crawlFailures.WithLabelValues(cause).Inc()
}
