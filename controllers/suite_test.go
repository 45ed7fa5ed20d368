package controllers

import (
	"context"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/reportendpoint"
	"github.com/lohisoft/crawl-operator/internal/testenv"
)

// The suite runs one real kube-apiserver and etcd (envtest, binaries from
// bin/k8s). There is no kubelet and no scheduler: tests move crawler Pods
// through their phases themselves, and report results the way the crawler
// does, over HTTP with the run's token.
var (
	restConfig *rest.Config
	k8s        client.Client
	scheme     = testenv.Scheme
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, "..", &restConfig, &k8s))
}

const testDeadline = 100 * time.Hour

// operator is one running manager with both reconcilers, as cmd/manager
// wires them, plus the results endpoint on a loopback test server.
type operator struct {
	clock   *clocktesting.FakeClock
	results *httptest.Server
	stop    context.CancelFunc
	done    chan struct{}
	// cache and apiReader are the manager's; apiReads counts the results
	// endpoint's reads from the API server.
	cache     client.Client
	apiReader client.Reader
	apiReads  *atomic.Int64
}

// countingReader counts reads that reach the API server.
type countingReader struct {
	client.Reader
	n *atomic.Int64
}

func (c countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.n.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.n.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

type operatorOptions struct {
	maxPerNode int
	healthy    func(string) bool
	egress     crawlpod.Egress
}

func startOperator(t *testing.T, opts operatorOptions) *operator {
	t.Helper()
	if opts.maxPerNode == 0 {
		opts.maxPerNode = 4
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   CacheOptions(opts.egress),
		Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// Tests start several managers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	if err := (&CrawlTargetReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    scheme,
		Recorder:  mgr.GetEventRecorder("crawltarget-controller"),
		Clock:     clk,
		Pod: crawlpod.Config{
			Image:      "crawler:test",
			ResultsURL: "http://results.test:8083",
			MinDelay:   time.Second,
			// Far beyond the clock jumps of the schedule tests, which would
			// otherwise make every Pod look stuck.
			ActiveDeadline: testDeadline,
			Resources:      crawlpod.DefaultResources(),
			Egress:         opts.egress,
		},
		MaxCrawlsPerNode: opts.maxPerNode,
		Egress:           EgressFilter{Healthy: opts.healthy, Selector: opts.egress},
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&ExclusionReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("exclusion-controller"),
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	reads := &atomic.Int64{}
	srv := &reportendpoint.Server{
		Client: mgr.GetClient(),
		Reader: countingReader{Reader: mgr.GetAPIReader(), n: reads},
		Clock:  clk,
		Excluded: func(ctx context.Context, host string) (bool, error) {
			return Excluded(ctx, mgr.GetClient(), host)
		},
	}
	op := &operator{clock: clk, results: httptest.NewServer(srv.Handler()), done: make(chan struct{}),
		cache: mgr.GetClient(), apiReader: mgr.GetAPIReader(), apiReads: reads}
	ctx, cancel := context.WithCancel(context.Background())
	op.stop = cancel
	go func() {
		defer close(op.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(op.Stop)
	return op
}

// Stop stops the manager and waits until it has stopped.
func (o *operator) Stop() {
	o.stop()
	<-o.done
	o.results.Close()
}
