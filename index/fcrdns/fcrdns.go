// Package fcrdns checks, again and again, that every egress node passes
// the forward-confirmed reverse DNS test the bot page tells site owners to
// run: the PTR name of the node's public IPv4 address must end in the
// configured suffix and resolve back to that address. A node that fails
// gets a Warning Event and a metric, and Verified reports it so the
// CrawlTarget reconciler can keep crawls off it.
package fcrdns

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/lohisoft/crawl-operator/crawler/verify"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// Defaults of Checker.
const (
	DefaultInterval = 5 * time.Minute
	DefaultTimeout  = 10 * time.Second
	// retryFailed is how soon a failing node is checked again.
	retryFailed = time.Minute
)

// Event reasons on Nodes.
const (
	ReasonFailed   = "FCrDNSFailed"
	ReasonVerified = "FCrDNSVerified"
)

var (
	verifiedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "crawl_operator_egress_fcrdns_verified",
		Help: "1 when the egress node's public IPv4 passed the last FCrDNS self-check, 0 when it failed.",
	}, []string{"node"})
	failuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crawl_operator_egress_fcrdns_failures_total",
		Help: "FCrDNS self-checks of egress nodes that failed.",
	}, []string{"node"})
)

func init() {
	metrics.Registry.MustRegister(verifiedGauge, failuresTotal)
}

// Result is the outcome of the last check of one node.
type Result struct {
	Node string
	IP   string
	// Hostname is the verified PTR name; empty when the check failed.
	Hostname  string
	OK        bool
	Reason    string
	CheckedAt time.Time
}

// Checker checks egress nodes. It runs as a controller on Nodes that does
// not need leader election: every replica checks, because every replica
// serves the bot page, which shows the verified hostnames. Only the leader
// records Events.
type Checker struct {
	Client   client.Reader
	Resolver verify.Resolver
	// Suffix is the hostname suffix, with its leading dot.
	Suffix   string
	Interval time.Duration // between checks of a node; DefaultInterval when 0
	Timeout  time.Duration // of one node's lookups; DefaultTimeout when 0
	Recorder events.EventRecorder
	// Elected is closed once this replica leads; nil means it always does.
	Elected <-chan struct{}
	Now     func() time.Time
	// Selector names the egress nodes; zero means the default label.
	Selector egress.Selector

	mu      sync.RWMutex
	results map[string]Result
	// warned is when each failing node last got a Warning Event.
	warned map[string]time.Time

	changesOnce sync.Once
	changes     chan event.GenericEvent
}

// changesBuffer is how many unread changes are kept. A replica that does
// not lead has no reader, and a change that does not fit is dropped: the
// crawl queue's periodic resync reads the results anyway, so the
// news only makes it sooner.
const changesBuffer = 16

// Changes receives each node whose result changed: its first result, or
// passing after failing and back.
func (c *Checker) Changes() <-chan event.GenericEvent {
	c.changesOnce.Do(func() { c.changes = make(chan event.GenericEvent, changesBuffer) })
	return c.changes
}

func (c *Checker) announce(node *corev1.Node) {
	c.Changes()
	select {
	case c.changes <- event.GenericEvent{Object: node}:
	default:
	}
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager checks each egress node when it appears, when its
// address changes, and every Interval after that.
func (c *Checker) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return c.isEgress(e.Object) },
			// Nodes update their status every few seconds; only what the
			// check depends on matters.
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
				return c.isEgress(o) != c.isEgress(n) || egress.ExternalIPv4(o) != egress.ExternalIPv4(n)
			},
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		Named("egress-fcrdns").
		Complete(c)
}

func (c *Checker) isEgress(o client.Object) bool {
	return c.Selector.Selects(o.GetLabels())
}

// Reconcile checks one node and schedules its next check.
func (c *Checker) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	err := c.Client.Get(ctx, req.NamespacedName, node)
	if apierrors.IsNotFound(err) || (err == nil && (!c.isEgress(node) || node.DeletionTimestamp != nil)) {
		c.forget(req.Name)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get Node %s: %w", req.Name, err)
	}
	res := c.check(ctx, node)
	prev, known := c.record(res)
	if ctx.Err() != nil {
		return ctrl.Result{}, nil // stopping: the lookups were cut short, not failed
	}
	if !known || prev.OK != res.OK || prev.IP != res.IP || prev.Hostname != res.Hostname {
		c.announce(node)
	}
	c.report(ctx, node, res, prev, known)
	if !res.OK {
		// A DNS hiccup must not keep a node idle for a whole interval.
		return ctrl.Result{RequeueAfter: min(c.interval(), retryFailed)}, nil
	}
	return ctrl.Result{RequeueAfter: c.interval()}, nil
}

func (c *Checker) check(ctx context.Context, node *corev1.Node) Result {
	res := Result{Node: node.Name, IP: egress.ExternalIPv4(node), CheckedAt: c.now()}
	if res.IP == "" {
		res.Reason = "the Node has no IPv4 ExternalIP"
		return res
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	lookupCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, err := verify.VerifySuffix(lookupCtx, c.Resolver, res.IP, c.Suffix)
	if err != nil {
		res.Reason = err.Error()
		return res
	}
	res.OK, res.Hostname = true, host
	return res
}

// record stores res and returns the node's previous result.
func (c *Checker) record(res Result) (prev Result, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.results == nil {
		c.results = map[string]Result{}
	}
	prev, known = c.results[res.Node]
	c.results[res.Node] = res
	return prev, known
}

func (c *Checker) forget(node string) {
	c.mu.Lock()
	delete(c.results, node)
	delete(c.warned, node)
	c.mu.Unlock()
	verifiedGauge.DeleteLabelValues(node)
}

// report publishes a result: the metric always; a Warning Event when a node
// starts failing, fails for another reason, or has failed for another
// Interval (so it keeps showing in `kubectl get events` without an Event
// per retry); a Normal Event when it recovers.
func (c *Checker) report(ctx context.Context, node *corev1.Node, res, prev Result, known bool) {
	logger := log.FromContext(ctx)
	if res.OK {
		verifiedGauge.WithLabelValues(node.Name).Set(1)
		if known && !prev.OK && c.leading() {
			c.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonVerified, "SelfCheck",
				"%s passes FCrDNS again: %s", res.IP, res.Hostname)
		}
		return
	}
	verifiedGauge.WithLabelValues(node.Name).Set(0)
	failuresTotal.WithLabelValues(node.Name).Inc()
	logger.Info("egress node fails the FCrDNS self-check", "node", node.Name, "ip", res.IP, "reason", res.Reason)
	if c.leading() && c.shouldWarn(res, prev, known) {
		c.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonFailed, "SelfCheck",
			"egress IP %s fails FCrDNS under %s, so site owners verifying the bot would block it: %s",
			res.IP, c.Suffix, res.Reason)
	}
}

func (c *Checker) shouldWarn(res, prev Result, known bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, warned := c.warned[res.Node]
	if warned && known && !prev.OK && prev.Reason == res.Reason && res.CheckedAt.Sub(last) < c.interval() {
		return false
	}
	if c.warned == nil {
		c.warned = map[string]time.Time{}
	}
	c.warned[res.Node] = res.CheckedAt
	return true
}

func (c *Checker) leading() bool {
	if c.Elected == nil {
		return true
	}
	select {
	case <-c.Elected:
		return true
	default:
		return false
	}
}

// Verified returns the hostname node's last check verified for exactly ip,
// or "" when the check failed, has not run, or ran for another address.
// It is the egress.Policy's Verified.
func (c *Checker) Verified(node, ip string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if r := c.results[node]; r.OK && r.IP == ip {
		return r.Hostname
	}
	return ""
}

// Results returns the latest result of every egress node, sorted by node.
func (c *Checker) Results() []Result {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Result, 0, len(c.results))
	for _, r := range c.results {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// Lookup returns the latest result of node.
func (c *Checker) Lookup(node string) (Result, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.results[node]
	return r, ok
}

func (c *Checker) interval() time.Duration {
	if c.Interval > 0 {
		return c.Interval
	}
	return DefaultInterval
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
