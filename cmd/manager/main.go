// Command manager runs the crawl-operator: the CrawlTarget and Exclusion
// reconcilers and the results endpoint crawler Pods report to.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/controllers"
	"github.com/lohisoft/crawl-operator/crawler/engine"
	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/index/identity"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/httpserver"
	"github.com/lohisoft/crawl-operator/internal/reportendpoint"
)

type options struct {
	metricsAddr, probeAddr, resultsAddr string
	leaderElect                         bool
	leaderElectionNamespace             string

	crawlerImage      string
	crawlerPullPolicy string
	resultsURL        string
	maxCrawlsPerNode  int
	minCrawlDelay     time.Duration
	crawlDeadline     time.Duration
	userAgent         string
	allowPrivate      bool
	expectedIPs       string
	egressLabel       string
	egressTaint       string

	index index.Options
}

func main() {
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	flag.StringVar(&o.resultsAddr, "results-bind-address", ":8083", "Address the results endpoint for crawler Pods binds to.")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "Enable leader election, so only one manager reconciles at a time.")
	flag.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the manager's namespace).")
	flag.StringVar(&o.crawlerImage, "crawler-image", "ghcr.io/lohisoft/crawl-operator:latest", "Image of crawler Pods; it must provide the crawler command.")
	flag.StringVar(&o.crawlerPullPolicy, "crawler-image-pull-policy", string(corev1.PullIfNotPresent), "Pull policy of the crawler image.")
	flag.StringVar(&o.resultsURL, "results-url", "http://crawl-operator-results.crawl-system.svc:8083", "Base URL of the results endpoint as crawler Pods reach it.")
	flag.IntVar(&o.maxCrawlsPerNode, "max-crawls-per-node", 4, "Most crawls running at once on one egress node.")
	flag.DurationVar(&o.minCrawlDelay, "min-crawl-delay", time.Second, "Floor applied to spec.delay: the least gap between two requests to a site.")
	flag.DurationVar(&o.crawlDeadline, "crawl-deadline", 30*time.Minute, "activeDeadlineSeconds of crawler Pods.")
	flag.StringVar(&o.userAgent, "crawler-user-agent", engine.DefaultUserAgent, "User-Agent crawler Pods send; /bot states it as the current one.")
	flag.BoolVar(&o.allowPrivate, "crawler-allow-private", false, "Let crawlers fetch private and loopback addresses. Local demos and tests only.")
	flag.StringVar(&o.expectedIPs, "expected-egress-ips", "", "Comma-separated public IPv4 addresses published to site owners; egress nodes with another ExternalIP get no crawls (empty: any).")
	flag.StringVar(&o.egressLabel, "egress-node-label", crawlpod.EgressLabel+"="+crawlpod.EgressValue, "Label (key=value) of the egress nodes, which own the bot's public IPv4 addresses.")
	flag.StringVar(&o.egressTaint, "egress-node-taint", crawlpod.EgressLabel+"="+crawlpod.EgressValue+":NoSchedule", "Taint (key=value:Effect) of the egress nodes; crawler Pods tolerate it.")
	flag.StringVar(&o.index.Storage, "storage", index.DefaultStorage, "Index backend: sqlite:///path/to/index.db or postgres://user@host:5432/db.")
	flag.StringVar(&o.index.BindAddress, "index-bind-address", index.DefaultBindAddress, "Address of the search API, /bot and /bot/ips.json.")
	flag.BoolVar(&o.index.RequireEgressFCrDNS, "require-egress-fcrdns", false, "Give no crawls to egress nodes whose IP fails forward-confirmed reverse DNS (the chart turns it on).")
	flag.StringVar(&o.index.DNSServer, "egress-dns-server", "", "DNS server (host:port) for the egress FCrDNS self-check (default: the system resolver).")
	flag.DurationVar(&o.index.CheckInterval, "egress-check-interval", 10*time.Minute, "Time between FCrDNS self-checks of an egress node.")
	o.index.Identity = identity.Default()
	o.index.Identity.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	if err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(), o); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

// run runs the manager until ctx ends. It needs the Kubernetes API, not the
// index backend: that is connected in the background.
func run(ctx context.Context, cfg *rest.Config, o options) error {
	if o.maxCrawlsPerNode < 1 {
		return errors.New("--max-crawls-per-node must be at least 1")
	}
	if o.minCrawlDelay < 0 {
		return errors.New("--min-crawl-delay must not be negative")
	}
	expected, err := parseIPv4List(o.expectedIPs)
	if err != nil {
		return fmt.Errorf("--expected-egress-ips: %w", err)
	}
	egress, err := crawlpod.ParseEgress(o.egressLabel, o.egressTaint)
	if err != nil {
		return err
	}
	o.index.Egress = egress
	// The page states what the Pods send and the token robots.txt groups
	// must name: one value for both.
	o.index.Identity.UserAgent = o.userAgent
	o.index.Identity.ProductToken = engine.TokenFor(o.userAgent)
	o.index.ExpectedEgressIPs = expected
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(crawlv1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "crawl-operator.crawl.lohisoft.com",
		LeaderElectionNamespace: o.leaderElectionNamespace,
		Cache:                   controllers.CacheOptions(egress),
		// Secrets are read only through the API reader, never cached.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	ix, err := index.Setup(mgr, o.index)
	if err != nil {
		return err
	}
	defer ix.Close()

	expectedSet := map[string]bool{}
	for _, ip := range expected {
		expectedSet[ip] = true
	}
	if err := (&controllers.CrawlTargetReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder("crawltarget-controller"),
		Clock:     clock.RealClock{},
		Pod: crawlpod.Config{
			Image:           o.crawlerImage,
			ImagePullPolicy: corev1.PullPolicy(o.crawlerPullPolicy),
			ResultsURL:      o.resultsURL,
			MinDelay:        o.minCrawlDelay,
			UserAgent:       o.userAgent,
			ActiveDeadline:  o.crawlDeadline,
			Resources:       crawlpod.DefaultResources(),
			AllowPrivate:    o.allowPrivate,
			Egress:          egress,
		},
		MaxCrawlsPerNode: o.maxCrawlsPerNode,
		Egress:           controllers.EgressFilter{Healthy: ix.EgressHealthy, ExpectedIPs: expectedSet, Selector: egress},
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up CrawlTarget controller: %w", err)
	}
	if err := (&controllers.ExclusionReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("exclusion-controller"),
		Purger:    ix,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up Exclusion controller: %w", err)
	}
	controllers.RegisterMetrics(mgr.GetClient())

	resultsServer := &reportendpoint.Server{
		Client: mgr.GetClient(),
		Reader: mgr.GetAPIReader(),
		Clock:  clock.RealClock{},
		Excluded: func(ctx context.Context, host string) (bool, error) {
			return controllers.Excluded(ctx, mgr.GetClient(), host)
		},
	}
	if err := mgr.Add(&httpserver.Runnable{Name: "results", Addr: o.resultsAddr, Handler: resultsServer.Handler()}); err != nil {
		return err
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
	if err := mgr.AddReadyzCheck("index", ix.BackendCheck); err != nil {
		return err
	}
	ctrl.Log.Info("starting manager", "resultsURL", o.resultsURL, "crawlerImage", o.crawlerImage,
		"maxCrawlsPerNode", o.maxCrawlsPerNode, "minCrawlDelay", o.minCrawlDelay)
	return mgr.Start(ctx)
}

// parseIPv4List parses a comma-separated list of IPv4 addresses.
func parseIPv4List(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		ip, err := netip.ParseAddr(f)
		if err != nil || !ip.Is4() {
			return nil, fmt.Errorf("%q is not an IPv4 address", f)
		}
		out = append(out, ip.String())
	}
	return out, nil
}
