package controllers

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/results"
)

// The suite runs one real kube-apiserver and etcd (envtest, binaries from
// bin/k8s). There is no kubelet and no scheduler: tests move crawler Pods
// through their phases themselves, and report results the way the crawler
// does, over HTTP with the run's token.
var (
	restConfig *rest.Config
	k8s        client.Client
	scheme     = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(crawlv1.AddToScheme(scheme))
	// Errors only, unless TEST_VERBOSE_LOGS is set.
	level := zapcore.ErrorLevel
	if os.Getenv("TEST_VERBOSE_LOGS") != "" {
		level = zapcore.DebugLevel
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(level)))

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "bin", "k8s")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		fmt.Fprintf(os.Stderr, "envtest needs kube-apiserver and etcd in %s: run `make k8s-bin` (or `make test`, which does)\n", assets)
		os.Exit(1)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	var err error
	restConfig, err = env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		os.Exit(1)
	}
	k8s, err = client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

// operator is one running manager with both reconcilers, as cmd/manager
// wires them, plus the results endpoint on a loopback test server.
type operator struct {
	clock   *clocktesting.FakeClock
	results *httptest.Server
	stop    context.CancelFunc
	done    chan struct{}
}

type operatorOptions struct {
	maxPerNode int
	healthy    func(string) bool
}

func startOperator(t *testing.T, opts operatorOptions) *operator {
	t.Helper()
	if opts.maxPerNode == 0 {
		opts.maxPerNode = 4
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   CacheOptions(),
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
			Image:          "crawler:test",
			ResultsURL:     "http://results.test:8083",
			MinDelay:       time.Second,
			ActiveDeadline: 30 * time.Minute,
			Resources:      crawlpod.DefaultResources(),
		},
		MaxCrawlsPerNode: opts.maxPerNode,
		Egress:           EgressFilter{Healthy: opts.healthy},
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := (&ExclusionReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("exclusion-controller"),
	}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	srv := &results.Server{
		Client: mgr.GetClient(),
		Clock:  clk,
		Excluded: func(ctx context.Context, host string) (bool, error) {
			return Excluded(ctx, mgr.GetClient(), host)
		},
	}
	op := &operator{clock: clk, results: httptest.NewServer(srv.Handler()), done: make(chan struct{})}
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
