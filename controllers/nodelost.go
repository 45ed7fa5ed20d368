package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// ReasonEgressNodeLost is the Event reason of a crawl given up because its
// egress node is lost (--egress-node-lost-after): Warning on the Node,
// which someone has to bring back, and Normal on the CrawlTarget, whose
// site did nothing wrong and whose owner has nothing to do.
const ReasonEgressNodeLost = "EgressNodeLost"

// AnnotationRetryOfLostRun is put on the Pod of a crawl started again
// after its previous run was lost with its node, with the words of why:
// the Crawling condition shows them for as long as that run goes on, not
// just until the next reconcile.
const AnnotationRetryOfLostRun = "crawl.lohisoft.com/retry-of-lost-run"

// lostAfter is the grace of a node that is not Ready.
func (r *CrawlTargetReconciler) lostAfter() time.Duration {
	if r.NodeLostAfter > 0 {
		return r.NodeLostAfter
	}
	return egress.DefaultLostAfter
}

// runNode is the node a run's Pod is on: the one it is bound to or,
// before the scheduler binds it, the one it is pinned to. A Pod pinned to
// a lost node would never be scheduled, so it is lost too.
func runNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	return pod.Annotations[crawlpod.AnnotationEgressNode]
}

// nodeLoss says whether the node of an unfinished run's Pod is lost, from
// the cache. The cache holds egress Nodes only, so a Node no longer
// labelled as one reads as gone: its address is no longer published, and
// a crawl there must not go on either.
func (r *CrawlTargetReconciler) nodeLoss(ctx context.Context, s *targetScope, pod *corev1.Pod) (egress.Loss, error) {
	if crawlpod.Finished(pod) {
		return egress.Loss{}, nil
	}
	return r.lossOfNode(ctx, s, runNode(pod))
}

// lossOfNode says whether the egress node name is lost at this reconcile;
// no name, no loss.
func (r *CrawlTargetReconciler) lossOfNode(ctx context.Context, s *targetScope, name string) (egress.Loss, error) {
	if name == "" {
		return egress.Loss{}, nil
	}
	n := &corev1.Node{}
	err := r.Get(ctx, client.ObjectKey{Name: name}, n)
	if apierrors.IsNotFound(err) {
		n = nil
	} else if err != nil {
		return egress.Loss{}, fmt.Errorf("get egress node %s: %w", name, err)
	}
	return egress.NodeLoss(name, n, s.now, r.lostAfter()), nil
}

// abandonLostRun gives up a run whose node is lost. It is the node's
// fault, not the site's: as for an egress address mismatch, no failure is
// counted, a crawl request the run answered stays open, and the run is
// settled so that startCrawl starts the crawl again at once, on a node
// that may take crawls (a lost node may not: egress.Policy.MayCrawl).
//
// The Pod is deleted with grace period 0. A graceful delete would wait
// for a kubelet that is gone: the Pod would stay Terminating for ever,
// hold its host in the crawl queue, and be adopted again as the run.
// Forcing it is safe because nothing of the old run can write once it is
// settled: the results endpoint accepts a token only for a live Pod that
// is its target's current run (reportendpoint.Server.authenticate and
// target; README "What a run token can change"), and the run number moves
// on now, while the token Secret goes with the settled run. A kubelet
// that comes back kills the containers of Pods no longer in the API. What
// the forced delete cannot stop is a crawler on a node cut off from the
// API server but not from the sites: it may finish its crawl (at most
// spec.maxPages pages, at the site's crawl delay) before its kubelet,
// back or past activeDeadlineSeconds, kills it; nothing it sends counts.
func (r *CrawlTargetReconciler) abandonLostRun(ctx context.Context, s *targetScope, pod *corev1.Pod, loss egress.Loss) error {
	if err := r.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete crawler Pod of a lost egress node: %w", err)
	}
	// The cache shows the deletion a moment later; until then the queue
	// would count the Pod as the target's running crawl and its host as
	// busy, and the retry below would wait for it.
	r.Queue.Forget(client.ObjectKeyFromObject(pod))
	reopenRequest(&s.ct.Status, pod)
	r.settleLostRun(ctx, s, pod.Name, runNode(pod), loss)
	return nil
}

// settleLostRun records the current run as lost with its node, not as the
// site's failure, and says so once the status lands: in the Crawling
// condition, an Event on the Node and one on the target, and the metric.
func (r *CrawlTargetReconciler) settleLostRun(ctx context.Context, s *targetScope, podName, node string, loss egress.Loss) {
	run := s.ct.Status.Runs
	s.note = fmt.Sprintf("crawl %d was lost: %s, longer than %s; retried on another egress node, not counted as a failure", run, loss.Why, r.lostAfter())
	regarding := r.nodeObject(ctx, node)
	related := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ct.Namespace, Name: podName}}
	s.onCommit(func() {
		crawlsLost.WithLabelValues(node).Inc()
		r.Recorder.Eventf(regarding, related, corev1.EventTypeWarning, ReasonEgressNodeLost, "Crawl",
			"crawler Pod %s/%s deleted: %s, longer than %s", s.ct.Namespace, podName, loss.Why, r.lostAfter())
		r.Recorder.Eventf(s.ct, related, corev1.EventTypeNormal, ReasonEgressNodeLost, "Crawl",
			"crawl %d lost with its node: %s; retried on another egress node", run, loss.Why)
	})
}

// crawlNote is what the Crawling condition adds about the run's node:
// this reconcile's finding, or why the running crawl was started again.
func crawlNote(s *targetScope) string {
	if s.note != "" || s.active == nil {
		return s.note
	}
	return s.active.Annotations[AnnotationRetryOfLostRun]
}

// noteNodeNotReady says, on a run whose node is not Ready but within the
// grace, when it will be given up, and comes back then.
func (r *CrawlTargetReconciler) noteNodeNotReady(s *targetScope, loss egress.Loss) {
	if loss.In <= 0 {
		return
	}
	s.note = fmt.Sprintf("%s: unless it is Ready by %s, the crawl is retried on another egress node",
		loss.Why, s.now.Add(loss.In).UTC().Format(time.RFC3339))
	s.requeueAfter(loss.In)
}

// reopenRequest leaves the crawl request a run was answering unanswered,
// for a run that ended through no fault of the site's: its retry answers it.
func reopenRequest(st *crawlv1.CrawlTargetStatus, pod *corev1.Pod) {
	if v := pod.Annotations[crawlpod.AnnotationRequestedAt]; v != "" && st.LastHandledRequestedAt == v {
		st.LastHandledRequestedAt = ""
	}
}

// targetsOnNode wakes the targets whose crawls run on a node, when the
// node changes or goes: their reconcile decides whether the crawl is lost,
// or when to look again.
func (r *CrawlTargetReconciler) targetsOnNode(node string) []reconcile.Request {
	var out []reconcile.Request
	for _, t := range r.Queue.TargetsOn(node) {
		out = append(out, reconcile.Request{NamespacedName: t})
	}
	return out
}

// readinessChanged passes a Node update whose Ready status changed, which
// is what egress.NodeLoss reads; the kubelet's heartbeats change nothing.
func readinessChanged(e event.UpdateEvent) bool {
	oldN, ok1 := e.ObjectOld.(*corev1.Node)
	newN, ok2 := e.ObjectNew.(*corev1.Node)
	return ok1 && ok2 && readyStatus(oldN) != readyStatus(newN)
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
