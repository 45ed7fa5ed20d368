package controllers_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/operator/operatortest"
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

// indexDSN is the one index every operator of the suite uses, as a manager
// restarting against its backend does: a fresh, empty index per operator
// would make its start-up check ask for a crawl of every SiteIndex earlier
// tests left in the cluster.
var indexDSN string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "controllers-index-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		indexDSN = "sqlite://" + filepath.Join(dir, "index.db")
		return testenv.Run(m, "..", &restConfig, &k8s)
	}())
}

const testDeadline = 100 * time.Hour

// harness is one running operator, wired as cmd/manager wires it, with
// the results endpoint on a loopback test server.
type harness struct {
	*operatortest.Running
	clock *clocktesting.FakeClock
	// cache and apiReader are the manager's; apiReads counts the results
	// endpoint's reads from the API server.
	cache     client.Client
	apiReader client.Reader
	apiReads  *atomic.Int64
	// networkPolicy is the crawler NetworkPolicy configuration the
	// operator runs with.
	networkPolicy crawlpod.NetworkPolicyConfig
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
	// requireFCrDNS keeps crawls off egress nodes the self-check has not
	// verified; the suite's DNS server verifies none.
	requireFCrDNS bool
	egress        egress.Selector
	// noNetworkPolicy turns --crawler-network-policy off.
	noNetworkPolicy bool
	// namespaces confines the manager (--watch-namespaces), so targets
	// other tests left behind do not compete for its slots.
	namespaces []string
	// workers, when set, is --max-concurrent-reconciles.
	workers int
	// zone is what the FCrDNS self-check's DNS server knows (default:
	// nothing, so no node is verified).
	zone dnstest.Zone
	// echoURL, when set, is --egress-echo-url.
	echoURL string
	// wrap, when set, wraps the manager's connection to the API server:
	// a fault between the operator and a real API server.
	wrap func(http.RoundTripper) http.RoundTripper
}

// The manager's namespace and results port as the crawler NetworkPolicy
// sees them; the suite serves the results endpoint on loopback, so they
// select nothing real.
const (
	managerNamespace = "crawl-system"
	resultsPort      = 8083
)

// startOperator runs the operator exactly as cmd/manager wires it, with a
// fake clock, a loopback DNS server that knows no names, SQLite in a
// temporary directory and the results endpoint on a test server.
func startOperator(t *testing.T, opts operatorOptions) *harness {
	t.Helper()
	o := operatortest.Options(t, opts.zone)
	o.Index.Storage = indexDSN
	if opts.maxPerNode != 0 {
		o.MaxCrawlsPerNode = opts.maxPerNode
	}
	// Far beyond the clock jumps of the schedule tests, which would
	// otherwise make every Pod look stuck.
	o.Pod.ActiveDeadline = testDeadline
	o.Index.Egress.RequireFCrDNS = opts.requireFCrDNS
	if opts.egress.LabelKey != "" {
		o.Index.Egress.Selector = opts.egress
	}
	o.Pod.EgressEchoURL = opts.echoURL
	o.NetworkPolicy.Enabled = !opts.noNetworkPolicy
	o.Manager.WatchNamespaces = opts.namespaces
	if opts.workers != 0 {
		o.Manager.MaxConcurrentReconciles = opts.workers
	}
	o.NetworkPolicy.ManagerNamespace = managerNamespace
	o.NetworkPolicy.ResultsPort = resultsPort
	clk := clocktesting.NewFakeClock(time.Now())
	o.Clock = clk
	np, err := o.CrawlerNetworkPolicy()
	if err != nil {
		t.Fatal(err)
	}
	cfg := restConfig
	if opts.wrap != nil {
		cfg = rest.CopyConfig(restConfig)
		cfg.Wrap(opts.wrap)
	}
	op := operatortest.New(t, cfg, o)
	reads := &atomic.Int64{}
	op.Results.Reader = countingReader{Reader: op.Results.Reader, n: reads}
	op.Start(t)
	mgr := op.Manager
	return &harness{Running: op, clock: clk, cache: mgr.GetClient(), apiReader: mgr.GetAPIReader(), apiReads: reads, networkPolicy: np}
}
