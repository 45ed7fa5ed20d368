// Package syncer keeps the search backend consistent with the cluster. The
// results endpoint writes each run's pages through it (WriteSite), in step
// with Exclusion purges; it removes the rows of SiteIndexes that go, and on
// start compares what the backend holds with every SiteIndex in one query,
// writing nothing when they agree.
package syncer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// unavailableRequeue is when a removal that found the backend unreachable
// is tried again without a Backend to say it is back.
const unavailableRequeue = 5 * time.Second

// Availability is what the syncer needs to know of a backend that comes and
// goes (backend.Backend).
type Availability interface {
	// Available reports whether the backend answered its last check.
	Available() bool
	// OnUp registers f to run every time the backend becomes reachable.
	OnUp(f func())
}

// Syncer orders the writes of the index backend. The controller (leader
// only) removes rows whose SiteIndex went, moved to another site or was
// excluded; a removal that fails because the backend is unreachable waits,
// without back-off, until the backend is back and is then queued at once
// with every other such removal.
type Syncer struct {
	// Client reads SiteIndexes and Exclusions (the manager's cached client)
	// and asks for crawls (patches CrawlTargets).
	Client client.Client
	// Live reads Exclusions from the API server. A replica that is not
	// the leader checks them again after each write, because the leader's
	// purges do not take its lock (see WriteSite).
	Live client.Reader
	// Elected is closed once this replica leads; nil means it always does.
	Elected <-chan struct{}
	// Recorder records the crawls the start-up check asks for.
	Recorder events.EventRecorder
	Store    store.Store
	// Backend, when set, says when an unreachable backend is back.
	Backend Availability
	// Namespaces are the namespaces the manager watches (empty: all). The
	// index holds the SiteIndexes of those only: rows of any other
	// namespace (left from before the manager was confined) are removed.
	Namespaces watchns.Namespaces
	// Now is the clock of crawl requests; nil is time.Now.
	Now func() time.Time

	// pending are SiteIndexes whose removal failed, with the time of their
	// first failed attempt.
	pending pendingSet

	// mu makes "check the Exclusions, then write" one step with respect to
	// PurgeDomain. The Exclusion reconciler sees an Exclusion only once it
	// is in the shared cache, so a write that starts after a purge finds
	// the Exclusion and writes nothing, and a write that started before is
	// removed by the purge.
	mu sync.Mutex

	// sweep carries SiteIndexes to the work queue: those whose rows the
	// start-up check found to remove, and those whose removal failed while
	// the backend was unreachable (when it is back).
	sweep chan event.TypedGenericEvent[client.Object]

	// checked is closed once the start-up check has run.
	checked                  chan struct{}
	checkedMake, checkedDone sync.Once

	// stepDown is set once the manager stops this replica's leader
	// runnables, which is before it releases the Lease. A report still
	// being written then may finish after another replica leads and
	// purges without this lock, so it is checked as a standby's is.
	stepDown atomic.Bool
}

// Checked is closed once the start-up check has compared the backend with
// the SiteIndexes and queued what it found.
func (s *Syncer) Checked() <-chan struct{} {
	s.checkedMake.Do(func() { s.checked = make(chan struct{}) })
	return s.checked
}

func (s *Syncer) markChecked() {
	s.Checked()
	s.checkedDone.Do(func() { close(s.checked) })
}

// Reads SiteIndexes and Exclusions through the cache; asks for crawls
// with the requested-at annotation of a CrawlTarget.
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=siteindexes,verbs=list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=exclusions,verbs=list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=crawltargets,verbs=get;patch

// SetupWithManager registers the controller and the start-up check.
func (s *Syncer) SetupWithManager(mgr ctrl.Manager) error {
	s.sweep = make(chan event.TypedGenericEvent[client.Object])
	err := ctrl.NewControllerManagedBy(mgr).
		// The start-up check, not the initial list, decides what a
		// starting manager does; after that, a SiteIndex matters here only
		// when it goes or its site changes (spec.site, the generation):
		// its pages reach the backend through the results endpoint.
		For(&crawlv1.SiteIndex{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		WatchesRawSource(source.Channel(s.sweep, &handler.EnqueueRequestForObject{})).
		Named("index-sync").
		Complete(s)
	if err != nil {
		return fmt.Errorf("set up index syncer: %w", err)
	}
	if s.Backend != nil {
		s.Backend.OnUp(s.retryPending)
	}
	register(s)
	if err := mgr.Add(stepDownOnStop{s}); err != nil {
		return err
	}
	return mgr.Add(&startCheck{syncer: s, cache: mgr.GetCache()})
}

// Reconcile removes the rows a SiteIndex no longer stands for, and keeps
// account of what could not be removed.
func (s *Syncer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	err := s.sync(ctx, req)
	switch {
	case err == nil:
		s.pending.done(req.NamespacedName)
		return ctrl.Result{}, nil
	case ctx.Err() != nil:
		// The manager is stopping; the next start checks everything again.
		return ctrl.Result{}, nil
	}
	// Recorded before asking whether the backend is back, so a backend
	// that comes back meanwhile finds it in the list.
	s.pending.fail(req.NamespacedName, time.Now())
	if errors.Is(err, store.ErrUnavailable) {
		syncFailures.WithLabelValues("unavailable").Inc()
		log.FromContext(ctx).V(1).Info("index backend unavailable; removal waits", "error", err.Error())
		switch {
		case s.Backend == nil:
			return ctrl.Result{RequeueAfter: unavailableRequeue}, nil
		case s.Backend.Available():
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		// retryPending queues it when the backend is back; no back-off.
		return ctrl.Result{}, nil
	}
	syncFailures.WithLabelValues("error").Inc()
	return ctrl.Result{}, err
}

// retryPending queues every SiteIndex whose removal failed; the backend is
// back.
func (s *Syncer) retryPending() {
	for _, key := range s.pending.keys() {
		s.sweep <- event.TypedGenericEvent[client.Object]{
			Object: &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		}
	}
}

// sync removes every row of a SiteIndex that is gone, outside the watched
// namespaces or of an excluded site, and otherwise the rows of sites other
// than its own (spec.url moved). It never removes the rows of the site a
// SiteIndex names, or of that site's https upgrade (site.Covers): the
// results endpoint may have written them an instant ago, before the
// SiteIndex shows the run.
func (s *Syncer) sync(ctx context.Context, req ctrl.Request) error {
	source := SourceOf(req.Namespace, req.Name)
	if !s.Namespaces.Has(req.Namespace) {
		return s.remove(ctx, source, "namespace not watched")
	}
	si := &crawlv1.SiteIndex{}
	err := s.Client.Get(ctx, req.NamespacedName, si)
	if apierrors.IsNotFound(err) || (err == nil && !si.DeletionTimestamp.IsZero()) {
		return s.remove(ctx, source, "SiteIndex deleted")
	}
	if err != nil {
		return fmt.Errorf("get SiteIndex %s: %w", source, err)
	}
	st, err := site.Parse(si.Spec.Site)
	if err != nil {
		// Only a spec.site that fails to parse gets here: nothing of it
		// can be indexed.
		return s.remove(ctx, source, "spec.site invalid")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	domains, err := s.excludedDomains(ctx, s.Client)
	if err != nil {
		return err
	}
	if inAny(st.Host, domains) {
		return s.remove(ctx, source, "site is excluded")
	}
	return s.remove(ctx, source, "site moved", st.Covered()...)
}

// WriteSite makes doc what the backend holds for the SiteIndex key: the
// results endpoint's write of a run. Under the lock PurgeDomain takes, it
// checks the Exclusions in the manager's cache: a covered site fails with
// store.ErrExcluded and writes nothing, and links into excluded domains
// are dropped. On the leader that lock orders it with every purge. A
// replica that is not the leader (the endpoint serves on every replica)
// reads the Exclusions from the API server once more after writing and
// takes back what a purge it could not see removed meanwhile: an Exclusion
// is stored before any purge of it starts, so a purge this write slipped
// past is found by that read.
func (s *Syncer) WriteSite(ctx context.Context, key types.NamespacedName, doc store.SiteDoc) error {
	doc.Source = SourceOf(key.Namespace, key.Name)
	if !s.Namespaces.Has(key.Namespace) {
		return fmt.Errorf("SiteIndex %s is outside the watched namespaces", doc.Source)
	}
	if err := s.write(ctx, doc, s.Client); err != nil {
		return err
	}
	if s.leading() || s.Live == nil {
		return nil
	}
	domains, err := s.excludedDomains(ctx, s.Live)
	if err != nil {
		return err
	}
	if !touches(doc, domains) {
		return nil
	}
	return s.write(ctx, doc, s.Live)
}

// RemoveSite removes every row of the SiteIndex key.
func (s *Syncer) RemoveSite(ctx context.Context, key types.NamespacedName) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remove(ctx, SourceOf(key.Namespace, key.Name), "SiteIndex deleted")
}

// write writes doc less what the Exclusions read through exclusions
// cover, or removes the source when they cover the site.
func (s *Syncer) write(ctx context.Context, doc store.SiteDoc, exclusions client.Reader) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	domains, err := s.excludedDomains(ctx, exclusions)
	if err != nil {
		return err
	}
	if inAny(store.Host(doc.Site), domains) {
		if err := s.remove(ctx, doc.Source, "site is excluded"); err != nil {
			return err
		}
		return fmt.Errorf("SiteIndex %s: %w", doc.Source, store.ErrExcluded)
	}
	doc.Links = linksOutside(doc.Links, domains)
	if err := s.Store.ReplaceSite(ctx, doc); err != nil {
		return fmt.Errorf("index SiteIndex %s: %w", doc.Source, err)
	}
	upserts.Inc()
	return nil
}

// touches reports whether an Exclusion of domains covers doc's site or a
// site it links to.
func touches(doc store.SiteDoc, domains []string) bool {
	return inAny(store.Host(doc.Site), domains) || len(linksOutside(doc.Links, domains)) != len(doc.Links)
}

// stepDownOnStop is a leader runnable that sets stepDown when it is told
// to stop.
type stepDownOnStop struct{ s *Syncer }

func (r stepDownOnStop) Start(ctx context.Context) error {
	<-ctx.Done()
	r.s.stepDown.Store(true)
	return nil
}

func (s *Syncer) leading() bool {
	if s.stepDown.Load() {
		return false
	}
	if s.Elected == nil {
		return true
	}
	select {
	case <-s.Elected:
		return true
	default:
		return false
	}
}

// linksOutside drops links into the domains: their owners asked for their
// pages to be gone from the index, link texts about them included.
func linksOutside(links []store.Link, domains []string) []store.Link {
	var out []store.Link
	for _, l := range links {
		if inAny(site.HostOf(l.URL), domains) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// PurgeDomain removes every row of domain and its subdomains; it is the
// Exclusion reconciler's PagePurger.
func (s *Syncer) PurgeDomain(ctx context.Context, domain string) (store.Removed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Store.PurgeDomain(ctx, domain)
}

func (s *Syncer) remove(ctx context.Context, source, why string, keep ...string) error {
	n, err := s.Store.DeleteSource(ctx, source, keep...)
	if err != nil {
		return fmt.Errorf("remove rows of SiteIndex %s (%s): %w", source, why, err)
	}
	if n > 0 {
		removals.Inc()
		log.FromContext(ctx).Info("removed from the index", "source", source, "pages", n, "reason", why)
	}
	return nil
}

func (s *Syncer) excludedDomains(ctx context.Context, r client.Reader) ([]string, error) {
	var list crawlv1.ExclusionList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Exclusions: %w", err)
	}
	out := make([]string, 0, len(list.Items))
	for _, ex := range list.Items {
		// An Exclusion being deleted is still in force until it is gone.
		out = append(out, ex.Spec.Domain)
	}
	return out, nil
}

func inAny(host string, domains []string) bool {
	for _, d := range domains {
		if site.InDomain(host, d) {
			return true
		}
	}
	return false
}

// SourceOf names the SiteIndex a backend's rows come from.
func SourceOf(namespace, name string) string { return namespace + "/" + name }

func parseSource(src string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(src, "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok && ns != "" && name != ""
}
