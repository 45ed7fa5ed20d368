// Package index wires the search index into the manager: the storage
// backend, the SiteIndex syncer, the HTTP server for the search API, the
// search page and crawl dashboard and the bot's public pages, and the
// egress FCrDNS self-check. internal/operator
// calls Setup once and hands the result to the reconcilers that need it.
package index

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/verify"
	"github.com/lohisoft/crawl-operator/index/backend"
	"github.com/lohisoft/crawl-operator/index/botpage"
	"github.com/lohisoft/crawl-operator/index/fcrdns"
	"github.com/lohisoft/crawl-operator/index/identity"
	"github.com/lohisoft/crawl-operator/index/searchapi"
	"github.com/lohisoft/crawl-operator/index/searchui"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/postgres"
	"github.com/lohisoft/crawl-operator/index/store/sqlite"
	"github.com/lohisoft/crawl-operator/index/syncer"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/httpserver"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// Defaults of Options.
const (
	DefaultStorage     = "sqlite:///data/index.db"
	DefaultBindAddress = ":8082"
)

// StorageEnv is the environment variable the manager takes its storage DSN
// from when --storage is not given. A PostgreSQL DSN holds a password, and
// a process's arguments are world-readable (/proc/PID/cmdline, ps), its
// environment is not.
const StorageEnv = "CRAWL_STORAGE"

// Options configure the index. The zero value of every field but Identity
// takes its default.
type Options struct {
	// Storage selects the backend: sqlite:///absolute/path.db,
	// sqlite://relative/path.db, or a postgres:// (postgresql://) URL.
	// Empty means $CRAWL_STORAGE, and DefaultStorage when that is unset.
	Storage string
	// BindAddress is where the search API and the bot pages are served.
	BindAddress string
	// Identity is what /bot states and what the self-check checks against.
	Identity identity.Identity
	// Egress says which egress nodes may crawl and are published: its
	// Selector, Expected addresses and RequireFCrDNS. Setup fills Verified
	// and Changes from the FCrDNS self-check.
	Egress egress.Policy
	// DNSServer (host:port) answers the self-check's lookups instead of the
	// system resolver; for tests.
	DNSServer string
	// CheckInterval is the time between self-checks of a node.
	CheckInterval time.Duration
	// Namespaces are the namespaces the manager watches (empty: all): the
	// index holds their SiteIndexes only. Not a flag of its own; the
	// operator sets it from --watch-namespaces.
	Namespaces watchns.Namespaces
}

// DefaultOptions are the manager's flag defaults.
func DefaultOptions() Options {
	return Options{
		BindAddress:   DefaultBindAddress,
		Identity:      identity.Default(),
		CheckInterval: 10 * time.Minute,
		Egress:        egress.Policy{Selector: egress.DefaultSelector()},
	}
}

// BindFlags binds the manager's index, identity and egress flags to o,
// with o's values as the defaults.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Storage, "storage", o.Storage, "Index backend: sqlite:///path/to/index.db or postgres://user@host:5432/db "+
		"(default: $"+StorageEnv+", else "+DefaultStorage+"). Pass a DSN with a password in $"+StorageEnv+", not here: arguments are visible to every process on the node.")
	fs.StringVar(&o.BindAddress, "index-bind-address", o.BindAddress, "Address of the search API, the search page and dashboard, /bot and /bot/ips.json.")
	fs.StringVar(&o.DNSServer, "egress-dns-server", o.DNSServer, "DNS server (host:port) for the egress FCrDNS self-check (default: the system resolver).")
	fs.DurationVar(&o.CheckInterval, "egress-check-interval", o.CheckInterval, "Time between FCrDNS self-checks of an egress node.")
	o.Identity.BindFlags(fs)
	o.Egress.BindFlags(fs)
}

// StorageDSN is the storage DSN the index uses and where it came from
// ("--storage", "CRAWL_STORAGE" or "default"): --storage when given, else
// $CRAWL_STORAGE (read with getenv), else DefaultStorage.
func (o Options) StorageDSN(getenv func(string) string) (dsn, from string) {
	if o.Storage != "" {
		return o.Storage, "--storage"
	}
	if v := getenv(StorageEnv); v != "" {
		return v, StorageEnv
	}
	return DefaultStorage, "default"
}

// MemoryOutsideGoHeap is the most memory the backend a storage DSN names
// holds outside the Go heap: SQLite's page caches, none for PostgreSQL
// (the server's own memory).
func MemoryOutsideGoHeap(dsn string) int64 {
	if kind, err := CheckStorage(dsn); err == nil && kind == "sqlite" {
		return sqlite.MaxPageCacheBytes
	}
	return 0
}

// Index is the running index.
type Index struct {
	backend *backend.Backend
	syncer  *syncer.Syncer
	checker *fcrdns.Checker
	egress  egress.Policy
	handler http.Handler
	server  *httpserver.Runnable
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
	if opts.BindAddress == "" {
		opts.BindAddress = DefaultBindAddress
	}
	dsn, from := opts.StorageDSN(os.Getenv)
	kind, err := CheckStorage(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	st := backend.New(kind, func(ctx context.Context) (store.Store, error) { return OpenStore(ctx, dsn) })
	ix := &Index{
		backend: st,
		syncer: &syncer.Syncer{
			Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Elected: mgr.Elected(),
			Recorder: mgr.GetEventRecorder("index-sync"),
			Store:    st, Backend: st, Namespaces: opts.Namespaces,
		},
		checker: &fcrdns.Checker{
			Client:   mgr.GetClient(),
			Resolver: verify.ResolverFor(opts.DNSServer),
			Suffix:   opts.Identity.HostnameSuffix,
			Interval: opts.CheckInterval,
			Recorder: mgr.GetEventRecorder("egress-fcrdns"),
			Elected:  mgr.Elected(),
			Selector: opts.Egress.Selector,
		},
	}
	ix.egress = opts.Egress
	ix.egress.Verified = ix.checker.Verified
	ix.egress.Changes = ix.checker.Changes()
	bot := &botpage.Handler{Identity: opts.Identity, Egress: ix.egressSource(mgr.GetClient())}
	pages := &searchui.Handler{Store: st, Targets: crawlTargets(mgr.GetClient())}
	ix.handler = route(&searchapi.Handler{Store: st}, bot, pages)
	ix.server = &httpserver.Runnable{Name: "index", Addr: opts.BindAddress, Handler: ix.handler}

	registerMetrics()
	setup := []func() error{
		func() error { return mgr.Add(st) },
		func() error { return ix.syncer.SetupWithManager(mgr) },
		func() error { return ix.checker.SetupWithManager(mgr) },
		func() error { return mgr.Add(ix.server) },
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

// WriteSite writes a run's document for the SiteIndex key, in step with
// Exclusion purges; it is the results endpoint's Index.
func (ix *Index) WriteSite(ctx context.Context, key client.ObjectKey, doc store.SiteDoc) error {
	return ix.syncer.WriteSite(ctx, key, doc)
}

// Validators lists the pages the backend holds for the SiteIndex key's
// site, with their validators: what the results endpoint hands a crawler
// for its conditional requests.
func (ix *Index) Validators(ctx context.Context, key client.ObjectKey, site string) ([]store.Validators, error) {
	return ix.backend.Validators(ctx, syncer.SourceOf(key.Namespace, key.Name), site)
}

// RemoveSite removes the rows of the SiteIndex key.
func (ix *Index) RemoveSite(ctx context.Context, key client.ObjectKey) error {
	return ix.syncer.RemoveSite(ctx, key)
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

// SyncLag reports how many SiteIndexes still have rows to remove from the
// backend and how long the oldest has waited.
func (ix *Index) SyncLag() (pending int, lag time.Duration) { return ix.syncer.Lag(time.Now()) }

// EgressPolicy is the egress policy with the self-check's results: the
// CrawlTarget reconciler places crawls with it and /bot publishes with it.
func (ix *Index) EgressPolicy() egress.Policy { return ix.egress }

// Handler serves the search API, the HTML pages and the bot pages, as the
// server does.
func (ix *Index) Handler() http.Handler { return ix.handler }

// Close waits for the searches the server was answering when the manager
// stopped (the server drains them after mgr.Start has returned, so they
// do not delay the Lease's hand-over), then closes the backend.
func (ix *Index) Close() error {
	ix.server.Wait()
	return ix.backend.Close()
}

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
	metricsOnce.Do(func() {
		metrics.Registry.MustRegister(backend.Collectors()...)
		metrics.Registry.MustRegister(searchapi.Collectors()...)
	})
}

// redact drops everything after the scheme, which may hold a password.
func redact(dsn string) string {
	if scheme, _, ok := strings.Cut(dsn, "://"); ok {
		return scheme + "://…"
	}
	return "…"
}

// route sends /api/ to the API, /bot to the bot pages and everything else
// to the HTML pages, by prefix only; each checks its exact paths. No
// http.ServeMux: it would redirect, and /bot/ips.json must never redirect.
func route(apiHandler, bot, pages http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, searchapi.Prefix):
			apiHandler.ServeHTTP(w, r)
		case p == botpage.PagePath || strings.HasPrefix(p, botpage.PagePath+"/"):
			bot.ServeHTTP(w, r)
		default:
			pages.ServeHTTP(w, r)
		}
	})
}

// crawlTargets lists the CrawlTargets in the manager's cache for the
// dashboard: the ones the manager watches (with --watch-namespaces, those
// namespaces' only). The dashboard only reads them, so the cache's objects
// are not deep-copied: a page of 100,000 sites costs no copy of them.
func crawlTargets(c client.Reader) searchui.Targets {
	return func(ctx context.Context) ([]searchui.Target, error) {
		var list crawlv1.CrawlTargetList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("list CrawlTargets: %w", err)
		}
		out := make([]searchui.Target, len(list.Items))
		for i := range list.Items {
			out[i] = searchui.TargetOf(&list.Items[i])
		}
		return out, nil
	}
}

// egressSource lists what /bot and /bot/ips.json publish, from the Nodes
// in the manager's cache and the self-check's results.
func (ix *Index) egressSource(c client.Reader) botpage.Source {
	return func(ctx context.Context) ([]egress.Address, error) {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes, client.MatchingLabels(ix.egress.Selector.Labels())); err != nil {
			return nil, fmt.Errorf("list egress Nodes: %w", err)
		}
		return ix.egress.Published(nodes.Items), nil
	}
}
