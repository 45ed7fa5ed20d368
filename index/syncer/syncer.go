// Package syncer keeps the search backend in step with the SiteIndexes of
// the cluster: every status change is written, a deleted SiteIndex takes
// its rows with it, and on start every SiteIndex is written again and rows
// of SiteIndexes that went while the manager was down are removed.
package syncer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// sweepRetry is the pause between attempts of the start-up sweep while the
// backend is unreachable; a Backend fails fast meanwhile, so this costs
// nothing.
const sweepRetry = 2 * time.Second

// unavailableRequeue is when a write that found the backend unreachable is
// tried again without a Backend to say it is back.
const unavailableRequeue = 5 * time.Second

// Availability is what the syncer needs to know of a backend that comes and
// goes (backend.Backend).
type Availability interface {
	// Available reports whether the backend answered its last check.
	Available() bool
	// OnUp registers f to run every time the backend becomes reachable.
	OnUp(f func())
}

// Syncer mirrors SiteIndexes into a store. The controller's work queue
// never runs two reconciles of one SiteIndex at once and each reconcile
// writes the SiteIndex as it is now, so writes of a site are ordered and
// the last one wins. A write that fails because the backend is unreachable
// waits, without back-off, until the backend is back and is then queued at
// once with every other such write; other failures are retried with
// back-off.
type Syncer struct {
	// Client reads SiteIndexes and Exclusions; the manager's cached client.
	Client client.Reader
	Store  store.Store
	// Backend, when set, says when an unreachable backend is back.
	Backend Availability
	// Namespaces are the namespaces the manager watches (empty: all). The
	// index holds the SiteIndexes of those only: rows of any other
	// namespace (left from before the manager was confined) are removed.
	Namespaces watchns.Namespaces

	// pending are SiteIndexes whose latest state is not in the backend,
	// with the time of their first failed write.
	pending pendingSet

	// mu makes "check the Exclusions, then write" one step with respect to
	// PurgeDomain. The Exclusion reconciler sees an Exclusion only once it
	// is in the shared cache, so a write that starts after a purge finds
	// the Exclusion and writes nothing, and a write that started before is
	// removed by the purge.
	mu sync.Mutex

	// sweep carries SiteIndexes to the work queue: those the backend has
	// rows of but the cluster does not (found at start), and those whose
	// write failed while the backend was unreachable (when it is back).
	sweep chan event.TypedGenericEvent[client.Object]
}

// Reads through the cache only: list and watch.
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=siteindexes,verbs=list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=exclusions,verbs=list;watch

// SetupWithManager registers the controller and the start-up sweep.
func (s *Syncer) SetupWithManager(mgr ctrl.Manager) error {
	s.sweep = make(chan event.TypedGenericEvent[client.Object])
	err := ctrl.NewControllerManagedBy(mgr).
		For(&crawlv1.SiteIndex{}).
		// A removed Exclusion lets its sites back in: write every SiteIndex
		// again, which also restores other sites' links into the domain.
		Watches(&crawlv1.Exclusion{}, handler.EnqueueRequestsFromMapFunc(s.allSiteIndexes),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
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
	return mgr.Add(&sweeper{syncer: s, cache: mgr.GetCache()})
}

// Reconcile writes one SiteIndex to the backend, or removes its rows, and
// keeps account of what could not be written.
func (s *Syncer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	err := s.sync(ctx, req)
	switch {
	case err == nil:
		s.pending.done(req.NamespacedName)
		return ctrl.Result{}, nil
	case ctx.Err() != nil:
		// The manager is stopping; the next start writes everything again.
		return ctrl.Result{}, nil
	case errors.Is(err, reconcile.TerminalError(nil)):
		s.pending.done(req.NamespacedName)
		return ctrl.Result{}, err
	}
	// Recorded before asking whether the backend is back, so a backend
	// that comes back meanwhile finds it in the list.
	s.pending.fail(req.NamespacedName, time.Now())
	if errors.Is(err, store.ErrUnavailable) {
		syncFailures.WithLabelValues("unavailable").Inc()
		log.FromContext(ctx).V(1).Info("index backend unavailable; SiteIndex waits", "error", err.Error())
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

// retryPending queues every SiteIndex whose write failed; the backend is
// back.
func (s *Syncer) retryPending() {
	keys := s.pending.keys()
	for _, key := range keys {
		s.sweep <- event.TypedGenericEvent[client.Object]{
			Object: &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		}
	}
}

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

	s.mu.Lock()
	defer s.mu.Unlock()
	domains, err := s.excludedDomains(ctx)
	if err != nil {
		return err
	}
	doc, ok, err := Document(si, func(host string) bool { return inAny(host, domains) })
	if err != nil {
		// Only a spec.site that fails to parse gets here; retrying will not
		// fix it, a new SiteIndex will.
		return reconcile.TerminalError(err)
	}
	if !ok {
		return s.remove(ctx, source, "site is excluded")
	}
	if err := s.Store.ReplaceSite(ctx, doc); err != nil {
		return fmt.Errorf("index SiteIndex %s: %w", source, err)
	}
	upserts.Inc()
	log.FromContext(ctx).V(1).Info("indexed", "site", doc.Site, "pages", len(doc.Pages), "links", len(doc.Links))
	return nil
}

// PurgeDomain removes every row of domain and its subdomains; it is the
// Exclusion reconciler's PagePurger.
func (s *Syncer) PurgeDomain(ctx context.Context, domain string) (store.Removed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Store.PurgeDomain(ctx, domain)
}

func (s *Syncer) remove(ctx context.Context, source, why string) error {
	n, err := s.Store.DeleteSource(ctx, source)
	if err != nil {
		return fmt.Errorf("remove rows of SiteIndex %s (%s): %w", source, why, err)
	}
	if n > 0 {
		removals.Inc()
		log.FromContext(ctx).Info("removed from the index", "source", source, "pages", n, "reason", why)
	}
	return nil
}

func (s *Syncer) excludedDomains(ctx context.Context) ([]string, error) {
	var list crawlv1.ExclusionList
	if err := s.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Exclusions: %w", err)
	}
	var out []string
	for _, ex := range list.Items {
		// An Exclusion being deleted is still in force until it is gone;
		// its deletion event writes the sites again.
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

func (s *Syncer) allSiteIndexes(ctx context.Context, _ client.Object) []reconcile.Request {
	var sis crawlv1.SiteIndexList
	if err := s.Client.List(ctx, &sis); err != nil {
		log.FromContext(ctx).Error(err, "list SiteIndexes to write again after an Exclusion was removed")
		return nil
	}
	out := make([]reconcile.Request, 0, len(sis.Items))
	for _, si := range sis.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&si)})
	}
	return out
}

// sweeper runs once per leadership, after the cache has synced: the
// controller's initial list already queues every SiteIndex for writing,
// and the sweeper queues the sources the backend has but the cluster no
// longer does, so their rows are removed by the same ordered queue.
type sweeper struct {
	syncer *Syncer
	cache  cache.Cache
}

func (w *sweeper) Start(ctx context.Context) error {
	if !w.cache.WaitForCacheSync(ctx) {
		return nil // stopping
	}
	logger := log.FromContext(ctx).WithName("index-sweep")
	waiting := false
	for {
		stale, err := w.stale(ctx)
		if err == nil {
			for _, key := range stale {
				si := &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
				select {
				case w.syncer.sweep <- event.TypedGenericEvent[client.Object]{Object: si}:
				case <-ctx.Done():
					return nil
				}
			}
			logger.Info("index resync queued", "staleSources", len(stale))
			return nil
		}
		switch {
		case !errors.Is(err, store.ErrUnavailable):
			logger.Error(err, "index resync failed; retrying", "in", sweepRetry)
		case !waiting:
			logger.Info("index resync waits for the index backend", "reason", err.Error())
			waiting = true
		}
		select {
		case <-time.After(sweepRetry):
		case <-ctx.Done():
			return nil
		}
	}
}

// stale lists sources with rows in the backend and no SiteIndex. The
// backend is read first: a SiteIndex created after that is not in the list
// whatever the cache says, so it cannot be swept by mistake.
func (w *sweeper) stale(ctx context.Context) ([]types.NamespacedName, error) {
	sources, err := w.syncer.Store.Sources(ctx)
	if err != nil {
		return nil, fmt.Errorf("list indexed sources: %w", err)
	}
	var sis crawlv1.SiteIndexList
	if err := w.syncer.Client.List(ctx, &sis); err != nil {
		return nil, fmt.Errorf("list SiteIndexes: %w", err)
	}
	present := map[string]bool{}
	for _, si := range sis.Items {
		present[SourceOf(si.Namespace, si.Name)] = true
	}
	var out []types.NamespacedName
	for _, src := range sources {
		if present[src] {
			continue
		}
		key, ok := parseSource(src)
		if !ok {
			continue
		}
		out = append(out, key)
	}
	return out, nil
}

func parseSource(src string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(src, "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok && ns != "" && name != ""
}
