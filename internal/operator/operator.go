// Package operator wires the crawl-operator: the manager, both reconcilers,
// the results endpoint and the index, from one Options. cmd/manager calls
// it with the flags, and every envtest suite calls it too, so the tests run
// exactly the wiring that ships.
package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	crawlv1alpha1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/controllers"
	"github.com/lohisoft/crawl-operator/controllers/crawlqueue"
	"github.com/lohisoft/crawl-operator/crawler/engine"
	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/internal/conversion"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/httpserver"
	"github.com/lohisoft/crawl-operator/internal/reportendpoint"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// Options configure the whole operator.
type Options struct {
	Manager ManagerOptions
	// Pod is the operator-wide part of every crawler Pod. Its Egress is
	// taken from Index.Egress.Selector.
	Pod crawlpod.Config
	// MaxCrawlsPerNode is the most crawls running at once on one egress
	// node.
	MaxCrawlsPerNode int
	// Index configures the index, the bot's identity and the egress policy.
	Index index.Options
	// NetworkPolicy confines crawler Pods in every namespace where they
	// run. Its ResultsPort and EgressIPs are taken from Manager.ResultsAddr
	// and Index.Egress.Expected (see CrawlerNetworkPolicy).
	NetworkPolicy crawlpod.NetworkPolicyConfig
	// EgressQuarantine is how long an egress node whose crawler could not
	// verify the address sites see gets no crawls, the first time in a row
	// (see egress.Quarantine); zero is egress.DefaultQuarantine.
	EgressQuarantine time.Duration
	// EgressNodeLostAfter is how long an egress node may be not Ready
	// before the crawls on it are given up and started again on another
	// node (see egress.DefaultLostAfter); zero is that default.
	EgressNodeLostAfter time.Duration
	// Clock drives schedules and report times; nil is the real clock.
	Clock clock.PassiveClock
}

// ManagerOptions are the manager process's own settings.
type ManagerOptions struct {
	MetricsAddr, ProbeAddr string
	// MetricsSecure serves metrics over HTTPS, only to clients the API
	// server authenticates (TokenReview) and allows GET /metrics
	// (SubjectAccessReview): metrics name sites, nodes and addresses.
	MetricsSecure bool
	// ResultsAddr is where the results endpoint listens; "0" serves it
	// nowhere (tests serve Operator.Results themselves).
	ResultsAddr             string
	LeaderElect             bool
	LeaderElectionNamespace string
	// WatchNamespaces confines the manager to these namespaces (empty:
	// all): its cache, the crawls it starts and counts, the results it
	// takes and the index. Nodes and Exclusions stay cluster-wide.
	WatchNamespaces watchns.Namespaces
	// MaxConcurrentReconciles is how many CrawlTargets are reconciled at
	// once; KubeAPIQPS and KubeAPIBurst limit the manager's requests to
	// the API server (zero QPS: the rest.Config's own limits). See
	// Defaults for why they are what they are.
	MaxConcurrentReconciles int
	KubeAPIQPS              float64
	KubeAPIBurst            int
	// PprofAddr serves net/http/pprof ("0" or empty: nowhere); the scale
	// benchmark reads heap profiles from it.
	PprofAddr string
	// MemoryLimitRatio is the fraction of the container's memory limit,
	// after the index backend's caches, given to the Go runtime as its
	// soft limit (GoMemLimit).
	MemoryLimitRatio float64
	// Webhook serves the CRDs' conversion webhook (internal/conversion);
	// off unless its address is set.
	Webhook conversion.Flags
}

// The manager's throughput defaults, for thousands of CrawlTargets.
//
// A reconcile waits on the API server, not the CPU: reading is from the
// cache, and what a new target costs is two writes (its SiteIndex and one
// status patch), each a round trip that takes tens of milliseconds on a
// busy API server. One worker at a time took 548 s to reconcile 5,000 new
// targets; with 16 the manager still ended 20 s behind the client creating
// them, with 64 it kept up (3 s behind: TestQueueAtScale, README). A
// waiting worker is a parked goroutine, so 64 cost nothing while idle.
// Concurrent reconciles of different targets are safe: the crawl queue
// hands out slots and hosts under one lock, and the work queue never runs
// one target twice at once.
//
// The client's rate limit is a backstop against a runaway loop, not the
// throttle: in steady state the manager sends almost nothing (waiting
// targets are woken, not polled; reads come from the cache), and the API
// server's priority and fairness protect it from a burst. The burst that
// matters is an apply of thousands of targets: 20,000 targets × 2 writes
// in 120 s is 333 writes/s, so 500/s with a burst of 1,000 leaves room for
// crawl starts and results on top. (Events go through their own client.)
const (
	DefaultMaxConcurrentReconciles = 64
	DefaultKubeAPIQPS              = 500
	DefaultKubeAPIBurst            = 1000
)

// The hand-over of the Lease when the leader stops (a rollout, a drain):
// the leader releases it once its reconcilers have stopped, and the
// standby takes it at its next try.
const (
	// LeaderRetryPeriod is how often the standby tries for the Lease,
	// jittered up to 2.2 times (client-go), and how often the leader
	// renews it. controller-runtime's 2 s left the standby up to 4.4 s
	// behind a released Lease, which with the leader's own stop misses
	// a hand-over within 5 s; the price is one Lease write a second.
	// The Lease lasts controller-runtime's 15 s.
	LeaderRetryPeriod = time.Second
	// LeaderRenewDeadline is controller-runtime's default, named here
	// because it also bounds the release at shutdown.
	LeaderRenewDeadline = 10 * time.Second
	// GracefulShutdownTimeout bounds the manager's stop up to the
	// release, which itself may take up to LeaderRenewDeadline. Both
	// must end before the kubelet's SIGKILL at the Pod's
	// terminationGracePeriodSeconds (30 s, in the chart and
	// config/manager): controller-runtime's default of 30 s, as long as
	// the Pod's grace, let a stop that ran to its limit be killed with
	// the Lease held, and the standby wait for it to expire (15 s more).
	GracefulShutdownTimeout = 15 * time.Second
)

// Defaults are the manager's flag defaults.
func Defaults() Options {
	return Options{
		Manager: ManagerOptions{MetricsAddr: ":8080", MetricsSecure: true, ProbeAddr: ":8081", ResultsAddr: ":8083",
			MaxConcurrentReconciles: DefaultMaxConcurrentReconciles, KubeAPIQPS: DefaultKubeAPIQPS, KubeAPIBurst: DefaultKubeAPIBurst,
			MemoryLimitRatio: DefaultMemoryLimitRatio, Webhook: conversion.DefaultFlags()},
		Pod:                 crawlpod.DefaultConfig(),
		MaxCrawlsPerNode:    4,
		EgressQuarantine:    egress.DefaultQuarantine,
		EgressNodeLostAfter: egress.DefaultLostAfter,
		Index:               index.DefaultOptions(),
		NetworkPolicy:       crawlpod.DefaultNetworkPolicyConfig(),
	}
}

// BindFlags binds every flag of the manager to o, with o's values as the
// defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	o.Manager.BindFlags(fs)
	o.Pod.BindFlags(fs)
	fs.IntVar(&o.MaxCrawlsPerNode, "max-crawls-per-node", o.MaxCrawlsPerNode, "Most crawls running at once on one egress node.")
	fs.DurationVar(&o.EgressQuarantine, "egress-quarantine", o.EgressQuarantine, "How long an egress node whose crawler could not verify the address sites see (--egress-echo-url) gets no crawls; doubled for each failure in a row, up to an hour (or this, if longer). Then one crawl at a time checks it again.")
	fs.DurationVar(&o.EgressNodeLostAfter, "egress-node-lost-after", o.EgressNodeLostAfter, "How long an egress node may be not Ready (its Ready condition Unknown or False, counted from the condition's last transition) before the crawls on it are given up: their Pods are deleted at once, without waiting for the node's kubelet, and the crawls start again on another egress node, not counted as failures. A Node deleted or no longer labelled as an egress node loses its crawls at once.")
	o.Index.BindFlags(fs)
	o.NetworkPolicy.BindFlags(fs)
}

// BindFlags binds the manager process's flags to m.
func (m *ManagerOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.MetricsAddr, "metrics-bind-address", m.MetricsAddr, "Address the metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&m.MetricsSecure, "metrics-secure", m.MetricsSecure, "Serve metrics over HTTPS to clients the API server authenticates and authorizes for GET /metrics; false serves plain HTTP to anyone.")
	fs.StringVar(&m.ProbeAddr, "health-probe-bind-address", m.ProbeAddr, "Address the health and readiness probes bind to.")
	fs.StringVar(&m.ResultsAddr, "results-bind-address", m.ResultsAddr, "Address the results endpoint for crawler Pods binds to.")
	fs.BoolVar(&m.LeaderElect, "leader-elect", m.LeaderElect, "Enable leader election, so only one manager reconciles at a time.")
	fs.StringVar(&m.LeaderElectionNamespace, "leader-election-namespace", m.LeaderElectionNamespace, "Namespace of the leader election Lease (default: the manager's namespace).")
	fs.Var(&m.WatchNamespaces, "watch-namespaces", "Comma-separated namespaces the manager works in: their CrawlTargets, SiteIndexes, crawler Pods and run Secrets (default: every namespace).")
	fs.IntVar(&m.MaxConcurrentReconciles, "max-concurrent-reconciles", m.MaxConcurrentReconciles, "How many CrawlTargets are reconciled at once.")
	fs.Float64Var(&m.KubeAPIQPS, "kube-api-qps", m.KubeAPIQPS, "Most requests per second the manager sends to the Kubernetes API server, on average.")
	fs.IntVar(&m.KubeAPIBurst, "kube-api-burst", m.KubeAPIBurst, "Most requests the manager sends to the Kubernetes API server in a burst above --kube-api-qps.")
	fs.Float64Var(&m.MemoryLimitRatio, "memory-limit-ratio", m.MemoryLimitRatio, "Set the Go runtime's soft memory limit to this fraction of the container's memory limit, read from $"+MemoryLimitEnv+" (bytes; the chart sets it from the downward API), after the binary's resident pages (64 MiB) and the SQLite backend's page caches (4 × 8 MiB) are set aside. An explicit GOMEMLIMIT wins.")
	fs.StringVar(&m.PprofAddr, "pprof-bind-address", m.PprofAddr, "Address Go's pprof profiles are served on, for diagnosis (plain HTTP, no authentication: keep it on loopback); empty or 0 serves them nowhere.")
	m.Webhook.BindFlags(fs)
}

// The manager authenticates and authorizes metrics scrapes through the API
// server.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsServer is the metrics endpoint as the kubebuilder v4 scaffold
// serves it: with MetricsSecure, HTTPS (the certificate in
// /tmp/k8s-metrics-server/serving-certs, else a self-signed one) behind
// controller-runtime's TokenReview and SubjectAccessReview filter.
func (m ManagerOptions) metricsServer() metricsserver.Options {
	o := metricsserver.Options{BindAddress: m.MetricsAddr}
	if m.MetricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
		// HTTP/1.1 only: HTTP/2 Rapid Reset and Stream Cancellation
		// (CVE-2023-44487, CVE-2023-39325) would let anyone who reaches the
		// port tie up the manager before authentication.
		o.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	return o
}

// Validate reports the first setting the operator cannot run with. The
// index checks its own options in index.Setup.
func (o Options) Validate() error {
	if o.MaxCrawlsPerNode < 1 {
		return errors.New("--max-crawls-per-node must be at least 1")
	}
	if o.EgressQuarantine < 0 {
		return errors.New("--egress-quarantine must not be negative")
	}
	if o.EgressNodeLostAfter < 0 {
		return errors.New("--egress-node-lost-after must not be negative")
	}
	if err := o.Manager.WatchNamespaces.Validate(); err != nil {
		return err
	}
	if err := o.Manager.validateThroughput(); err != nil {
		return err
	}
	if err := o.Manager.validateMemoryLimitRatio(); err != nil {
		return err
	}
	if o.Manager.Webhook.Enabled() {
		if _, err := o.Manager.Webhook.Options(o.NetworkPolicy.ManagerNamespace); err != nil {
			return err
		}
	}
	if err := o.Pod.Validate(); err != nil {
		return err
	}
	np, err := o.CrawlerNetworkPolicy()
	if err != nil {
		return err
	}
	return np.Validate()
}

func (m ManagerOptions) validateThroughput() error {
	switch {
	case m.MaxConcurrentReconciles < 1:
		return errors.New("--max-concurrent-reconciles must be at least 1")
	case m.KubeAPIQPS < 0:
		return errors.New("--kube-api-qps must not be negative")
	case m.KubeAPIQPS > 0 && m.KubeAPIBurst < 1:
		return errors.New("--kube-api-burst must be at least 1")
	}
	return nil
}

// restConfig is cfg with the manager's client rate limits; zero QPS keeps
// cfg's own.
func (m ManagerOptions) restConfig(cfg *rest.Config) *rest.Config {
	if m.KubeAPIQPS == 0 {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = float32(m.KubeAPIQPS), m.KubeAPIBurst, nil
	return cfg
}

// CrawlerNetworkPolicy is o.NetworkPolicy completed with what other options
// own: the port the results endpoint listens on (--results-bind-address)
// and the published egress IPs (--expected-egress-ips). With ResultsAddr
// "0" the endpoint is served elsewhere (tests), and NetworkPolicy's own
// ResultsPort stays.
func (o Options) CrawlerNetworkPolicy() (crawlpod.NetworkPolicyConfig, error) {
	np := o.NetworkPolicy
	np.EgressIPs = o.Index.Egress.Expected
	if !np.Enabled || o.Manager.ResultsAddr == "0" {
		return np, nil
	}
	_, port, err := net.SplitHostPort(o.Manager.ResultsAddr)
	n, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || n == 0 {
		return np, fmt.Errorf("--results-bind-address %q names no fixed port, which the crawler NetworkPolicy (--crawler-network-policy) must open for crawler Pods", o.Manager.ResultsAddr)
	}
	np.ResultsPort = int32(n)
	return np, nil
}

// Operator is a wired manager, ready to Start.
type Operator struct {
	Manager ctrl.Manager
	Index   *index.Index
	// Results is the results endpoint crawler Pods report to. It is served
	// on ManagerOptions.ResultsAddr; tests may serve its Handler instead,
	// and may wrap its Reader before Start (the handler reads the field on
	// each request).
	Results *reportendpoint.Server
	// resultsServer serves Results; nil with ResultsAddr "0".
	resultsServer *httpserver.Runnable
}

// New checks o, creates the manager and wires everything into it. adjust
// may change the manager's options last (tests turn off name validation to
// run several managers in one process). It does not connect to the index
// backend: that happens in the background once the manager starts.
func New(cfg *rest.Config, o Options, adjust ...func(*ctrl.Options)) (*Operator, error) {
	if err := o.Pod.ReadExtraCAFile(); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// The page states what the Pods send and the token robots.txt groups
	// must name: one value for both.
	o.Index.Identity.UserAgent = o.Pod.UserAgent
	o.Index.Identity.ProductToken = engine.TokenFor(o.Pod.UserAgent)
	o.Pod.Egress = o.Index.Egress.Selector
	np, err := o.CrawlerNetworkPolicy()
	if err != nil {
		return nil, err
	}
	o.NetworkPolicy = np
	o.Index.Namespaces = o.Manager.WatchNamespaces
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}

	cacheOpts := controllers.CacheOptions(o.Index.Egress.Selector)
	cacheOpts.DefaultNamespaces = o.Manager.WatchNamespaces.Cache()
	mgrOpts := ctrl.Options{
		Scheme:                  Scheme(),
		Metrics:                 o.Manager.metricsServer(),
		HealthProbeBindAddress:  o.Manager.ProbeAddr,
		PprofBindAddress:        o.Manager.PprofAddr,
		LeaderElection:          o.Manager.LeaderElect,
		LeaderElectionID:        "crawl-operator.crawl.lohisoft.com",
		LeaderElectionNamespace: o.Manager.LeaderElectionNamespace,
		// Hand the Lease over at shutdown (after every runnable has
		// returned) instead of letting it expire, so a rollout leaves no
		// 15 s without a leader. Safe: once Start returns, the process
		// only finishes the requests the results endpoint and the index
		// were serving (Operator.Start), which every replica serves
		// anyway, and exits.
		LeaderElectionReleaseOnCancel: true,
		RetryPeriod:                   ptr.To(LeaderRetryPeriod),
		RenewDeadline:                 ptr.To(LeaderRenewDeadline),
		GracefulShutdownTimeout:       ptr.To(GracefulShutdownTimeout),
		Cache:                         cacheOpts,
		// The manager never reads a Secret (its RBAC grants create and
		// delete only). Should a read ever be added, it goes to the API
		// server and is refused, instead of starting an informer that
		// would list and watch every Secret in the cluster.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}
	var conv *conversion.Webhook
	if o.Manager.Webhook.Enabled() {
		wo, err := o.Manager.Webhook.Options(o.NetworkPolicy.ManagerNamespace)
		if err != nil {
			return nil, err
		}
		wo.Namespaces = o.Manager.WatchNamespaces
		if conv, err = conversion.New(wo); err != nil {
			return nil, fmt.Errorf("conversion webhook: %w", err)
		}
		mgrOpts.WebhookServer = conv.Server()
	}
	for _, f := range adjust {
		f(&mgrOpts)
	}
	mgr, err := ctrl.NewManager(o.Manager.restConfig(cfg), mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	ix, err := index.Setup(mgr, o.Index)
	if err != nil {
		return nil, err
	}
	op := &Operator{Manager: mgr, Index: ix}
	if err := op.wire(o); err != nil {
		_ = ix.Close()
		return nil, err
	}
	if conv != nil {
		if err := conv.Setup(mgr); err != nil {
			_ = ix.Close()
			return nil, err
		}
	}
	return op, nil
}

// wire adds the reconcilers, the results endpoint and the health checks.
func (op *Operator) wire(o Options) error {
	mgr := op.Manager
	queue := crawlqueue.New(o.MaxCrawlsPerNode)
	quarantine := &egress.Quarantine{Base: o.EgressQuarantine}
	if err := (&controllers.CrawlTargetReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                mgr.GetEventRecorder("crawltarget-controller"),
		Clock:                   o.Clock,
		Pod:                     o.Pod,
		MaxCrawlsPerNode:        o.MaxCrawlsPerNode,
		MaxConcurrentReconciles: o.Manager.MaxConcurrentReconciles,
		Queue:                   queue,
		Quarantine:              quarantine,
		NodeLostAfter:           o.EgressNodeLostAfter,
		Egress:                  op.Index.EgressPolicy(),
		NetworkPolicy:           o.NetworkPolicy,
		Namespaces:              o.Manager.WatchNamespaces,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up CrawlTarget controller: %w", err)
	}
	if err := (&controllers.ExclusionReconciler{
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Recorder:   mgr.GetEventRecorder("exclusion-controller"),
		Purger:     op.Index,
		Namespaces: o.Manager.WatchNamespaces,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up Exclusion controller: %w", err)
	}
	controllers.RegisterMetrics(mgr.GetClient(), mgr.Elected(), queue, quarantine)

	op.Results = &reportendpoint.Server{
		Client:     mgr.GetClient(),
		Reader:     mgr.GetAPIReader(),
		Clock:      o.Clock,
		Namespaces: o.Manager.WatchNamespaces,
		Index:      op.Index,
		Excluded: func(ctx context.Context, host string) (bool, error) {
			return controllers.Excluded(ctx, mgr.GetClient(), host)
		},
	}
	reportendpoint.RegisterMetrics()
	if o.Manager.ResultsAddr != "0" {
		op.resultsServer = &httpserver.Runnable{Name: "results", Addr: o.Manager.ResultsAddr, Handler: op.Results.Handler()}
		if err := mgr.Add(op.resultsServer); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	// /readyz and /readyz/index fail while the index backend is
	// unreachable; the Pod's probe uses /readyz?exclude=index, so an outage
	// does not take /bot, ips.json and the results endpoint out of their
	// Services (search answers 503 with Retry-After instead).
	return mgr.AddReadyzCheck("index", op.Index.BackendCheck)
}

// Start runs the manager until ctx ends, then lets the crawler reports
// and searches in flight finish (httpserver.DrainTimeout at most: they do
// not hold the Lease, which is released before Manager.Start returns) and
// closes the index backend they write and read.
func (op *Operator) Start(ctx context.Context) error {
	defer op.Index.Close()
	if op.resultsServer != nil {
		defer op.resultsServer.Wait()
	}
	return op.Manager.Start(ctx)
}

// Scheme holds the types the operator reads and writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(crawlv1.AddToScheme(s))
	// The conversion webhook decodes v1alpha1 and the injector reads CRDs.
	utilruntime.Must(crawlv1alpha1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}
