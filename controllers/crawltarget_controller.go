package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/controllers/crawlqueue"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/site"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

const (
	// targetsBySiteField indexes CrawlTargets by the site of spec.url, so the
	// owner of a site is one cached lookup away.
	targetsBySiteField = "crawl.lohisoft.com/site"

	// conflictRequeue is short: the cache catches up within milliseconds.
	conflictRequeue = 200 * time.Millisecond
	// finishedPodsKept is how many finished crawler Pods stay for their logs.
	finishedPodsKept = 3
)

// CrawlTargetReconciler turns each due CrawlTarget into one crawler Pod on an
// egress node and records the outcome in the CrawlTarget status.
type CrawlTargetReconciler struct {
	client.Client
	// APIReader reads straight from the API server where a stale cache
	// would lose a run: the Pod of the current run and its stored result,
	// when the cache does not show them yet. Capacity never comes from it:
	// the crawl queue counts it from the cache.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock

	Pod              crawlpod.Config
	MaxCrawlsPerNode int
	// MaxConcurrentReconciles is how many targets are reconciled at once.
	MaxConcurrentReconciles int
	// Queue holds the crawl slots and the targets waiting for one; nil
	// makes a new one of MaxCrawlsPerNode slots per node at setup.
	Queue *crawlqueue.Queue
	// Egress says which egress nodes may take crawls (selector, published
	// IPs, FCrDNS self-check).
	Egress egress.Policy
	// Quarantine keeps crawls off egress nodes whose crawlers could not
	// verify the address sites see (--egress-echo-url); nil makes a new
	// one of the default lengths at setup.
	Quarantine *egress.Quarantine
	// NodeLostAfter is how long an egress node may be not Ready before
	// the crawls on it are given up and started again on another node
	// (--egress-node-lost-after); zero is egress.DefaultLostAfter.
	NodeLostAfter time.Duration
	// NetworkPolicy, when enabled, is ensured in a namespace before a
	// crawler Pod starts there.
	NetworkPolicy crawlpod.NetworkPolicyConfig
	// written holds, per target, the resourceVersion of the status this
	// manager last wrote.
	written versions
	// Namespaces are the namespaces the manager watches (empty: all); the
	// fleet is counted from the crawler Pods there (the cache holds no
	// others).
	Namespaces watchns.Namespaces
}

// targetScope is what the steps of one reconcile share.
type targetScope struct {
	ct      *crawlv1.CrawlTarget
	site    site.Site
	index   *crawlv1.SiteIndex
	active  *corev1.Pod
	now     time.Time
	verdict verdict
	// failure describes a run that failed during this reconcile.
	failure string
	// note adds to the Crawling condition's message what happened to the
	// run's egress node (nodelost.go).
	note string
	// stall is set when a run failed on input that cannot change by
	// itself during this reconcile.
	stall reason
	// queued is set when the target waits in the crawl queue; every other
	// outcome takes it out.
	queued  bool
	requeue time.Duration
	// committed are Events and metric updates that describe what this
	// reconcile decided; they happen only once its status patch lands, so a
	// reconcile replayed after a conflict does not report twice.
	committed []func()
}

func (s *targetScope) onCommit(f func()) { s.committed = append(s.committed, f) }

func (s *targetScope) commit() {
	for _, f := range s.committed {
		f()
	}
}

func (s *targetScope) requeueAfter(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

// step is one small part of a reconcile. done stops the chain: the target's
// state is settled for this round.
type step func(ctx context.Context, s *targetScope) (done bool, err error)

// The RBAC markers name exactly the verbs this reconciler's calls need
// (test/rbac fails on one more or one less). Reads through the cache need
// list and watch; get is only for reads from the API server (APIReader).
// Statuses are patched, never updated. Secrets are created and deleted,
// never read: whether one exists is asked with a dry-run create.
//
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=crawltargets,verbs=list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=crawltargets/status,verbs=patch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=siteindexes,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=siteindexes/status,verbs=patch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=exclusions,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs the steps in order and patches the status once at the end.
func (r *CrawlTargetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	ct := &crawlv1.CrawlTarget{}
	if err := r.Get(ctx, req.NamespacedName, ct); err != nil {
		r.Queue.Leave(req.NamespacedName)
		r.written.forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ct.DeletionTimestamp.IsZero() {
		// Pods and the SiteIndex are owned and go with it, and each
		// Pod's token Secret with its Pod.
		r.Queue.Leave(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	before := ct.DeepCopy()
	s := &targetScope{ct: ct, now: r.Clock.Now()}

	var stepErr error
	defer func() {
		if !s.queued || stepErr != nil {
			// A target that failed part-way comes back with the error
			// backoff; meanwhile it keeps no one behind it waiting.
			r.Queue.Leave(req.NamespacedName)
		}
		r.renderStatus(before, s, stepErr)
		if r.unchanged(before, ct) {
			// Nothing to write: a reconcile that changes nothing costs no
			// request.
			s.commit()
			if retErr == nil {
				result = ctrl.Result{RequeueAfter: s.requeue}
			}
			return
		}
		// The optimistic lock refuses a status computed from a stale cache;
		// the retry then sees what the previous reconcile wrote.
		err := r.Status().Patch(ctx, ct, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		switch {
		case apierrors.IsConflict(err):
			result, retErr = ctrl.Result{RequeueAfter: conflictRequeue}, nil
			return
		case err != nil && !apierrors.IsNotFound(err):
			retErr = errors.Join(retErr, fmt.Errorf("patch status: %w", err))
		case err == nil:
			r.written.set(req.NamespacedName, ct.ResourceVersion)
			s.commit()
		}
		if ctx.Err() != nil {
			// The manager is stopping; the next leader reconciles again.
			retErr = nil
		}
		if retErr == nil {
			result = ctrl.Result{RequeueAfter: s.requeue}
		}
	}()

	for _, st := range []step{r.parseSite, r.ensureSiteIndex, r.enforceExclusion, r.checkDuplicate, r.observeRun, r.holdStalled, r.startCrawl} {
		done, err := st(ctx, s)
		if err != nil {
			stepErr = err
			return ctrl.Result{}, err
		}
		if done {
			break
		}
	}
	return ctrl.Result{}, nil
}

// unchanged reports whether a status patch would change nothing. It
// trusts the cached status only when it is the one this manager last
// wrote (or the first it saw): a status computed from an older one must
// go to the API server, whose optimistic lock refuses it.
func (r *CrawlTargetReconciler) unchanged(before, ct *crawlv1.CrawlTarget) bool {
	if !equality.Semantic.DeepEqual(before.Status, ct.Status) {
		return false
	}
	last, ok := r.written.get(client.ObjectKeyFromObject(ct))
	return !ok || last == before.ResourceVersion
}

// versions maps targets to resourceVersions. A plain map under a lock: a
// sync.Map entry costs about 250 bytes more, 25 MB at 100,000 targets.
type versions struct {
	mu sync.Mutex
	m  map[types.NamespacedName]string
}

func (v *versions) get(k types.NamespacedName) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	rv, ok := v.m[k]
	return rv, ok
}

func (v *versions) set(k types.NamespacedName, rv string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[types.NamespacedName]string{}
	}
	v.m[k] = rv
}

func (v *versions) forget(k types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, k)
}

// parseSite names the site. The CRD validates spec.url, so failing here
// means validation was bypassed; nothing can be crawled until spec changes.
func (r *CrawlTargetReconciler) parseSite(_ context.Context, s *targetScope) (bool, error) {
	st, err := site.Parse(s.ct.Spec.URL)
	if err != nil {
		s.verdict.block = reason{crawlv1.ReasonInvalidURL, err.Error()}
		return true, nil
	}
	s.site = st
	s.ct.Status.Site = st.String()
	s.ct.Status.Host = st.Host
	return false, nil
}

// ensureSiteIndex creates the target's SiteIndex, and resets it when the
// target moved to another site: old pages belong to the old site.
func (r *CrawlTargetReconciler) ensureSiteIndex(ctx context.Context, s *targetScope) (bool, error) {
	si := &crawlv1.SiteIndex{}
	err := r.Get(ctx, client.ObjectKeyFromObject(s.ct), si)
	if apierrors.IsNotFound(err) {
		si = &crawlv1.SiteIndex{
			ObjectMeta: metav1.ObjectMeta{Name: s.ct.Name, Namespace: s.ct.Namespace},
			Spec:       crawlv1.SiteIndexSpec{Site: s.site.String()},
		}
		if err := ctrl.SetControllerReference(s.ct, si, r.Scheme); err != nil {
			return false, err
		}
		if err := r.Create(ctx, si); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("create SiteIndex: %w", err)
		}
		s.index = si
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get SiteIndex: %w", err)
	}
	if !metav1.IsControlledBy(si, s.ct) {
		s.verdict.block = reason{crawlv1.ReasonSiteIndexConflict, fmt.Sprintf("SiteIndex %s exists and is not owned by this CrawlTarget", si.Name)}
		return true, nil
	}
	if si.Spec.Site != s.site.String() {
		// spec.url moved to another site: nothing known about the old site
		// applies, and its running crawl must stop.
		// A patch, not an Update: the cache's copy lacks the labels and
		// annotations others may have put on the SiteIndex.
		before := si.DeepCopy()
		si.Spec.Site = s.site.String()
		if err := r.Patch(ctx, si, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return false, fmt.Errorf("update SiteIndex site: %w", err)
		}
		if err := clearIndex(ctx, r.Client, si); err != nil {
			return false, err
		}
		if _, err := deleteActiveCrawls(ctx, r.Client, s.ct); err != nil {
			return false, err
		}
		forgetCrawls(&s.ct.Status)
		s.ct.Status.RetryAfterTime = nil
		s.ct.Status.EgressNodeName, s.ct.Status.EgressIP = "", ""
	}
	// A plain-HTTP site that upgrades to https is shown as where its
	// pages are.
	s.ct.Status.Site = s.site.Crawled(si.Status.Site).String()
	s.index = si
	return false, nil
}

// enforceExclusion stops everything for an excluded site: running crawls
// are deleted at once and no new ones start. Excluded outranks every other
// state, so this runs before anything else can decide. The Exclusion
// reconciler purges the pages and counts them.
func (r *CrawlTargetReconciler) enforceExclusion(ctx context.Context, s *targetScope) (bool, error) {
	ex, err := matchingExclusion(ctx, r.Client, s.site.Host)
	if err != nil || ex == nil {
		return false, err
	}
	if _, err := deleteActiveCrawls(ctx, r.Client, s.ct); err != nil {
		return false, err
	}
	// The interrupted run is settled, not failed, and the purged pages are
	// gone: once the exclusion is lifted the site is crawled afresh.
	forgetCrawls(&s.ct.Status)
	s.verdict.block = reason{crawlv1.ReasonExcluded,
		fmt.Sprintf("domain %s is excluded by Exclusion %s: %s", ex.Spec.Domain, ex.Name, ex.Spec.Description)}
	return true, nil
}

// checkDuplicate keeps the 20-page budget per site: the oldest CrawlTarget
// of a site owns it and any other waits until the owner goes away.
func (r *CrawlTargetReconciler) checkDuplicate(ctx context.Context, s *targetScope) (bool, error) {
	var list crawlv1.CrawlTargetList
	if err := r.List(ctx, &list, client.MatchingFields{targetsBySiteField: s.site.String()}); err != nil {
		return false, fmt.Errorf("list CrawlTargets of site: %w", err)
	}
	owner := siteOwner(list.Items)
	if owner == nil || owner.UID == s.ct.UID {
		return false, nil
	}
	s.verdict.block = reason{crawlv1.ReasonDuplicateSite,
		fmt.Sprintf("site %s is already crawled by CrawlTarget %s/%s", s.site, owner.Namespace, owner.Name)}
	return true, nil
}

// siteOwner returns the CrawlTarget that owns a site among those naming it:
// the oldest one not being deleted. Creation times have one-second
// resolution, so within a second a target that has already crawled the site
// keeps it; then namespace/name decides.
func siteOwner(targets []crawlv1.CrawlTarget) *crawlv1.CrawlTarget {
	var live []*crawlv1.CrawlTarget
	for i := range targets {
		if targets[i].DeletionTimestamp.IsZero() {
			live = append(live, &targets[i])
		}
	}
	if len(live) == 0 {
		return nil
	}
	sort.Slice(live, func(i, j int) bool {
		a, b := live[i], live[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if ha, hb := holdsSite(a), holdsSite(b); ha != hb {
			return ha
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return live[0]
}

// forgetCrawls settles any run in progress and drops what earlier crawls
// left in the status, so the next crawl is due at once.
func forgetCrawls(st *crawlv1.CrawlTargetStatus) {
	st.LastFinishedRun = st.Runs
	st.PagesIndexed = 0
	st.LastCrawlTime = nil
	st.ConsecutiveFailures = 0
	st.LastFailureTime = nil
}

func holdsSite(ct *crawlv1.CrawlTarget) bool {
	return ct.Status.Runs > 0 && ct.Status.Phase != crawlv1.PhaseDuplicate
}

// observeRun follows the current run's Pod and, once it has ended, records
// its outcome exactly once (runs are numbered; LastFinishedRun remembers).
func (r *CrawlTargetReconciler) observeRun(ctx context.Context, s *targetScope) (bool, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(s.ct.Namespace),
		client.MatchingLabels{crawlpod.LabelTargetUID: string(s.ct.UID)}); err != nil {
		return false, fmt.Errorf("list crawler Pods: %w", err)
	}
	if err := r.pruneFinished(ctx, pods.Items); err != nil {
		return false, err
	}
	st := &s.ct.Status
	if st.Runs <= st.LastFinishedRun {
		return false, nil
	}
	pod, err := r.currentPod(ctx, s.ct, pods.Items)
	if err != nil {
		return false, err
	}
	name := crawlpod.PodName(s.ct.Name, st.Runs)
	var loss egress.Loss
	if pod != nil {
		if loss, err = r.nodeLoss(ctx, s, pod); err != nil {
			return false, err
		}
	}
	switch {
	case pod != nil && pod.Status.Phase == corev1.PodSucceeded:
		if err := r.recordSuccess(ctx, s, name, podFinishedAt(pod, s.now), podStartedAt(pod)); err != nil {
			return false, err
		}
	case pod == nil || pod.Status.Phase == corev1.PodFailed:
		// The result may have been stored although the Pod did not end
		// well: the crawler's last report got no answer, or the Pod was
		// removed after it finished. A stored final result is a success.
		done, err := r.resultDelivered(ctx, s, name)
		if err != nil {
			return false, err
		}
		switch {
		case done && pod != nil:
			err = r.recordSuccess(ctx, s, name, podFinishedAt(pod, s.now), podStartedAt(pod))
		case done:
			err = r.recordSuccess(ctx, s, name, s.now, time.Time{})
		case pod == nil:
			// Its node may be lost: then the Pod went with it, deleted by
			// an earlier reconcile's abandonLostRun whose status patch
			// did not land (a conflict; the retry Pod it started may be
			// running already), or evicted from the unreachable node by
			// Kubernetes. Either way the site did nothing wrong.
			var gone egress.Loss
			if gone, err = r.lossOfNode(ctx, s, st.EgressNodeName); err != nil {
				break
			}
			if !gone.Lost {
				r.recordFailure(s, s.now, causePodDeleted, "crawler Pod was deleted before it finished", "")
				break
			}
			if retry := r.Queue.Running(s.ct.UID); retry != nil {
				// The retry answers the request the lost run did.
				reopenRequest(st, retry)
			}
			r.settleLostRun(ctx, s, name, st.EgressNodeName, gone)
		case crawlerExitCode(pod) == runreport.ExitEgressUnverified:
			r.recordEgressUnverified(ctx, s, pod)
		case crawlerExitCode(pod) == runreport.ExitBadInput:
			r.recordStall(s, podFinishedAt(pod, s.now), causeBadInput, reason{crawlv1.ReasonInvalidInput,
				fmt.Sprintf("crawl %d: the crawler refused its input (%s); not retried until spec changes or a crawl is requested",
					st.Runs, podFailure(pod))})
		default:
			r.recordFailure(s, podFinishedAt(pod, s.now), podFailureCause(pod), "crawler Pod failed: "+podFailure(pod), pod.Name)
		}
		if err != nil {
			return false, err
		}
	case loss.Lost:
		// Before the deadline: a lost node's Pod would otherwise stay
		// Running, or Terminating, in the API for ever.
		if err := r.abandonLostRun(ctx, s, pod, loss); err != nil {
			return false, err
		}
	case r.stuck(pod, s.now):
		// activeDeadlineSeconds counts only once a kubelet starts the Pod;
		// a Pod that never starts would hold its host for ever.
		if err := r.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("delete stuck crawler Pod: %w", err)
		}
		r.recordFailure(s, s.now, causeDeadlineExceeded, fmt.Sprintf("crawler Pod did not finish within %s of its creation (phase %s)", r.stuckAfter(), pod.Status.Phase), pod.Name)
	default:
		// Pending, Running, or terminating: the run is still in progress.
		s.active = pod
		r.noteNodeNotReady(s, loss)
		if d := r.stuckAfter(); d > 0 {
			s.requeueAfter(pod.CreationTimestamp.Add(d).Sub(s.now) + time.Second)
		}
		return true, nil
	}
	st.LastFinishedRun = st.Runs
	return false, r.deleteToken(ctx, s.ct, name)
}

// stuckAfter is how long a crawler Pod may exist before the operator gives
// up on it: its deadline plus time to be scheduled and started.
func (r *CrawlTargetReconciler) stuckAfter() time.Duration {
	if r.Pod.ActiveDeadline <= 0 {
		return 0
	}
	return r.Pod.ActiveDeadline + 10*time.Minute
}

func (r *CrawlTargetReconciler) stuck(pod *corev1.Pod, now time.Time) bool {
	d := r.stuckAfter()
	return d > 0 && pod.DeletionTimestamp == nil && now.Sub(pod.CreationTimestamp.Time) > d
}

// resultDelivered reports whether the run's final result is in the
// SiteIndex, asking the API server when the cache does not show it yet.
func (r *CrawlTargetReconciler) resultDelivered(ctx context.Context, s *targetScope, run string) (bool, error) {
	if s.index.Status.Run == run && s.index.Status.Complete {
		return true, nil
	}
	fresh := &crawlv1.SiteIndex{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.index), fresh); err != nil {
		return false, fmt.Errorf("get SiteIndex: %w", err)
	}
	s.index = fresh
	return fresh.Status.Run == run && fresh.Status.Complete, nil
}

// currentPod finds the Pod of the current run. When the cache has not seen
// it, the API server is asked before the run is declared lost, so a slow
// cache cannot make the operator start a second crawl.
func (r *CrawlTargetReconciler) currentPod(ctx context.Context, ct *crawlv1.CrawlTarget, pods []corev1.Pod) (*corev1.Pod, error) {
	name := crawlpod.PodName(ct.Name, ct.Status.Runs)
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i], nil
		}
	}
	pod, err := r.runPod(ctx, ct, name)
	if errors.Is(err, errForeignPod) {
		// A Pod of a deleted namesake: not this target's run.
		return nil, nil
	}
	return pod, err
}

// recordSuccess records a run whose Pod succeeded, or whose final result
// was stored anyway. started may be zero when the Pod is gone.
func (r *CrawlTargetReconciler) recordSuccess(ctx context.Context, s *targetScope, run string, finished, started time.Time) error {
	done, err := r.resultDelivered(ctx, s, run)
	if err != nil {
		return err
	}
	if !done {
		r.recordFailure(s, finished, causeNoResult, "crawler exited without delivering its result", run)
		return nil
	}
	r.noteEgressVerified(ctx, s, run, started)
	idx := s.index
	st := &s.ct.Status
	st.RetryAfterTime = idx.Status.RetryAfterTime
	pages := idx.Status.Stats.Pages
	if pages == 0 && idx.Status.Refused != "" {
		r.recordStall(s, finished, causeAddressRefused, reason{crawlv1.ReasonAddressRefused,
			fmt.Sprintf("crawl %d refused the site: %s; not retried until spec changes or a crawl is requested", st.Runs, idx.Status.Refused)})
		return nil
	}
	if pages == 0 && idx.Status.RetryAfterTime != nil {
		r.recordFailure(s, finished, causeBackedOff, fmt.Sprintf("site asked the bot to back off until %s", idx.Status.RetryAfterTime.UTC().Format(time.RFC3339)), run)
		return nil
	}
	st.PagesIndexed = pages
	st.LastCrawlTime = &metav1.Time{Time: finished}
	st.ConsecutiveFailures = 0
	st.LastFailureTime = nil
	runs, site := st.Runs, s.site
	s.onCommit(func() {
		crawlsFinished.WithLabelValues("succeeded").Inc()
		pagesIndexed.Add(float64(pages))
		if !started.IsZero() && finished.After(started) {
			crawlDuration.Observe(finished.Sub(started).Seconds())
		}
		r.Recorder.Eventf(s.ct, nil, corev1.EventTypeNormal, "CrawlSucceeded", "Crawl",
			"crawl %d indexed %d pages of %s", runs, pages, site)
	})
	return nil
}

func (r *CrawlTargetReconciler) recordFailure(s *targetScope, at time.Time, cause, why, podName string) {
	st := &s.ct.Status
	st.ConsecutiveFailures++
	st.LastFailureTime = &metav1.Time{Time: at}
	if s.index != nil && podName != "" && s.index.Status.Run == podName && s.index.Status.RetryAfterTime != nil {
		st.RetryAfterTime = s.index.Status.RetryAfterTime
	}
	s.failure = why
	runs, failures := st.Runs, st.ConsecutiveFailures
	s.onCommit(func() {
		countFailure(cause)
		r.Recorder.Eventf(s.ct, nil, corev1.EventTypeWarning, crawlv1.ReasonCrawlFailed, "Crawl",
			"crawl %d failed (%d in a row): %s", runs, failures, why)
	})
}

// recordStall records a run that failed on input that cannot change by
// itself: it counts as a failure, but no retry is scheduled; holdStalled
// keeps the target Stalled until its spec changes or a crawl is requested.
func (r *CrawlTargetReconciler) recordStall(s *targetScope, at time.Time, cause string, why reason) {
	st := &s.ct.Status
	st.ConsecutiveFailures++
	st.LastFailureTime = &metav1.Time{Time: at}
	s.stall = why
	s.onCommit(func() {
		countFailure(cause)
		r.Recorder.Eventf(s.ct, nil, corev1.EventTypeWarning, why.Reason, "Crawl", "%s", why.Message)
	})
}

// stalledReasons are the Stalled reasons a crawl itself can cause.
var stalledReasons = map[string]bool{crawlv1.ReasonInvalidInput: true, crawlv1.ReasonAddressRefused: true}

// holdStalled keeps a target whose last crawl failed on input that cannot
// change by itself (InvalidInput, AddressRefused) Stalled, with no timer:
// a new spec generation or a crawl request is what lets it crawl again.
func (r *CrawlTargetReconciler) holdStalled(_ context.Context, s *targetScope) (bool, error) {
	why := s.stall
	if !why.set() {
		c := meta.FindStatusCondition(s.ct.Status.Conditions, crawlv1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || !stalledReasons[c.Reason] || c.ObservedGeneration != s.ct.Generation {
			return false, nil
		}
		if _, requested := crawlRequested(s.ct); requested {
			return false, nil
		}
		why = reason{c.Reason, c.Message}
	}
	s.verdict.block = why
	s.ct.Status.NextCrawlTime = nil
	return true, nil
}

// startCrawl starts a crawl when one is due and the crawl queue gives it
// a slot: one crawl per host at a time fleet-wide, at most
// MaxCrawlsPerNode per node, the oldest due target first. Otherwise the
// target waits in the queue with no timer: the queue wakes it when it can
// start.
func (r *CrawlTargetReconciler) startCrawl(ctx context.Context, s *targetScope) (bool, error) {
	due, next := crawlDue(s.ct, s.now)
	if next.IsZero() {
		s.ct.Status.NextCrawlTime = nil
	} else {
		s.ct.Status.NextCrawlTime = &metav1.Time{Time: next}
	}
	if !due {
		if !next.IsZero() {
			s.requeueAfter(next.Sub(s.now))
		}
		return true, nil
	}
	if own := r.Queue.Running(s.ct.UID); own != nil {
		// The status is behind the cluster (a stale cache, or a crash
		// between creating the Pod and recording it): adopt the run,
		// unless its start stopped before the token Secret, in which case
		// the Pod is gone now and the run is started afresh below.
		dropped, err := r.dropTokenless(ctx, own)
		if err != nil {
			return false, err
		}
		if !dropped {
			adoptRun(&s.ct.Status, own)
			s.active = own
			return true, nil
		}
	}
	nodes, err := r.usableNodes(ctx)
	if err != nil {
		return false, err
	}
	key := client.ObjectKeyFromObject(s.ct)
	pod := types.NamespacedName{Namespace: s.ct.Namespace, Name: crawlpod.PodName(s.ct.Name, s.ct.Status.Runs+1)}
	d, pos := r.Queue.Book(crawlqueue.Waiter{
		Target: key,
		Due:    dueSince(s.ct, next),
		Host:   crawlpod.HostHash(s.site.Host),
		Site:   s.site.String(),
		Node:   s.ct.Status.EgressNodeName,
	}, pod, s.ct.UID, nodes)
	if d.Wait != 0 {
		s.queued = true
		s.verdict.wait = r.waitReason(s, d, pos)
		return true, nil
	}
	return true, r.createRun(ctx, s, d.Node)
}

// dueSince is when a due crawl became due, which orders the queue: the
// scheduled time, or the target's creation for a crawl due at once (the
// first one, or one requested).
func dueSince(ct *crawlv1.CrawlTarget, next time.Time) time.Time {
	if next.IsZero() {
		return ct.CreationTimestamp.Time
	}
	return next
}

// waitReason says why a target waits and where it stands in the queue.
// The position is the one at this reconcile: waiting targets are not
// reconciled again until they can start, so it is never rewritten as the
// queue moves (a status write per waiting target per crawl would cost
// more than the queue itself); the metrics give the live picture.
func (r *CrawlTargetReconciler) waitReason(s *targetScope, d crawlqueue.Decision, pos crawlqueue.Position) reason {
	where := fmt.Sprintf("; position %d of %d in the crawl queue (oldest due first)", pos.N, pos.Of)
	switch d.Wait {
	case crawlqueue.NoNode:
		return reason{crawlv1.ReasonNoEgressNode,
			fmt.Sprintf("no usable egress node: need a Ready, schedulable Node labelled %s whose IPv4 ExternalIP is published (--expected-egress-ips), passes the FCrDNS self-check and is what sites see (not quarantined after an EgressAddressMismatch)",
				labels.FormatLabels(r.Egress.Selector.Labels())) + where}
	case crawlqueue.HostBusy:
		return reason{crawlv1.ReasonWaitingForCapacity,
			fmt.Sprintf("host %s is being crawled by Pod %s; one crawl per host at a time", s.site.Host, d.HostPod) + where}
	case crawlqueue.NodeFull:
		return reason{crawlv1.ReasonWaitingForCapacity,
			fmt.Sprintf("egress node %s (%s), the site's source IP, runs %d crawls", d.Node.Name, d.Node.IP, d.Node.Slots(r.MaxCrawlsPerNode)) + where}
	case crawlqueue.AllFull:
		return reason{crawlv1.ReasonWaitingForCapacity, fmt.Sprintf("all egress nodes run %d crawls", r.MaxCrawlsPerNode) + where}
	default:
		return reason{crawlv1.ReasonWaitingForCapacity, "older targets in the crawl queue take the free slots first" + where}
	}
}

// usableNodes are the egress nodes that may take crawls now, from the
// cache, less those in quarantine.
func (r *CrawlTargetReconciler) usableNodes(ctx context.Context) ([]egress.Node, error) {
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.MatchingLabels(r.Egress.Selector.Labels())); err != nil {
		return nil, fmt.Errorf("list egress nodes: %w", err)
	}
	return r.Quarantine.Apply(r.Egress.MayCrawl(nodes.Items), r.Clock.Now()), nil
}

// createRun creates the run's Pod on the node the queue gave it, then its
// token Secret, owned by the Pod (crawlpod.TokenSecret). Both names derive
// from the run number, so repeating this after a crash adopts what exists.
// The slot the queue handed out follows the Pod that exists at the end, or
// goes back.
//
// The Pod comes first so that the Secret can name it as its owner. The
// kubelet does not start the crawler before the Secret exists (the token
// is a required secretKeyRef: it retries), and the Secret follows within
// one API call. A Pod whose Secret could not be made is deleted at once:
// its token died with this attempt, so it could never report, and the run
// is not recorded, so the retry starts it afresh under the same name.
func (r *CrawlTargetReconciler) createRun(ctx context.Context, s *targetScope, node egress.Node) (err error) {
	st := &s.ct.Status
	run := crawlpod.Run{Target: s.ct, Site: s.site, Number: st.Runs + 1, Node: node.Name, NodeIP: node.IP}
	var created *corev1.Pod
	defer func() {
		if created != nil {
			r.Queue.Created(created)
		} else {
			r.Queue.Release(types.NamespacedName{Namespace: s.ct.Namespace, Name: crawlpod.PodName(s.ct.Name, run.Number)})
		}
	}()
	if requested, ok := crawlRequested(s.ct); ok {
		run.RequestedAt = requested
	}
	if err := r.ensureNetworkPolicy(ctx, s.ct.Namespace); err != nil {
		return err
	}
	token, sum, err := crawlpod.NewToken()
	if err != nil {
		return err
	}
	run.TokenSHA256 = sum
	pod := crawlpod.Pod(run, r.Pod)
	if s.note != "" {
		// Only abandonLostRun leaves a note for a reconcile that starts a
		// crawl.
		pod.Annotations[AnnotationRetryOfLostRun] = s.note
	}
	err = r.Create(ctx, pod)
	if apierrors.IsAlreadyExists(err) {
		// A previous attempt created it: adopt it if it is this target's
		// and got its token.
		existing, err := r.runPod(ctx, s.ct, pod.Name)
		if err != nil {
			return err
		}
		if existing == nil {
			return fmt.Errorf("crawler Pod %s was deleted while it was being created; retrying", pod.Name)
		}
		dropped, err := r.dropTokenless(ctx, existing)
		if err != nil {
			return err
		}
		if dropped {
			return fmt.Errorf("crawler Pod %s had no token Secret (its start was interrupted) and was deleted; retrying", pod.Name)
		}
		created = existing
		r.adoptExisting(s, existing)
		return nil
	}
	if err != nil {
		return fmt.Errorf("create crawler Pod: %w", err)
	}
	if err := r.createToken(ctx, run, pod, token); err != nil {
		if derr := r.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(derr) != nil {
			// The next attempt finds the Pod without its Secret and
			// deletes it then (dropTokenless).
			err = errors.Join(err, fmt.Errorf("delete crawler Pod %s left without its token Secret: %w", pod.Name, derr))
		}
		r.Queue.Forget(client.ObjectKeyFromObject(pod))
		return err
	}
	created = pod
	adoptRun(st, pod)
	s.active = pod
	s.onCommit(func() {
		crawlsStarted.Inc()
		r.Recorder.Eventf(s.ct, pod, corev1.EventTypeNormal, "CrawlStarted", "Crawl",
			"crawl %d of %s started on egress node %s (%s)", run.Number, s.site, node.Name, node.IP)
	})
	return nil
}

// adoptRun makes the status describe the run of pod: its number, egress
// node and the crawl request it answers.
func adoptRun(st *crawlv1.CrawlTargetStatus, pod *corev1.Pod) {
	st.Runs = crawlpod.RunNumber(pod)
	st.EgressNodeName = pod.Annotations[crawlpod.AnnotationEgressNode]
	st.EgressIP = pod.Annotations[crawlpod.AnnotationEgressIP]
	if v := pod.Annotations[crawlpod.AnnotationRequestedAt]; v != "" {
		st.LastHandledRequestedAt = v
	}
	st.NextCrawlTime = nil
}

// adoptExisting makes a run Pod that an earlier attempt created the
// target's current run; a finished one is recorded by the next reconcile.
func (r *CrawlTargetReconciler) adoptExisting(s *targetScope, pod *corev1.Pod) {
	adoptRun(&s.ct.Status, pod)
	if crawlpod.Finished(pod) {
		s.requeueAfter(conflictRequeue)
	} else {
		s.active = pod
	}
}

// errForeignPod says that a run's Pod name is taken by a Pod the target
// does not control.
var errForeignPod = errors.New("exists and does not belong to this CrawlTarget")

// runPod reads the Pod of a run from the API server: nil when there is
// none, errForeignPod when the name is taken by a Pod that is not the
// target's.
func (r *CrawlTargetReconciler) runPod(ctx context.Context, ct *crawlv1.CrawlTarget, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ct.Namespace, Name: name}, pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get crawler Pod %s: %w", name, err)
	}
	if !metav1.IsControlledBy(pod, ct) {
		return nil, fmt.Errorf("pod %s %w", name, errForeignPod)
	}
	return pod, nil
}

// createToken creates the token Secret of pod, which this attempt has just
// created. The manager never reads a Secret (its RBAC grants Secrets
// create and delete only, so it cannot read anyone's), which leaves one
// case to settle without reading: a Secret of that name exists already.
// It cannot be this Pod's, as only the attempt that created a Pod makes
// its Secret: it is a namesake's, left by a run Pod of the same name that
// is gone (a deleted and recreated target; the garbage collector removes
// such a Secret, but may not have yet), or not the operator's. Its token
// opens nothing, and the Pod must not start with it: it is deleted and the
// Secret created again with this run's token.
//
// Deriving the token instead (an HMAC of the run's identity under a key
// the manager holds) would also avoid the read, but every replica would
// then need the same key without reading a Secret, and a leaked key would
// open every run at once; a random token per run has nothing to share.
func (r *CrawlTargetReconciler) createToken(ctx context.Context, run crawlpod.Run, pod *corev1.Pod, token string) error {
	secret := crawlpod.TokenSecret(run, pod, token)
	err := r.Create(ctx, secret)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create run token Secret: %w", err)
		}
		return nil
	}
	stale := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name}}
	if err := r.Delete(ctx, stale); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete stale run token Secret: %w", err)
	}
	secret = crawlpod.TokenSecret(run, pod, token)
	if err := r.Create(ctx, secret); err != nil {
		return fmt.Errorf("create run token Secret after deleting a stale one: %w", err)
	}
	log.FromContext(ctx).Info("replaced a stale run token Secret", "secret", secret.Name)
	return nil
}

// dropTokenless deletes pod, a run Pod found rather than created by this
// attempt, when it has no token Secret: an earlier start stopped between
// creating the Pod and its Secret. Its token is known to no one, so its
// crawler could never start, let alone report; adopted, it would hold its
// host and node until it counted as stuck. It is deleted with grace period
// 0 (no container of it can have run), so that the run can start again at
// once under the same name. A finished Pod is kept: it is adopted and its
// outcome recorded, and it needs no token any more. So is one being
// deleted already (a stuck run's, whose Secret went with its run): it is
// given its grace period, and the target waits for it as before.
//
// Whether the Secret exists is asked without reading it: a dry-run create
// is refused with AlreadyExists exactly when it does, and needs the create
// right only.
func (r *CrawlTargetReconciler) dropTokenless(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if crawlpod.Finished(pod) || pod.DeletionTimestamp != nil {
		return false, nil
	}
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: crawlpod.SecretName(pod.Name)}}
	err := r.Create(ctx, probe, client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check the token Secret of crawler Pod %s: %w", pod.Name, err)
	}
	uid := pod.UID
	if err := r.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("delete crawler Pod %s without its token Secret: %w", pod.Name, err)
	}
	r.Queue.Forget(client.ObjectKeyFromObject(pod))
	log.FromContext(ctx).Info("deleted a crawler Pod whose start stopped before its token Secret", "pod", pod.Name)
	return true, nil
}

// pruneFinished keeps the newest finished Pods for their logs and deletes
// older ones (their token Secrets went when their runs were settled).
func (r *CrawlTargetReconciler) pruneFinished(ctx context.Context, pods []corev1.Pod) error {
	var finished []*corev1.Pod
	for i := range pods {
		if crawlpod.Finished(&pods[i]) && pods[i].DeletionTimestamp == nil {
			finished = append(finished, &pods[i])
		}
	}
	sort.Slice(finished, func(i, j int) bool { return crawlpod.RunNumber(finished[i]) > crawlpod.RunNumber(finished[j]) })
	for i, p := range finished {
		if i < finishedPodsKept {
			continue
		}
		if err := r.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete old crawler Pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// deleteToken deletes a settled run's token Secret by name, which takes
// the delete right only. The garbage collector would remove it with its
// Pod, but a finished Pod is kept for its logs (finishedPodsKept) and the
// token should die with the run, not with the Pod some runs later.
func (r *CrawlTargetReconciler) deleteToken(ctx context.Context, ct *crawlv1.CrawlTarget, podName string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ct.Namespace, Name: crawlpod.SecretName(podName)}}
	if err := r.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete run token Secret: %w", err)
	}
	return nil
}

// queueResync is how often the crawl queue is planned again with nothing
// having happened: the safety net for changes that come with no event (an
// egress node whose FCrDNS check now passes, a Pod the cache never
// showed). It costs no API request: the plan is made in memory and only
// targets that can start are woken.
const queueResync = 30 * time.Second

// SetupWithManager registers the reconciler and what wakes it.
func (r *CrawlTargetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := indexClusterWide(context.Background(), mgr.GetCache(), &crawlv1.CrawlTarget{}, targetsBySiteField,
		func(o client.Object) []string {
			s, err := site.Parse(o.(*crawlv1.CrawlTarget).Spec.URL)
			if err != nil {
				return nil
			}
			return []string{s.String()}
		}); err != nil {
		return err
	}
	if r.Queue == nil {
		r.Queue = crawlqueue.New(r.MaxCrawlsPerNode)
	}
	if r.Quarantine == nil {
		r.Quarantine = &egress.Quarantine{}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&crawlv1.CrawlTarget{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// The reconciler creates its Pods and SiteIndexes itself, so their
		// creation is no news to it; reacting would only reconcile again
		// against a cache that has not seen the status just written.
		Owns(&corev1.Pod{}, builder.WithPredicates(notCreated)).
		Owns(&crawlv1.SiteIndex{}, builder.WithPredicates(notCreated)).
		Watches(&crawlv1.Exclusion{}, handler.EnqueueRequestsFromMapFunc(r.targetsOfExclusion)).
		// When a site's owner goes away or moves to another site, its
		// duplicates take over.
		Watches(&crawlv1.CrawlTarget{}, r.siteOwnerChanges()).
		// The crawl queue's ledger follows the crawler Pods, and its
		// waiters are woken when a Pod frees a slot or a node changes.
		Watches(&corev1.Pod{}, r.podsToQueue()).
		Watches(&corev1.Node{}, r.nodesToQueue()).
		WatchesRawSource(source.Func(r.queueWakeups))
	if r.Egress.Changes != nil {
		// A node that passes its FCrDNS self-check changes no Node
		// object: the checker says so.
		b = b.WatchesRawSource(source.Channel(r.Egress.Changes, r.nodesToQueue()))
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Named("crawltarget").
		Complete(r)
}

// notCreated passes every event but a creation.
var notCreated = predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}

// podsToQueue feeds the crawl queue's ledger with every crawler Pod the
// operator manages, as the cache shows it.
func (r *CrawlTargetReconciler) podsToQueue() handler.EventHandler {
	managed := func(o client.Object) (*corev1.Pod, bool) {
		pod, ok := o.(*corev1.Pod)
		return pod, ok && pod.Labels[crawlpod.LabelManagedBy] == crawlpod.ManagedByValue
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := managed(e.Object); ok {
				r.Queue.Observe(pod)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := managed(e.ObjectNew); ok {
				r.Queue.Observe(pod)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := managed(e.Object); ok {
				r.Queue.Forget(client.ObjectKeyFromObject(pod))
			}
		},
	}
}

// nodesToQueue tells the crawl queue which egress nodes may take crawls
// whenever an egress Node changes, or its FCrDNS self-check result, and
// wakes the targets crawling on a node whose readiness changed or that
// went, so a lost node's crawls are timed from the change.
func (r *CrawlTargetReconciler) nodesToQueue() handler.EventHandler {
	update := func(ctx context.Context) {
		nodes, err := r.usableNodes(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "crawl queue: list egress nodes")
			return
		}
		r.Queue.SetNodes(nodes)
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			update(ctx)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			update(ctx)
			if readinessChanged(e) {
				addAll(q, r.targetsOnNode(e.ObjectNew.GetName()))
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.Quarantine.Forget(e.Object.GetName())
			update(ctx)
			addAll(q, r.targetsOnNode(e.Object.GetName()))
		},
		GenericFunc: func(ctx context.Context, _ event.GenericEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			update(ctx)
		},
	}
}

// queueWakeups sends the crawl queue's wake-ups to the work queue, and
// plans the queue again every queueResync until the controller stops.
func (r *CrawlTargetReconciler) queueWakeups(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.Queue.SetWake(func(t types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: t}) })
	go func() {
		tick := time.NewTicker(queueResync)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				r.Queue.SetWake(nil)
				return
			case <-tick.C:
				if nodes, err := r.usableNodes(ctx); err == nil {
					r.Queue.SetNodes(nodes)
				}
				r.Queue.Resync()
			}
		}
	}()
	return nil
}

func addAll(q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
	for _, req := range reqs {
		q.Add(req)
	}
}

func (r *CrawlTargetReconciler) targetsOfExclusion(ctx context.Context, o client.Object) []reconcile.Request {
	ex := o.(*crawlv1.Exclusion)
	targets, err := targetsInDomain(ctx, r.Client, ex.Spec.Domain)
	if err != nil {
		log.FromContext(ctx).Error(err, "map Exclusion to CrawlTargets", "exclusion", ex.Name)
		return nil
	}
	return requestsFor(targets)
}

// siteOwnerChanges enqueues the targets of a site whose set of targets
// changed: on deletion, and on a spec.url change for both the old and the
// new site.
func (r *CrawlTargetReconciler) siteOwnerChanges() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		for _, o := range objs {
			for _, req := range r.targetsOfSameSite(ctx, o) {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldCT, newCT := e.ObjectOld.(*crawlv1.CrawlTarget), e.ObjectNew.(*crawlv1.CrawlTarget)
			if oldCT.Spec.URL != newCT.Spec.URL || !newCT.DeletionTimestamp.IsZero() {
				enqueue(ctx, q, oldCT, newCT)
			}
		},
	}
}

func (r *CrawlTargetReconciler) targetsOfSameSite(ctx context.Context, o client.Object) []reconcile.Request {
	s, err := site.Parse(o.(*crawlv1.CrawlTarget).Spec.URL)
	if err != nil {
		return nil
	}
	var list crawlv1.CrawlTargetList
	if err := r.List(ctx, &list, client.MatchingFields{targetsBySiteField: s.String()}); err != nil {
		log.FromContext(ctx).Error(err, "map CrawlTarget to same-site targets")
		return nil
	}
	return requestsFor(list.Items)
}
