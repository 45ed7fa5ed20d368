package syncer

import (
	"context"
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

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/controllers"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/sqlite"
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
	s := &Syncer{Client: mgr.GetClient(), Store: st, Namespaces: watched}
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

// createSiteIndex creates a SiteIndex and gives it pages titled as given,
// one per path.
func createSiteIndex(t *testing.T, ns, name, siteURL string, titles map[string]string) *crawlv1.SiteIndex {
	t.Helper()
	si := &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: crawlv1.SiteIndexSpec{Site: siteURL}}
	if err := k8s.Create(context.Background(), si); err != nil {
		t.Fatalf("create SiteIndex %s: %v", name, err)
	}
	setPages(t, si, titles)
	return si
}

func setPages(t *testing.T, si *crawlv1.SiteIndex, titles map[string]string) {
	t.Helper()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	si.Status = crawlv1.SiteIndexStatus{CrawledAt: &now, Complete: true}
	for path, title := range titles {
		si.Status.Pages = append(si.Status.Pages, crawlv1.IndexedPage{URL: origin(si.Spec.Site) + path, StatusCode: 200, Title: title, FetchedAt: &now})
	}
	if err := k8s.Status().Update(context.Background(), si); err != nil {
		t.Fatalf("update SiteIndex %s status: %v", si.Name, err)
	}
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
