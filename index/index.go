// Package index wires the search index into the manager: the storage
// backend, the SiteIndex syncer, the HTTP server for the search API and the
// bot's public pages, and the egress FCrDNS self-check. cmd/manager calls
// Setup once and hands the result to the reconcilers that need it.
package index

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lohisoft/crawl-operator/crawler/verify"
	"github.com/lohisoft/crawl-operator/index/backend"
	"github.com/lohisoft/crawl-operator/index/botpage"
	"github.com/lohisoft/crawl-operator/index/fcrdns"
	"github.com/lohisoft/crawl-operator/index/identity"
	"github.com/lohisoft/crawl-operator/index/searchapi"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/postgres"
	"github.com/lohisoft/crawl-operator/index/store/sqlite"
	"github.com/lohisoft/crawl-operator/index/syncer"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/httpserver"
)

// Defaults of Options.
const (
	DefaultStorage     = "sqlite:///data/index.db"
	DefaultBindAddress = ":8082"
)

// Options configure the index. The zero value of every field but Identity
// takes its default.
type Options struct {
	// Storage selects the backend: sqlite:///absolute/path.db,
	// sqlite://relative/path.db, or a postgres:// (postgresql://) URL.
	Storage string
	// BindAddress is where the search API and the bot pages are served.
	BindAddress string
	// Identity is what /bot states and what the self-check checks against.
	Identity identity.Identity
	// RequireEgressFCrDNS keeps crawls off egress nodes that fail the
	// self-check, and leaves them out of /bot and /bot/ips.json.
	RequireEgressFCrDNS bool
	// ExpectedEgressIPs, when not empty, are the only addresses crawls may
	// come from (the manager's --expected-egress-ips); other egress nodes
	// are left out of /bot and /bot/ips.json too.
	ExpectedEgressIPs []string
	// DNSServer (host:port) answers the self-check's lookups instead of the
	// system resolver; for tests.
	DNSServer string
	// CheckInterval is the time between self-checks of a node.
	CheckInterval time.Duration
	// Egress names the egress nodes; zero means the default label.
	Egress crawlpod.Egress
	// Backend, when set, may adjust the backend connection before it
	// starts (tests shorten its timing).
	Backend func(*backend.Backend)
}

// Index is the running index.
type Index struct {
	backend  *backend.Backend
	syncer   *syncer.Syncer
	checker  *fcrdns.Checker
	require  bool
	expected []string
	egress   crawlpod.Egress
	handler  http.Handler
}

// Setup checks the options and registers the backend connection, the
// syncer, the egress self-check and the HTTP server with mgr. It does not
// wait for the backend: the manager connects in the background (running
// the migrations), with back-off, and does everything that does not need
// the backend meanwhile. Call Close after mgr.Start returns.
func Setup(mgr ctrl.Manager, opts Options) (*Index, error) {
	if err := opts.Identity.Validate(); err != nil {
		return nil, fmt.Errorf("bot identity: %w", err)
	}
	if opts.Storage == "" {
		opts.Storage = DefaultStorage
	}
	if opts.BindAddress == "" {
		opts.BindAddress = DefaultBindAddress
	}
	kind, err := CheckStorage(opts.Storage)
	if err != nil {
		return nil, err
	}
	dsn := opts.Storage
	st := backend.New(kind, func(ctx context.Context) (store.Store, error) { return OpenStore(ctx, dsn) })
	if opts.Backend != nil {
		opts.Backend(st)
	}
	ix := &Index{
		backend:  st,
		syncer:   &syncer.Syncer{Client: mgr.GetClient(), Store: st, Backend: st},
		require:  opts.RequireEgressFCrDNS,
		expected: opts.ExpectedEgressIPs,
		egress:   opts.Egress,
		checker: &fcrdns.Checker{
			Client:   mgr.GetClient(),
			Resolver: verify.ResolverFor(opts.DNSServer),
			Suffix:   opts.Identity.HostnameSuffix,
			Interval: opts.CheckInterval,
			Recorder: mgr.GetEventRecorder("egress-fcrdns"),
			Elected:  mgr.Elected(),
			Selector: opts.Egress,
		},
	}
	bot := &botpage.Handler{Identity: opts.Identity, Egress: ix.egressSource(mgr.GetClient())}
	ix.handler = route(&searchapi.Handler{Store: st}, bot)

	registerMetrics()
	setup := []func() error{
		func() error { return mgr.Add(st) },
		func() error { return ix.syncer.SetupWithManager(mgr) },
		func() error { return ix.checker.SetupWithManager(mgr) },
		func() error {
			return mgr.Add(&httpserver.Runnable{Name: "index", Addr: opts.BindAddress, Handler: ix.handler})
		},
	}
	for _, f := range setup {
		if err := f(); err != nil {
			return nil, fmt.Errorf("set up index: %w", err)
		}
	}
	return ix, nil
}

// PurgeDomain removes every row of domain and its subdomains; it is the
// Exclusion reconciler's Purger.
func (ix *Index) PurgeDomain(ctx context.Context, domain string) (store.Removed, error) {
	return ix.syncer.PurgeDomain(ctx, domain)
}

// BackendCheck is a readiness check (healthz.Checker) that fails while the
// index backend is unreachable. The manager registers it as the "index"
// check of /readyz; the Pod's own probe leaves it out (/readyz?exclude=index)
// so the Pod stays in its Services during an outage: /bot, ips.json and
// the results endpoint keep working and search answers 503.
func (ix *Index) BackendCheck(r *http.Request) error { return ix.backend.Check(r) }

// BackendAvailable reports whether the index backend answered its last
// health check.
func (ix *Index) BackendAvailable() bool { return ix.backend.Available() }

// SyncLag reports how many SiteIndexes are not yet in the backend and how
// long the oldest has waited.
func (ix *Index) SyncLag() (pending int, lag time.Duration) { return ix.syncer.Lag(time.Now()) }

// EgressHealthy is the CrawlTarget reconciler's EgressHealthy: with
// RequireEgressFCrDNS off every node is healthy, otherwise only nodes that
// passed their last self-check.
func (ix *Index) EgressHealthy(node string) bool {
	return !ix.require || ix.checker.Healthy(node)
}

// Handler serves the search API and the bot pages, as the server does.
func (ix *Index) Handler() http.Handler { return ix.handler }

// Close closes the backend.
func (ix *Index) Close() error { return ix.backend.Close() }

// CheckStorage checks the form of a storage DSN without connecting, and
// names its kind: "sqlite" or "postgres".
func CheckStorage(dsn string) (string, error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite://"):
		path := strings.TrimPrefix(dsn, "sqlite://")
		if path == "" || strings.ContainsAny(path, "?#") {
			return "", fmt.Errorf("storage %q: want sqlite:///absolute/path.db or sqlite://relative/path.db", dsn)
		}
		return "sqlite", nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if _, err := url.Parse(dsn); err != nil {
			return "", fmt.Errorf("storage %q: not a URL", redact(dsn))
		}
		return "postgres", nil
	}
	return "", fmt.Errorf("storage %q: must start with sqlite:// or postgres://", redact(dsn))
}

// OpenStore opens the backend a storage DSN names.
func OpenStore(ctx context.Context, dsn string) (store.Store, error) {
	kind, err := CheckStorage(dsn)
	if err != nil {
		return nil, err
	}
	if kind == "postgres" {
		return postgres.Open(ctx, dsn)
	}
	path := strings.TrimPrefix(dsn, "sqlite://")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("storage %q: %w", dsn, err)
	}
	return sqlite.Open(ctx, path)
}

var metricsOnce sync.Once

func registerMetrics() {
	metricsOnce.Do(func() { metrics.Registry.MustRegister(backend.Collectors()...) })
}

// redact drops everything after the scheme, which may hold a password.
func redact(dsn string) string {
	if scheme, _, ok := strings.Cut(dsn, "://"); ok {
		return scheme + "://…"
	}
	return "…"
}

// route sends /api/ to the API and /bot to the bot pages by prefix only;
// each checks its exact paths. No http.ServeMux: it would redirect, and
// /bot/ips.json must never redirect.
func route(apiHandler, bot http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, searchapi.Prefix):
			apiHandler.ServeHTTP(w, r)
		case p == botpage.PagePath || strings.HasPrefix(p, botpage.PagePath+"/"):
			bot.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// egressSource lists what /bot and /bot/ips.json publish, from the Nodes
// in the manager's cache and the self-check's results.
func (ix *Index) egressSource(c client.Reader) botpage.Source {
	return func(ctx context.Context) ([]botpage.Egress, error) {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes, client.MatchingLabels(ix.egress.Labels())); err != nil {
			return nil, fmt.Errorf("list egress Nodes: %w", err)
		}
		return Published(nodes.Items, ix.egress, ix.checker.Lookup, ix.require, ix.expected), nil
	}
}

// Published decides which egress addresses the bot publishes: exactly those
// crawls can come from. That is every labelled Node's IPv4 ExternalIP, with
// the hostname the self-check verified for that very address, less (with
// requireFCrDNS) addresses without a verified hostname and (with expected
// not empty) addresses not in expected, because the CrawlTarget reconciler
// sends no crawl there. Nodes that are NotReady or cordoned stay listed:
// the address is still the bot's, crawls running there still come from it,
// and a list that flaps with node health would make site owners' firewalls
// flap too.
func Published(nodes []corev1.Node, sel crawlpod.Egress, lookup func(node string) (fcrdns.Result, bool), requireFCrDNS bool, expected []string) []botpage.Egress {
	var out []botpage.Egress
	for i := range nodes {
		n := &nodes[i]
		if !sel.Selects(n.Labels) || n.DeletionTimestamp != nil {
			continue
		}
		ip := crawlpod.ExternalIPv4(n)
		if ip == "" || (len(expected) > 0 && !slices.Contains(expected, ip)) {
			continue
		}
		var hostname string
		if r, ok := lookup(n.Name); ok && r.OK && r.IP == ip {
			hostname = r.Hostname
		}
		if requireFCrDNS && hostname == "" {
			continue
		}
		out = append(out, botpage.Egress{IP: ip, Hostname: hostname})
	}
	return out
}
