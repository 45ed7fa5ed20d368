package syncer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

var ctx = context.Background()

// searchFor returns an eventually-check that q finds exactly want.
func searchFor(st store.Store, q string, want ...string) func() error {
	return func() error {
		res, err := st.Search(ctx, q, store.MaxLimit)
		if err != nil {
			return err
		}
		var got []string
		for _, r := range res {
			got = append(got, r.URL)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("search %q = %q, want %q", q, got, want)
		}
		return nil
	}
}

// hostGone returns an eventually-check that host has no rows.
func hostGone(st store.Store, host string) func() error {
	return func() error {
		ps, err := st.Pages(ctx, host)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("host %s still has %d pages (err %v)", host, len(ps), err)
	}
}

// uniqueDomain returns a domain no other test uses: Exclusions are
// cluster-wide.
func uniqueDomain() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "d" + hex.EncodeToString(b) + ".example"
}

func TestStatusChangesAreIndexed(t *testing.T) {
	st := openStore(t)
	startManager(t, st, false)
	ns := namespace(t)
	before := testutil.Metrics(t, metrics.Registry)
	si := createSiteIndex(t, ns, "a", "https://a.example:443", map[string]string{"/": "Otter habitats", "/2": "Otter food"})
	eventually(t, "pages indexed", searchFor(st, "otter", "https://a.example/", "https://a.example/2"))

	setPages(t, si, map[string]string{"/": "Walrus habitats"})
	eventually(t, "new status replaces the old", searchFor(st, "walrus", "https://a.example/"))
	eventually(t, "old pages gone", searchFor(st, "otter"))

	if err := k8s.Delete(ctx, si); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rows of a deleted SiteIndex removed", hostGone(st, "a.example"))

	// Every manager here indexes every SiteIndex of the shared API server,
	// so other tests' SiteIndexes may be written too: at least this one's
	// two states. Only this one had rows to remove in this fresh store.
	after := testutil.Metrics(t, metrics.Registry)
	if n := after["crawl_operator_index_sync_upserts_total"] - before["crawl_operator_index_sync_upserts_total"]; n < 2 {
		t.Errorf("crawl_operator_index_sync_upserts_total grew by %v, want at least 2", n)
	}
	if n := after["crawl_operator_index_sync_removals_total"] - before["crawl_operator_index_sync_removals_total"]; n != 1 {
		t.Errorf("crawl_operator_index_sync_removals_total grew by %v, want 1", n)
	}
	if after["crawl_operator_index_sync_pending"] != 0 || after["crawl_operator_index_sync_lag_seconds"] != 0 {
		t.Errorf("pending %v, lag %v with the backend up to date", after["crawl_operator_index_sync_pending"], after["crawl_operator_index_sync_lag_seconds"])
	}
}

func TestRestartResyncs(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, false)
	ns := namespace(t)
	keep := createSiteIndex(t, ns, "keep", "https://keep.example:443", map[string]string{"/": "Heron"})
	gone := createSiteIndex(t, ns, "gone", "https://gone.example:443", map[string]string{"/": "Heron"})
	eventually(t, "indexed", searchFor(st, "heron", "https://keep.example/", "https://gone.example/"))
	m.stop()

	// While no manager runs: one SiteIndex goes, one changes, one arrives.
	if err := k8s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	setPages(t, keep, map[string]string{"/": "Egret"})
	createSiteIndex(t, ns, "new", "https://new.example:443", map[string]string{"/": "Egret"})
	if err := searchFor(st, "heron", "https://keep.example/", "https://gone.example/")(); err != nil {
		t.Fatalf("backend changed without a manager: %v", err)
	}

	startManager(t, st, false)
	eventually(t, "resync after restart", searchFor(st, "egret", "https://keep.example/", "https://new.example/"))
	eventually(t, "rows of the SiteIndex deleted while down removed", hostGone(st, "gone.example"))
	eventually(t, "stale rows replaced", searchFor(st, "heron"))
}

// An Exclusion purges its domain and subdomains from the backend and
// counts the pages; the SiteIndexes are emptied too.
func TestExclusionPurgesDomainAndSubdomains(t *testing.T) {
	st := openStore(t)
	startManager(t, st, true)
	ns := namespace(t)
	domain := uniqueDomain()
	sites := map[string]struct {
		url   string
		pages map[string]string
	}{
		"apex":      {"https://" + domain + ":443", map[string]string{"/": "Gannet", "/2": "Gannet two"}},
		"sub":       {"http://www." + domain + ":80", map[string]string{"/": "Gannet"}},
		"lookalike": {"https://not" + domain + ":443", map[string]string{"/": "Gannet"}},
	}
	for name, s := range sites {
		ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: crawlv1.CrawlTargetSpec{URL: s.url + "/"}}
		if err := k8s.Create(ctx, ct); err != nil {
			t.Fatal(err)
		}
		createSiteIndex(t, ns, name, s.url, s.pages)
	}
	eventually(t, "indexed", searchFor(st, "gannet", origin(sites["apex"].url)+"/", origin(sites["apex"].url)+"/2", origin(sites["sub"].url)+"/", origin(sites["lookalike"].url)+"/"))

	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "ex-"},
		Spec: crawlv1.ExclusionSpec{Domain: domain, Reason: "owner asked by email"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k8s.Delete(ctx, ex) })
	eventually(t, "Exclusion enforced", func() error {
		got := &crawlv1.Exclusion{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, crawlv1.ConditionReady) {
			return fmt.Errorf("not Ready: %+v", got.Status)
		}
		if got.Status.PurgedPages != 3 {
			return fmt.Errorf("purgedPages = %d, want 3", got.Status.PurgedPages)
		}
		return nil
	})
	eventually(t, "apex rows gone", hostGone(st, domain))
	eventually(t, "subdomain rows gone", hostGone(st, "www."+domain))
	eventually(t, "only the lookalike left", searchFor(st, "gannet", origin(sites["lookalike"].url)+"/"))
	for _, name := range []string{"apex", "sub"} {
		si := &crawlv1.SiteIndex{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, si); err != nil {
			t.Fatal(err)
		}
		if len(si.Status.Pages) != 0 {
			t.Errorf("SiteIndex %s still has %d pages", name, len(si.Status.Pages))
		}
	}
}

// The Exclusion reconciler may purge while an older version of a SiteIndex
// is still queued for the syncer: that version must not bring the rows back.
// Removing the Exclusion lets them back in.
func TestExcludedSiteIsNeverWrittenBack(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, false) // the test purges, as the Exclusion reconciler would
	ns := namespace(t)
	domain := uniqueDomain()
	si := createSiteIndex(t, ns, "a", "https://www."+domain+":443", map[string]string{"/": "Shearwater"})
	other := createSiteIndex(t, ns, "b", "https://other.example:443", map[string]string{"/": "Fulmar"})
	other.Status.OffSiteLinks = []crawlv1.OffSiteLink{{URL: "https://www." + domain + "/", Anchors: []string{"petrel"}}}
	if err := k8s.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	eventually(t, "indexed with the link text", searchFor(st, "petrel", "https://www."+domain+"/"))

	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "ex-"},
		Spec: crawlv1.ExclusionSpec{Domain: domain, Reason: "test"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	// The purge runs once the Exclusion is in the manager's cache, as it
	// does in the Exclusion reconciler.
	eventually(t, "Exclusion in the cache", func() error {
		return m.syncer.Client.Get(ctx, client.ObjectKeyFromObject(ex), &crawlv1.Exclusion{})
	})
	if n, err := m.syncer.PurgeDomain(ctx, domain); err != nil || n.Total() != 1 {
		t.Fatalf("PurgeDomain = %v, %v; want 1 page", n, err)
	}
	// The stale crawl result arrives: the SiteIndex still has pages.
	setPages(t, si, map[string]string{"/": "Shearwater", "/2": "Shearwater two"})
	setPages(t, other, map[string]string{"/": "Fulmar again"})
	eventually(t, "other site synced", searchFor(st, "fulmar", "https://other.example/"))
	consistently(t, "excluded site stays out", 2*time.Second, func() error {
		if err := hostGone(st, "www."+domain)(); err != nil {
			return err
		}
		return searchFor(st, "shearwater")()
	})

	if err := k8s.Delete(ctx, ex); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rows back once the Exclusion is gone", searchFor(st, "shearwater", "https://www."+domain+"/", "https://www."+domain+"/2"))
}

// In namespaced mode the index holds the watched namespaces' SiteIndexes
// only: rows written from another namespace (before the manager was
// confined) are removed at start, and an Exclusion counts such rows as
// purged instead of failing on a namespace it may not read.
func TestNamespacedModeIndexesWatchedNamespacesOnly(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, false)
	in, out := namespace(t), namespace(t)
	createSiteIndex(t, in, "a", "https://in.example:443", map[string]string{"/": "Puffin"})
	createSiteIndex(t, out, "b", "https://out.example:443", map[string]string{"/": "Puffin"})
	eventually(t, "both indexed", searchFor(st, "puffin", "https://in.example/", "https://out.example/"))
	m.stop()

	startManager(t, st, true, in)
	eventually(t, "the unwatched namespace's rows removed", searchFor(st, "puffin", "https://in.example/"))

	// Rows of an unwatched namespace that arrive later (another writer of
	// the same backend) and fall under an Exclusion.
	domain := uniqueDomain()
	doc := store.SiteDoc{Source: SourceOf(out, "late"), Site: "https://" + domain + ":443", CrawledAt: time.Now(),
		Pages: []store.Page{{URL: "https://" + domain + "/", StatusCode: 200, Title: "Guillemot", FetchedAt: time.Now()}}}
	if err := st.ReplaceSite(ctx, doc); err != nil {
		t.Fatal(err)
	}
	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "ex-"},
		Spec: crawlv1.ExclusionSpec{Domain: domain, Reason: "test"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k8s.Delete(ctx, ex) })
	eventually(t, "Exclusion enforced, the unwatched rows counted", testutil.ExclusionReady(k8s, ex, -1, 1))
	eventually(t, "excluded rows gone", hostGone(st, domain))
}
