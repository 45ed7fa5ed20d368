package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// PagePurger removes every page whose host is domain or below it from the
// search backend and says how many it removed.
type PagePurger interface {
	PurgeDomain(ctx context.Context, domain string) (int64, error)
}

// ExclusionReconciler enforces an Exclusion: it stops crawls of the domain
// and its subdomains at once, purges their indexed pages and reports what it
// matched and purged. The CrawlTarget reconciler keeps excluded targets from
// starting new crawls.
type ExclusionReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Purger   PagePurger
}

// exclusionScope is what the steps of one Exclusion reconcile share.
type exclusionScope struct {
	ex      *crawlv1.Exclusion
	targets []crawlv1.CrawlTarget
	stopped int
	purged  int64
}

// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=exclusions,verbs=get;list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=exclusions/status,verbs=get;update;patch

// Reconcile matches, stops, purges, and patches the status once.
func (r *ExclusionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	ex := &crawlv1.Exclusion{}
	if err := r.Get(ctx, req.NamespacedName, ex); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ex.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	before := ex.DeepCopy()
	s := &exclusionScope{ex: ex}
	defer func() {
		r.renderStatus(s, retErr)
		if err := r.Status().Patch(ctx, ex, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
			retErr = errors.Join(retErr, fmt.Errorf("patch status: %w", err))
		}
		if ctx.Err() != nil {
			// The manager is stopping; the next leader reconciles again.
			retErr = nil
		}
	}()

	for _, st := range []func(context.Context, *exclusionScope) error{r.match, r.stopCrawls, r.purgePages} {
		if err := st(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
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
func (r *ExclusionReconciler) purgePages(ctx context.Context, s *exclusionScope) error {
	var fromIndexes int64
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
		n := int64(len(si.Status.Pages))
		if err := clearIndex(ctx, r.Client, si); err != nil {
			return err
		}
		if n > 0 {
			fromIndexes += n
			exclusionsEnforced.Inc()
			r.Recorder.Eventf(s.ex, ct, corev1.EventTypeNormal, "PagesPurged", "Purge",
				"purged %d pages of %s (CrawlTarget %s/%s)", n, si.Spec.Site, ct.Namespace, ct.Name)
		}
	}
	// The same page sits in a SiteIndex and in the backend: count it once.
	purged := fromIndexes
	if r.Purger != nil {
		rows, err := r.Purger.PurgeDomain(ctx, s.ex.Spec.Domain)
		if err != nil {
			return fmt.Errorf("purge %s from the index backend: %w", s.ex.Spec.Domain, err)
		}
		purged = max(purged, rows)
	}
	s.purged += purged
	purgedPages.Add(float64(purged))
	return nil
}

func (r *ExclusionReconciler) renderStatus(s *exclusionScope, err error) {
	st := &s.ex.Status
	st.ObservedGeneration = s.ex.Generation
	st.MatchedTargets = int32(len(s.targets))
	st.PurgedPages += s.purged
	if err != nil {
		setCondition(&st.Conditions, s.ex.Generation, crawlv1.ConditionReady, metav1.ConditionFalse,
			reason{"EnforcementFailed", err.Error()})
		setCondition(&st.Conditions, s.ex.Generation, crawlv1.ConditionReconciling, metav1.ConditionTrue,
			reason{"EnforcementFailed", "retrying"})
		return
	}
	msg := fmt.Sprintf("%s and its subdomains are excluded: %d CrawlTargets matched, %d pages purged in total",
		s.ex.Spec.Domain, st.MatchedTargets, st.PurgedPages)
	if setCondition(&st.Conditions, s.ex.Generation, crawlv1.ConditionReady, metav1.ConditionTrue,
		reason{crawlv1.ReasonEnforced, msg}) {
		r.Recorder.Eventf(s.ex, nil, corev1.EventTypeNormal, crawlv1.ReasonEnforced, "Enforce", "%s", msg)
	}
	setOrRemove(&st.Conditions, s.ex.Generation, crawlv1.ConditionReconciling, reason{})
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
