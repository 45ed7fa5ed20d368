package syncer

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/controllers"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/postgres"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/index/store/sqlite"
	"github.com/lohisoft/crawl-operator/index/store/storetest"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// The suite runs one kube-apiserver and etcd (envtest) and, per test,
// managers with the syncer over a SQLite store in the test's temporary
// directory.
var (
	restConfig *rest.Config
	k8s        client.Client
	scheme     = testenv.Scheme
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, filepath.Join("..", ".."), &restConfig, &k8s))
}

// manager is one running manager with the syncer and, when asked, the
// Exclusion reconciler purging through it. Unlike the other suites it does
// not run internal/operator's wiring (which imports this package): it
// tests the syncer against the stores it hands in, failing ones included.
// The index and controllers suites run the syncer as the operator wires it.
type manager struct {
	syncer *Syncer
	stop   func()
}

// startManager starts a manager watching namespaces (none: all).
func startManager(t *testing.T, st store.Store, withExclusions bool, namespaces ...string) *manager {
	t.Helper()
	watched := watchns.Namespaces(namespaces)
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:     scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{DefaultNamespaces: watched.Cache()},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &Syncer{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("index-sync"), Store: st, Namespaces: watched}
	if err := s.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if withExclusions {
		if err := (&controllers.ExclusionReconciler{
			Client:     mgr.GetClient(),
			APIReader:  mgr.GetAPIReader(),
			Recorder:   mgr.GetEventRecorder("exclusion-controller"),
			Purger:     s,
			Namespaces: watched,
		}).SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	m := &manager{syncer: s, stop: func() { cancel(); <-done }}
	t.Cleanup(m.stop)
	// Tests call the syncer directly, and its cached reads fail with "the
	// cache is not started" until the manager has started it (a race lost
	// on a loaded machine).
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("the manager's cache did not start within a minute")
	}
	return m
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sync-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// createSiteIndex creates a SiteIndex and delivers a first run with pages
// titled as given, one per path.
func createSiteIndex(t *testing.T, m *manager, ns, name, siteURL string, titles map[string]string) *crawlv1.SiteIndex {
	t.Helper()
	si := &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: crawlv1.SiteIndexSpec{Site: siteURL}}
	if err := k8s.Create(context.Background(), si); err != nil {
		t.Fatalf("create SiteIndex %s: %v", name, err)
	}
	deliver(t, m, si, titles)
	return si
}

// deliver does what the results endpoint does with a run's final result:
// it writes the pages through the syncer, then the SiteIndex's compact
// status with the next run's name.
func deliver(t *testing.T, m *manager, si *crawlv1.SiteIndex, titles map[string]string) {
	t.Helper()
	if err := tryDeliver(m, si, titles); err != nil {
		t.Fatalf("deliver a run of %s: %v", si.Name, err)
	}
}

func tryDeliver(m *manager, si *crawlv1.SiteIndex, titles map[string]string) error {
	ctx := context.Background()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	runs := 1
	if r := si.Status.Run; r != "" {
		fmt.Sscanf(r[strings.LastIndex(r, "-")+1:], "%d", &runs)
		runs++
	}
	run := fmt.Sprintf("%s-crawl-%d", si.Name, runs)
	doc := store.SiteDoc{Site: si.Spec.Site, Run: run, CrawledAt: now.Time}
	status := crawlv1.SiteIndexStatus{Run: run, CrawlTime: &now, Complete: true, Stats: crawlv1.IndexStats{Pages: int32(len(titles))}}
	for path, title := range titles {
		doc.Pages = append(doc.Pages, store.Page{URL: origin(si.Spec.Site) + path, StatusCode: 200, Title: title, FetchedAt: now.Time})
		status.Pages = append(status.Pages, crawlv1.IndexedPage{URL: path, StatusCode: 200, Title: title, FetchTime: &now})
	}
	if err := m.syncer.WriteSite(ctx, client.ObjectKeyFromObject(si), doc); err != nil {
		return err
	}
	si.Status = status
	return k8s.Status().Update(ctx, si)
}

// testBackend opens, reopens and measures one kind of backend.
type testBackend struct {
	name string
	open func(t *testing.T) store.Store
	// reopen closes st (SQLite checkpoints its log into the file) and
	// opens the same database again.
	reopen func(t *testing.T, st store.Store) store.Store
	// size is the bytes the backend's tables take on disk.
	size func(t *testing.T, st store.Store) int64
	// written changes whenever anything is written: SQLite's file bytes,
	// PostgreSQL's row versions (xmin, ctid) of every table.
	written func(t *testing.T, st store.Store) string
}

// backends are SQLite and PostgreSQL (pgtest skips or fails the latter
// without a server).
func backends(t *testing.T) []testBackend {
	sqliteAt := map[store.Store]string{}
	pgAt := map[store.Store]string{}
	openPG := func(t *testing.T, dsn string) store.Store {
		st, err := postgres.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		pgAt[st] = dsn
		return st
	}
	openSQLite := func(t *testing.T, path string) store.Store {
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		sqliteAt[st] = path
		return st
	}
	return []testBackend{{
		name: "sqlite",
		open: func(t *testing.T) store.Store { return openSQLite(t, filepath.Join(t.TempDir(), "index.db")) },
		reopen: func(t *testing.T, st store.Store) store.Store {
			st.Close()
			return openSQLite(t, sqliteAt[st])
		},
		size: func(t *testing.T, st store.Store) int64 {
			var n int64
			for _, suffix := range []string{"", "-wal"} {
				if fi, err := os.Stat(sqliteAt[st] + suffix); err == nil {
					n += fi.Size()
				}
			}
			return n
		},
		written: func(t *testing.T, st store.Store) string {
			b, err := os.ReadFile(sqliteAt[st])
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%x", sha256.Sum256(b))
		},
	}, {
		name: "postgres",
		open: func(t *testing.T) store.Store { return openPG(t, pgtest.Schema(t)) },
		reopen: func(t *testing.T, st store.Store) store.Store {
			st.Close()
			return openPG(t, pgAt[st])
		},
		size: func(t *testing.T, st store.Store) int64 {
			var n int64
			if err := storetest.DB(t, st).QueryRowContext(context.Background(), `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)
				FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
		written: func(t *testing.T, st store.Store) string {
			var out string
			for _, table := range []string{"sites", "pages", "links"} {
				var v sql.NullString
				if err := storetest.DB(t, st).QueryRowContext(context.Background(),
					"SELECT string_agg(xmin::text || ctid::text, ',' ORDER BY ctid) FROM "+table).Scan(&v); err != nil {
					t.Fatal(err)
				}
				out += table + ":" + v.String + ";"
			}
			return out
		},
	}}
}

// eventually retries check for up to 30 s.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, what, check)
}

// consistently fails when check fails within d.
func consistently(t *testing.T, what string, d time.Duration, check func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// origin is the URL prefix of pages of a test site (default ports only).
func origin(siteURL string) string {
	return strings.TrimSuffix(strings.TrimSuffix(siteURL, ":443"), ":80")
}
