package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// PagePurger removes every page whose host is domain or below it from the
// search backend and says how many it removed, by source (SiteIndex
// namespace/name). It fails with store.ErrUnavailable while the backend is
// unreachable.
type PagePurger interface {
	PurgeDomain(ctx context.Context, domain string) (store.Removed, error)
}

// backendRequeue is how soon an Exclusion whose backend purge found the
// backend unreachable looks again; the backend fails fast meanwhile.
const backendRequeue = time.Second

// ExclusionReconciler enforces an Exclusion: it stops crawls of the domain
// and its subdomains at once, purges their indexed pages and reports what it
// matched and purged. The CrawlTarget reconciler keeps excluded targets from
// starting new crawls.
type ExclusionReconciler struct {
	client.Client
	// APIReader reads the Exclusion fresh before its status is written, so
	// a count is never added to a stale copy; nil uses Client.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Purger    PagePurger
	// Namespaces are the namespaces the manager watches (empty: all).
	Namespaces watchns.Namespaces
}

// exclusionScope is what the steps of one Exclusion reconcile share.
type exclusionScope struct {
	ex      *crawlv1.Exclusion
	targets []crawlv1.CrawlTarget
	stopped int
	// purged counts the pages this reconcile removed; it reaches the
	// status even when a later step fails.
	purged int64
	// backendDown is set when the backend purge has to wait for the
	// backend.
	backendDown error
	// conflict is set when a SiteIndex changed under the reconcile; it
	// looks again at once.
	conflict bool
	// committed are Events and metric updates that happen only once the
	// status patch has landed, so nothing is reported twice or without
	// being recorded.
	committed []func()
}

func (s *exclusionScope) onCommit(f func()) { s.committed = append(s.committed, f) }

// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=exclusions,verbs=get;list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=exclusions/status,verbs=patch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=crawltargets,verbs=list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=siteindexes,verbs=list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=siteindexes/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile matches, stops, purges, and patches the status once.
func (r *ExclusionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	ex := &crawlv1.Exclusion{}
	if err := r.Get(ctx, req.NamespacedName, ex); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ex.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	s := &exclusionScope{ex: ex}
	defer func() {
		if err := r.patchStatus(ctx, req.NamespacedName, s, retErr); err != nil {
			retErr = errors.Join(retErr, err)
		}
		if ctx.Err() != nil {
			// The manager is stopping; the next leader reconciles again.
			retErr = nil
		}
		switch {
		case retErr != nil:
		case s.conflict:
			result = ctrl.Result{RequeueAfter: conflictRequeue}
		case s.backendDown != nil:
			result = ctrl.Result{RequeueAfter: backendRequeue}
		}
	}()

	for _, st := range []func(context.Context, *exclusionScope) error{r.match, r.stopCrawls, r.purgePages} {
		if err := st(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// patchStatus adds what this reconcile did to the Exclusion's status as it
// is in the API server now, retrying on conflicts, and then emits the
// reconcile's Events and metrics. Pages already removed are counted even if
// the reconcile failed later.
func (r *ExclusionReconciler) patchStatus(ctx context.Context, key client.ObjectKey, s *exclusionScope, reconcileErr error) error {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	var events []func()
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
			apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
	}, func() error {
		fresh := &crawlv1.Exclusion{}
		if err := reader.Get(ctx, key, fresh); err != nil {
			return err
		}
		if fresh.UID != s.ex.UID {
			return nil // deleted and created again; nothing of ours to record
		}
		before := fresh.DeepCopy()
		events = r.renderStatus(fresh, s, reconcileErr)
		return r.Status().Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patch status: %w", err)
	}
	for _, f := range s.committed {
		f()
	}
	for _, f := range events {
		f()
	}
	return nil
}

func (r *ExclusionReconciler) match(ctx context.Context, s *exclusionScope) error {
	targets, err := targetsInDomain(ctx, r.Client, s.ex.Spec.Domain)
	s.targets = targets
	return err
}

// stopCrawls deletes running crawler Pods of matched targets right away
// rather than waiting for their reconciler, so an exclusion takes effect in
// seconds.
func (r *ExclusionReconciler) stopCrawls(ctx context.Context, s *exclusionScope) error {
	for i := range s.targets {
		n, err := deleteActiveCrawls(ctx, r.Client, &s.targets[i])
		if err != nil {
			return err
		}
		s.stopped += n
	}
	return nil
}

// purgePages removes the matched sites' pages from their SiteIndexes and
// every page of the domain from the search backend, including pages of
// targets deleted long ago.
//
// Each page is counted once: a SiteIndex's pages when the patch that
// empties it lands (an optimistic lock makes the count that of the version
// emptied), and of the backend's rows only those left from SiteIndexes that
// no longer exist, because the rows of a SiteIndex are its pages, counted
// when it was emptied, in this reconcile or an earlier one. When the
// backend is unreachable the SiteIndexes are emptied and counted anyway;
// its rows are purged when it is back.
func (r *ExclusionReconciler) purgePages(ctx context.Context, s *exclusionScope) error {
	for i := range s.targets {
		ct := &s.targets[i]
		si := &crawlv1.SiteIndex{}
		err := r.Get(ctx, client.ObjectKeyFromObject(ct), si)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get SiteIndex %s/%s: %w", ct.Namespace, ct.Name, err)
		}
		n := int64(si.Status.Stats.Pages)
		cleared, err := clearIndexLocked(ctx, r.Client, si)
		if apierrors.IsConflict(err) {
			// Written meanwhile (the cache was behind): look again.
			s.conflict = true
			return nil
		}
		if err != nil {
			return err
		}
		if cleared && n > 0 {
			s.purged += n
			site, target := si.Spec.Site, client.ObjectKeyFromObject(ct)
			s.onCommit(func() {
				exclusionsEnforced.Inc()
				r.Recorder.Eventf(s.ex, ct, corev1.EventTypeNormal, "PagesPurged", "Purge",
					"purged %d pages of %s (CrawlTarget %s)", n, site, target)
			})
		}
	}
	if r.Purger == nil || s.conflict {
		return nil
	}
	removed, err := r.Purger.PurgeDomain(ctx, s.ex.Spec.Domain)
	if errors.Is(err, store.ErrUnavailable) {
		s.backendDown = err
		return nil
	}
	if err != nil {
		return fmt.Errorf("purge %s from the index backend: %w", s.ex.Spec.Domain, err)
	}
	var orphans int64
	for source, n := range removed {
		ns, name, ok := strings.Cut(source, "/")
		if !ok || n == 0 {
			continue
		}
		if !r.Namespaces.Has(ns) {
			// Rows of a namespace the manager does not watch (any more):
			// no SiteIndex of ours will count them.
			orphans += n
			continue
		}
		err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &crawlv1.SiteIndex{})
		if apierrors.IsNotFound(err) {
			orphans += n
		} else if err != nil {
			return fmt.Errorf("get SiteIndex %s: %w", source, err)
		}
	}
	s.purged += orphans
	return nil
}

// renderStatus applies what the reconcile found and did to ex (fresh from
// the API server) and returns the Events that describe the change.
func (r *ExclusionReconciler) renderStatus(ex *crawlv1.Exclusion, s *exclusionScope, err error) []func() {
	st := &ex.Status
	st.ObservedGeneration = ex.Generation
	st.MatchedTargets = int32(len(s.targets))
	st.PurgedPages += s.purged
	var out []func()
	if purged := s.purged; purged > 0 {
		out = append(out, func() { purgedPages.Add(float64(purged)) })
	}
	switch {
	case err == nil && s.conflict:
		// Not done yet; the conditions wait for the next look.
		return out
	case err != nil:
		setCondition(&st.Conditions, ex.Generation, crawlv1.ConditionReady, metav1.ConditionFalse,
			reason{crawlv1.ReasonEnforcementFailed, err.Error()})
		setCondition(&st.Conditions, ex.Generation, crawlv1.ConditionReconciling, metav1.ConditionTrue,
			reason{crawlv1.ReasonEnforcementFailed, "retrying"})
		return out
	case s.backendDown != nil:
		msg := fmt.Sprintf("crawls of %s stopped and %d CrawlTargets' SiteIndexes emptied (%d pages purged in total); "+
			"the index backend is unreachable, so its rows are purged when it is back (search answers 503 until then)",
			ex.Spec.Domain, st.MatchedTargets, st.PurgedPages)
		if setCondition(&st.Conditions, ex.Generation, crawlv1.ConditionReady, metav1.ConditionFalse,
			reason{crawlv1.ReasonBackendUnavailable, msg}) {
			out = append(out, func() {
				r.Recorder.Eventf(ex, nil, corev1.EventTypeWarning, crawlv1.ReasonBackendUnavailable, "Enforce", "%s", msg)
			})
		}
		setCondition(&st.Conditions, ex.Generation, crawlv1.ConditionReconciling, metav1.ConditionTrue,
			reason{crawlv1.ReasonBackendUnavailable, "waiting for the index backend"})
		return out
	}
	msg := fmt.Sprintf("%s and its subdomains are excluded: %d CrawlTargets matched, %d pages purged in total",
		ex.Spec.Domain, st.MatchedTargets, st.PurgedPages)
	if setCondition(&st.Conditions, ex.Generation, crawlv1.ConditionReady, metav1.ConditionTrue,
		reason{crawlv1.ReasonEnforced, msg}) {
		out = append(out, func() {
			r.Recorder.Eventf(ex, nil, corev1.EventTypeNormal, crawlv1.ReasonEnforced, "Enforce", "%s", msg)
		})
	}
	setOrRemove(&st.Conditions, ex.Generation, crawlv1.ConditionReconciling, reason{})
	return out
}

// SetupWithManager registers the reconciler. It also wakes on CrawlTargets
// and SiteIndexes so a target created or crawled after the exclusion is
// matched and purged too.
func (r *ExclusionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&crawlv1.Exclusion{}).
		Watches(&crawlv1.CrawlTarget{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.exclusionsOfHost(ctx, site.HostOf(o.(*crawlv1.CrawlTarget).Spec.URL))
		})).
		Watches(&crawlv1.SiteIndex{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.exclusionsOfHost(ctx, site.HostOf(o.(*crawlv1.SiteIndex).Spec.Site))
		})).
		Named("exclusion").
		Complete(r)
}

func (r *ExclusionReconciler) exclusionsOfHost(ctx context.Context, host string) []reconcile.Request {
	var list crawlv1.ExclusionList
	if err := r.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "map to Exclusions")
		return nil
	}
	var out []reconcile.Request
	for _, ex := range list.Items {
		if site.InDomain(host, ex.Spec.Domain) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: ex.Name}})
		}
	}
	return out
}
