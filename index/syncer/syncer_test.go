package syncer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/storetest"
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

func TestResultsAreWrittenAndRemoved(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, false)
	ns := namespace(t)
	before := testutil.Metrics(t, metrics.Registry)
	si := createSiteIndex(t, m, ns, "a", "https://a.example:443", map[string]string{"/": "Otter habitats", "/2": "Otter food"})
	eventually(t, "pages indexed", searchFor(st, "otter", "https://a.example/", "https://a.example/2"))

	deliver(t, m, si, map[string]string{"/": "Walrus habitats"})
	eventually(t, "the next run replaces the last", searchFor(st, "walrus", "https://a.example/"))
	eventually(t, "old pages gone", searchFor(st, "otter"))
	wantHeld(t, st, store.SourceRun{Source: SourceOf(ns, "a"), Site: "https://a.example:443", Run: "a-crawl-2"})

	if err := k8s.Delete(ctx, si); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rows of a deleted SiteIndex removed", hostGone(st, "a.example"))

	after := testutil.Metrics(t, metrics.Registry)
	if n := after["crawl_operator_index_sync_upserts_total"] - before["crawl_operator_index_sync_upserts_total"]; n != 2 {
		t.Errorf("crawl_operator_index_sync_upserts_total grew by %v, want 2", n)
	}
	if n := after["crawl_operator_index_sync_removals_total"] - before["crawl_operator_index_sync_removals_total"]; n != 1 {
		t.Errorf("crawl_operator_index_sync_removals_total grew by %v, want 1", n)
	}
	if after["crawl_operator_index_sync_pending"] != 0 || after["crawl_operator_index_sync_lag_seconds"] != 0 {
		t.Errorf("pending %v, lag %v with the backend up to date", after["crawl_operator_index_sync_pending"], after["crawl_operator_index_sync_lag_seconds"])
	}
}

// A SiteIndex whose target moved to another site loses the old site's
// rows; the new site's rows, which the endpoint may write before the
// SiteIndex shows the new run, stay.
func TestMovedSiteLosesOnlyTheOldRows(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, false)
	ns := namespace(t)
	si := createSiteIndex(t, m, ns, "a", "https://old.example:443", map[string]string{"/": "Grebe"})
	eventually(t, "indexed", searchFor(st, "grebe", "https://old.example/"))

	// The new site's first result is in the backend beside the old rows
	// (ReplaceSite would drop the old site itself, so it goes in directly).
	if _, err := storetest.DB(t, st).ExecContext(ctx,
		"INSERT INTO sites (site, host, source, crawled_at, run) VALUES ('https://new.example:443', 'new.example', ?, NULL, 'a-crawl-9')",
		SourceOf(ns, "a")); err != nil {
		t.Fatal(err)
	}
	si.Spec.Site = "https://new.example:443"
	if err := k8s.Update(ctx, si); err != nil {
		t.Fatal(err)
	}
	eventually(t, "old site's rows removed", hostGone(st, "old.example"))
	consistently(t, "the new site's row stays", time.Second, func() error {
		return wantHeldErr(st, store.SourceRun{Source: SourceOf(ns, "a"), Site: "https://new.example:443", Run: "a-crawl-9"})
	})
}

// A target on http://h/ whose site upgrades to https has its pages on
// https://h: those rows are the SiteIndex's own, even before its status
// says so (the results endpoint writes the backend first), and are kept.
func TestUpgradedSiteKeepsItsRows(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, false)
	ns := namespace(t)
	si := createSiteIndex(t, m, ns, "a", "http://up.example:80", map[string]string{"/": "Heron"})
	eventually(t, "indexed", searchFor(st, "heron", "http://up.example/"))
	replace := func(siteURL, run string) {
		t.Helper()
		if _, err := storetest.DB(t, st).ExecContext(ctx, "DELETE FROM sites WHERE source = ?", SourceOf(ns, "a")); err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.DB(t, st).ExecContext(ctx,
			"INSERT INTO sites (site, host, source, crawled_at, run) VALUES (?, 'up.example', ?, NULL, ?)", siteURL, SourceOf(ns, "a"), run); err != nil {
			t.Fatal(err)
		}
	}
	// The syncer looks at a SiteIndex whose spec changed: spec.site
	// written another way is the same site, and a new generation.
	respell := func(siteURL string) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"site":"`+siteURL+`"}}`))
		if err := k8s.Patch(ctx, si, patch); err != nil {
			t.Fatal(err)
		}
	}
	replace("https://up.example:443", "a-crawl-2")
	respell("HTTP://UP.example")
	consistently(t, "the https rows stay", time.Second, func() error {
		return wantHeldErr(st, store.SourceRun{Source: SourceOf(ns, "a"), Site: "https://up.example:443", Run: "a-crawl-2"})
	})
	// Another port is another site: its rows go.
	replace("https://up.example:8443", "a-crawl-3")
	respell("http://up.example:80")
	eventually(t, "the other port's rows removed", func() error { return wantHeldErr(st) })
}

// A restart with nothing changed writes nothing: the backend's files stay
// byte for byte the same size (SQLite file; PostgreSQL relations).
func TestRestartWithNothingChangedWritesNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ns := namespace(t)
			st := b.open(t)
			m := startManager(t, st, false, ns)
			var docs []store.SiteDoc
			for i := range 30 {
				si := createSiteIndex(t, m, ns, fmt.Sprintf("s%02d", i), fmt.Sprintf("https://s%02d.example:443", i),
					map[string]string{"/": fmt.Sprintf("Kittiwake %d", i), "/2": "Razorbill"})
				docs = append(docs, store.SiteDoc{Source: SourceOf(ns, si.Name), Site: si.Spec.Site, Run: si.Status.Run,
					Pages: []store.Page{{URL: origin(si.Spec.Site) + "/", Title: "Kittiwake"}}})
			}
			m.stop()
			st = b.reopen(t, st)
			before, beforeWritten := b.size(t, st), b.written(t, st)

			before2 := testutil.Metrics(t, metrics.Registry)
			m = startManager(t, st, false, ns)
			waitChecked(t, m)
			time.Sleep(time.Second) // anything the check queued has run
			m.stop()
			st = b.reopen(t, st)
			if after := b.size(t, st); after != before {
				t.Errorf("backend size %d bytes after a restart with nothing changed, %d before", after, before)
			}
			if b.written(t, st) != beforeWritten {
				t.Error("a restart with nothing changed wrote to the backend")
			}
			after2 := testutil.Metrics(t, metrics.Registry)
			for _, name := range []string{"crawl_operator_index_sync_upserts_total", "crawl_operator_index_sync_removals_total", "crawl_operator_index_reindex_requests_total"} {
				if n := after2[name] - before2[name]; n != 0 {
					t.Errorf("%s grew by %v on a restart with nothing changed", name, n)
				}
			}
			wantSearch(t, st, "razorbill", 30)

			// The measure sees writes: writing the same sites again (what a
			// start did before) shows.
			for _, d := range docs {
				if err := st.ReplaceSite(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			st = b.reopen(t, st)
			if b.written(t, st) == beforeWritten {
				t.Error("writing 30 sites again left no trace: the check sees nothing")
			}
		})
	}
}

// A restart finds what changed while no manager ran: rows of a deleted
// SiteIndex and of a site its target left go; a SiteIndex whose last crawl
// the backend lost (emptied, restored from an older backup) gets a crawl
// asked for, once, since its texts are in the backend only.
func TestRestartRemovesGoneRowsAndAsksForLostCrawls(t *testing.T) {
	st := openStore(t)
	ns := namespace(t)
	m := startManager(t, st, false, ns)
	names := []string{"keep", "gone", "lost", "older", "moved", "pending"}
	sis := map[string]*crawlv1.SiteIndex{}
	for _, name := range names {
		ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: crawlv1.CrawlTargetSpec{URL: "https://" + name + ".example/"}}
		if err := k8s.Create(ctx, ct); err != nil {
			t.Fatal(err)
		}
		sis[name] = createSiteIndex(t, m, ns, name, "https://"+name+".example:443", map[string]string{"/": "Heron"})
	}
	// older: the backup the backend is restored from holds its first run.
	deliver(t, m, sis["older"], map[string]string{"/": "Heron", "/2": "Egret"})
	m.stop()

	if err := k8s.Delete(ctx, sis["gone"]); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteSource(ctx, SourceOf(ns, "lost")); err != nil {
		t.Fatal(err)
	}
	if err := st.ReplaceSite(ctx, store.SiteDoc{Source: SourceOf(ns, "older"), Site: "https://older.example:443", Run: "older-crawl-1",
		Pages: []store.Page{{URL: "https://older.example/", Title: "Heron"}}}); err != nil {
		t.Fatal(err)
	}
	// moved: its target's spec.url changed; the reconciler moves the
	// SiteIndex and empties it.
	sis["moved"].Spec.Site = "https://elsewhere.example:443"
	if err := k8s.Update(ctx, sis["moved"]); err != nil {
		t.Fatal(err)
	}
	sis["moved"].Status = crawlv1.SiteIndexStatus{}
	if err := k8s.Status().Update(ctx, sis["moved"]); err != nil {
		t.Fatal(err)
	}
	// pending already has a crawl asked for by a person: left alone.
	pending := &crawlv1.CrawlTarget{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pending"}, pending); err != nil {
		t.Fatal(err)
	}
	pending.Annotations = map[string]string{crawlv1.RequestedAtAnnotation: "by-hand"}
	if err := k8s.Update(ctx, pending); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteSource(ctx, SourceOf(ns, "pending")); err != nil {
		t.Fatal(err)
	}

	before := testutil.Metrics(t, metrics.Registry)
	m = startManager(t, st, false, ns)
	waitChecked(t, m)
	eventually(t, "rows of the deleted SiteIndex removed", hostGone(st, "gone.example"))
	eventually(t, "rows of the site the target left removed", hostGone(st, "moved.example"))
	eventually(t, "searchable as before", searchFor(st, "heron", "https://keep.example/", "https://older.example/"))
	for name, want := range map[string]bool{"keep": false, "lost": true, "older": true, "moved": false, "pending": false} {
		ct := &crawlv1.CrawlTarget{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ct); err != nil {
			t.Fatal(err)
		}
		v := ct.Annotations[crawlv1.RequestedAtAnnotation]
		if got := strings.HasPrefix(v, ReindexRequestPrefix); got != want {
			t.Errorf("CrawlTarget %s: requested-at %q, want a reindex request: %v", name, v, want)
		}
	}
	after := testutil.Metrics(t, metrics.Registry)
	if n := after["crawl_operator_index_reindex_requests_total"] - before["crawl_operator_index_reindex_requests_total"]; n != 2 {
		t.Errorf("crawl_operator_index_reindex_requests_total grew by %v, want 2", n)
	}
}

// An Exclusion purges its domain and subdomains from the backend and
// counts the pages; the SiteIndexes are emptied too.
func TestExclusionPurgesDomainAndSubdomains(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, true)
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
		createSiteIndex(t, m, ns, name, s.url, s.pages)
	}
	eventually(t, "indexed", searchFor(st, "gannet", origin(sites["apex"].url)+"/", origin(sites["apex"].url)+"/2", origin(sites["sub"].url)+"/", origin(sites["lookalike"].url)+"/"))

	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "ex-"},
		Spec: crawlv1.ExclusionSpec{Domain: domain, Description: "owner asked by email"}}
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
		if len(si.Status.Pages) != 0 || si.Status.Run != "" || si.Status.Stats.Pages != 0 {
			t.Errorf("SiteIndex %s not emptied: %d pages, status %+v", name, len(si.Status.Pages), si.Status)
		}
	}
}

// After a purge, a result of the excluded site is refused and writes
// nothing, and other sites' links into the domain lose their texts. Once
// the Exclusion is gone, results are taken again.
func TestExcludedSiteIsNeverWrittenBack(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, false) // the test purges, as the Exclusion reconciler would
	ns := namespace(t)
	domain := uniqueDomain()
	si := createSiteIndex(t, m, ns, "a", "https://www."+domain+":443", map[string]string{"/": "Shearwater"})
	other := &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}, Spec: crawlv1.SiteIndexSpec{Site: "https://other.example:443"}}
	if err := k8s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	link := store.SiteDoc{Site: "https://other.example:443", Run: "b-crawl-1",
		Pages: []store.Page{{URL: "https://other.example/", Title: "Fulmar"}},
		Links: []store.Link{{URL: "https://www." + domain + "/", Anchors: []string{"petrel"}}}}
	if err := m.syncer.WriteSite(ctx, client.ObjectKeyFromObject(other), link); err != nil {
		t.Fatal(err)
	}
	eventually(t, "indexed with the link text", searchFor(st, "petrel", "https://www."+domain+"/"))

	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "ex-"},
		Spec: crawlv1.ExclusionSpec{Domain: domain, Description: "test"}}
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
	// A late result of the excluded site, and the other site's next run
	// still linking into the domain.
	if err := tryDeliver(m, si, map[string]string{"/": "Shearwater", "/2": "Shearwater two"}); !errors.Is(err, store.ErrExcluded) {
		t.Errorf("result of an excluded site: %v, want store.ErrExcluded", err)
	}
	link.Pages[0].Title = "Fulmar again"
	if err := m.syncer.WriteSite(ctx, client.ObjectKeyFromObject(other), link); err != nil {
		t.Fatal(err)
	}
	if err := searchFor(st, "fulmar", "https://other.example/")(); err != nil {
		t.Error(err)
	}
	if err := hostGone(st, "www."+domain)(); err != nil {
		t.Error(err)
	}
	if err := searchFor(st, "shearwater")(); err != nil {
		t.Error(err)
	}
	if got := linkTexts(t, st); len(got) != 0 {
		t.Errorf("link texts into the excluded domain stored: %q", got)
	}

	if err := k8s.Delete(ctx, ex); err != nil {
		t.Fatal(err)
	}
	eventually(t, "results taken once the Exclusion is gone", func() error {
		return tryDeliver(m, si, map[string]string{"/": "Shearwater", "/2": "Shearwater two"})
	})
	eventually(t, "rows back", searchFor(st, "shearwater", "https://www."+domain+"/", "https://www."+domain+"/2"))
}

// The results endpoint serves on every replica, but only the leader's
// purges take the syncer's lock. A replica that is not the leader, whose
// cache has not seen an Exclusion yet, reads the Exclusions again from the
// API server after its write and takes the write back.
func TestWriteOnANonLeaderChecksExclusionsLive(t *testing.T) {
	st := openStore(t)
	ns := namespace(t)
	domain := uniqueDomain()
	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "ex-"},
		Spec: crawlv1.ExclusionSpec{Domain: domain, Description: "test"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k8s.Delete(ctx, ex) })
	doc := store.SiteDoc{Site: "https://" + domain + ":443", Run: "a-crawl-1",
		Pages: []store.Page{{URL: "https://" + domain + "/", Title: "Skua"}}}
	other := store.SiteDoc{Site: "https://fine.example:443", Run: "b-crawl-1",
		Pages: []store.Page{{URL: "https://fine.example/", Title: "Tern"}},
		Links: []store.Link{{URL: "https://" + domain + "/x", Anchors: []string{"jaeger"}}}}

	behind := exclusionsUnseen{k8s}
	notLeading := make(chan struct{})
	follower := &Syncer{Client: behind, Live: k8s, Elected: notLeading, Store: st}
	if err := follower.WriteSite(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, doc); !errors.Is(err, store.ErrExcluded) {
		t.Errorf("WriteSite of an excluded site on a non-leader = %v, want store.ErrExcluded", err)
	}
	if err := follower.WriteSite(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, other); err != nil {
		t.Fatal(err)
	}
	if err := hostGone(st, domain)(); err != nil {
		t.Error(err)
	}
	if err := searchFor(st, "tern", "https://fine.example/")(); err != nil {
		t.Error(err)
	}
	if got := linkTexts(t, st); len(got) != 0 {
		t.Errorf("link texts into the excluded domain stored: %q", got)
	}

	// The control: with the same stale view, the leader relies on its
	// lock and its cache (the purge follows once the cache has it).
	leading := make(chan struct{})
	close(leading)
	leader := &Syncer{Client: behind, Live: k8s, Elected: leading, Store: st}
	if err := leader.WriteSite(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, doc); err != nil {
		t.Fatal(err)
	}
	if err := searchFor(st, "skua", "https://"+domain+"/")(); err != nil {
		t.Errorf("the control wrote nothing: %v", err)
	}
}

// exclusionsUnseen is a client whose view lacks every Exclusion: a cache
// that has not caught up.
type exclusionsUnseen struct{ client.Client }

func (c exclusionsUnseen) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*crawlv1.ExclusionList); ok {
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}

// In namespaced mode the index holds the watched namespaces' SiteIndexes
// only: rows written from another namespace (before the manager was
// confined) are removed at start, and an Exclusion counts such rows as
// purged instead of failing on a namespace it may not read.
func TestNamespacedModeIndexesWatchedNamespacesOnly(t *testing.T) {
	st := openStore(t)
	m := startManager(t, st, false)
	in, out := namespace(t), namespace(t)
	createSiteIndex(t, m, in, "a", "https://in.example:443", map[string]string{"/": "Puffin"})
	createSiteIndex(t, m, out, "b", "https://out.example:443", map[string]string{"/": "Puffin"})
	eventually(t, "both indexed", searchFor(st, "puffin", "https://in.example/", "https://out.example/"))
	m.stop()

	m = startManager(t, st, true, in)
	eventually(t, "the unwatched namespace's rows removed", searchFor(st, "puffin", "https://in.example/"))
	if err := m.syncer.WriteSite(ctx, client.ObjectKey{Namespace: out, Name: "b"}, store.SiteDoc{Site: "https://out.example:443"}); err == nil {
		t.Error("a result for an unwatched namespace was written")
	}

	// Rows of an unwatched namespace that arrive later (another writer of
	// the same backend) and fall under an Exclusion.
	domain := uniqueDomain()
	doc := store.SiteDoc{Source: SourceOf(out, "late"), Site: "https://" + domain + ":443", CrawledAt: time.Now(),
		Pages: []store.Page{{URL: "https://" + domain + "/", StatusCode: 200, Title: "Guillemot", FetchedAt: time.Now()}}}
	if err := st.ReplaceSite(ctx, doc); err != nil {
		t.Fatal(err)
	}
	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "ex-"},
		Spec: crawlv1.ExclusionSpec{Domain: domain, Description: "test"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k8s.Delete(ctx, ex) })
	eventually(t, "Exclusion enforced, the unwatched rows counted", testutil.ExclusionReady(k8s, ex, -1, 1))
	eventually(t, "excluded rows gone", hostGone(st, domain))
}

func waitChecked(t *testing.T, m *manager) {
	t.Helper()
	select {
	case <-m.syncer.Checked():
	case <-time.After(30 * time.Second):
		t.Fatal("the start-up check did not run within 30 s")
	}
	// The gauge describes the latest syncer set up, which is m's.
	if v := testutil.Metrics(t, metrics.Registry)["crawl_operator_index_start_checked"]; v != 1 {
		t.Errorf("crawl_operator_index_start_checked = %v after the start-up check, want 1", v)
	}
}

func wantHeld(t *testing.T, st store.Store, want ...store.SourceRun) {
	t.Helper()
	if err := wantHeldErr(st, want...); err != nil {
		t.Error(err)
	}
}

func wantHeldErr(st store.Store, want ...store.SourceRun) error {
	got, err := st.Sources(ctx)
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("backend holds %+v, want %+v", got, want)
	}
	return nil
}

func wantSearch(t *testing.T, st store.Store, q string, n int) {
	t.Helper()
	res, err := st.Search(ctx, q, store.MaxLimit)
	if err != nil || len(res) != n {
		t.Errorf("search %q: %d results, %v; want %d", q, len(res), err, n)
	}
}

// linkTexts reads every link text the backend holds.
func linkTexts(t *testing.T, st store.Store) []string {
	t.Helper()
	rows, err := storetest.DB(t, st).QueryContext(ctx, "SELECT anchor FROM links")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}
