package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

// rendered is the part of a CrawlTarget's status a reconcile derives from
// what its steps found: the kstatus conditions, Crawling and the phase.
type rendered struct {
	ready       reason
	readyStatus metav1.ConditionStatus
	// stalled and reconciling are removed when not set.
	stalled, reconciling reason
	crawling             reason
	crawlingStatus       metav1.ConditionStatus
	phase                crawlv1.CrawlPhase
}

// render decides the conditions and phase. It is pure: the truth table of
// a CrawlTarget's states (crawltarget_status_test.go) is its test.
func render(before *crawlv1.CrawlTarget, s *targetScope) rendered {
	ready, stalled, reconciling := readiness(before, s)
	out := rendered{ready: ready, readyStatus: metav1.ConditionFalse, stalled: stalled, reconciling: reconciling,
		crawling: reason{crawlv1.ReasonIdle, "no crawl is running"}, crawlingStatus: metav1.ConditionFalse}
	if ready.Reason == crawlv1.ReasonCrawled {
		out.readyStatus = metav1.ConditionTrue
	}
	switch st := &s.ct.Status; {
	case s.active != nil:
		out.crawling, out.crawlingStatus = reason{crawlv1.ReasonCrawling,
			fmt.Sprintf("crawl %d runs in Pod %s on %s (%s)", st.Runs, s.active.Name, st.EgressNodeName, st.EgressIP)}, metav1.ConditionTrue
	case s.verdict.wait.set():
		out.crawling = s.verdict.wait
	}
	if note := crawlNote(s); note != "" {
		out.crawling.Message += "; " + note
	}
	out.phase = phase(s, ready)
	return out
}

// renderStatus writes the rendered conditions and phase into the status. A
// reconcile that failed part-way did not observe the run, so it leaves
// Crawling, Stalled, the phase and observedGeneration as they were and
// only says that it failed: Ready Unknown and Reconciling True, with the
// error (as Flux does). What the steps before the failure recorded stays.
func (r *CrawlTargetReconciler) renderStatus(before *crawlv1.CrawlTarget, s *targetScope, stepErr error) {
	ct := s.ct
	st := &ct.Status
	if stepErr != nil {
		failed := reason{crawlv1.ReasonReconcileError, stepErr.Error()}
		if setCondition(&st.Conditions, before.Status.ObservedGeneration, crawlv1.ConditionReady, metav1.ConditionUnknown, failed) {
			s.onCommit(func() { r.eventForReady(ct, failed) })
		}
		setCondition(&st.Conditions, before.Status.ObservedGeneration, crawlv1.ConditionReconciling, metav1.ConditionTrue, failed)
		st.Phase = before.Status.Phase
		st.ObservedGeneration = before.Status.ObservedGeneration
		return
	}
	out := render(before, s)
	st.ObservedGeneration = ct.Generation
	if setCondition(&st.Conditions, ct.Generation, crawlv1.ConditionReady, out.readyStatus, out.ready) {
		s.onCommit(func() { r.eventForReady(ct, out.ready) })
	}
	setOrRemove(&st.Conditions, ct.Generation, crawlv1.ConditionStalled, out.stalled)
	setOrRemove(&st.Conditions, ct.Generation, crawlv1.ConditionReconciling, out.reconciling)
	setCondition(&st.Conditions, ct.Generation, crawlv1.ConditionCrawling, out.crawlingStatus, out.crawling)
	st.Phase = out.phase
}

// readiness decides the Ready, Stalled and Reconciling reasons; an empty
// Stalled or Reconciling reason removes that condition. Until the first
// successful crawl, waiting for capacity shows as Ready=False with reason
// WaitingForCapacity, so the queue is visible.
func readiness(before *crawlv1.CrawlTarget, s *targetScope) (ready, stalled, reconciling reason) {
	st := &s.ct.Status
	succeeded := st.LastCrawlTime != nil && st.ConsecutiveFailures == 0
	switch {
	case s.verdict.block.set():
		return s.verdict.block, s.verdict.block, reason{}
	case succeeded:
		// A target with a good index stays Ready while it is recrawled or
		// waits for a slot; the Crawling condition and phase tell those.
		msg := fmt.Sprintf("%d pages indexed at %s", st.PagesIndexed, st.LastCrawlTime.UTC().Format(time.RFC3339))
		switch {
		case s.active != nil:
			msg += "; recrawl running"
		case s.verdict.wait.set():
			msg += "; recrawl waiting: " + s.verdict.wait.Message
		case s.ct.Spec.CrawlPolicyOrDefault() == crawlv1.CrawlPolicySuspended:
			msg += "; suspended"
		case st.NextCrawlTime != nil:
			msg += "; next crawl at " + st.NextCrawlTime.UTC().Format(time.RFC3339)
		case s.ct.Spec.CrawlPolicyOrDefault() == crawlv1.CrawlPolicyOnRequest:
			msg += "; next crawl on request"
		}
		return reason{crawlv1.ReasonCrawled, msg}, reason{}, reason{}
	case s.active != nil:
		r := reason{crawlv1.ReasonCrawling, fmt.Sprintf("crawl %d of %s is running", st.Runs, st.Site)}
		return r, reason{}, r
	case s.verdict.wait.set():
		return s.verdict.wait, reason{}, s.verdict.wait
	case st.ConsecutiveFailures > 0:
		msg := s.failure
		if msg == "" {
			// Keep the message of the failure recorded earlier.
			if c := meta.FindStatusCondition(before.Status.Conditions, crawlv1.ConditionReady); c != nil && c.Reason == crawlv1.ReasonCrawlFailed {
				msg = c.Message
			}
		} else {
			msg = fmt.Sprintf("crawl %d failed: %s", st.Runs, msg)
		}
		retry := "retry"
		if st.NextCrawlTime != nil {
			retry = "retry at " + st.NextCrawlTime.UTC().Format(time.RFC3339)
		}
		return reason{crawlv1.ReasonCrawlFailed, msg}, reason{}, reason{crawlv1.ReasonCrawlFailed, retry + " (" + fmt.Sprint(st.ConsecutiveFailures) + " failures in a row)"}
	case s.ct.Spec.CrawlPolicyOrDefault() == crawlv1.CrawlPolicySuspended:
		return reason{crawlv1.ReasonSuspended, "suspended before its first crawl"}, reason{}, reason{}
	case s.ct.Spec.CrawlPolicyOrDefault() == crawlv1.CrawlPolicyOnRequest && st.NextCrawlTime == nil:
		return reason{crawlv1.ReasonAwaitingRequest, "crawlPolicy is OnRequest and no crawl was requested yet (annotation " + crawlv1.RequestedAtAnnotation + ")"}, reason{}, reason{}
	default:
		r := reason{crawlv1.ReasonPending, "waiting for the first crawl"}
		return r, reason{}, r
	}
}

func phase(s *targetScope, ready reason) crawlv1.CrawlPhase {
	switch {
	case ready.Reason == crawlv1.ReasonExcluded:
		return crawlv1.PhaseExcluded
	case ready.Reason == crawlv1.ReasonDuplicateSite:
		return crawlv1.PhaseDuplicate
	case s.verdict.block.set():
		return crawlv1.PhaseFailed
	case s.active != nil:
		return crawlv1.PhaseRunning
	case s.verdict.wait.set():
		return crawlv1.PhaseWaiting
	case s.ct.Status.ConsecutiveFailures > 0:
		return crawlv1.PhaseFailed
	case s.ct.Status.LastCrawlTime != nil:
		return crawlv1.PhaseSucceeded
	default:
		return crawlv1.PhasePending
	}
}

// eventForReady reports Ready transitions that no step reported already
// and that need someone's attention. Waiting for a slot and being
// suspended are the normal states of most targets at scale: their Ready
// condition says so, and an Event each would put one more object per
// target into etcd (20,000 at once when 20,000 targets are applied).
func (r *CrawlTargetReconciler) eventForReady(ct *crawlv1.CrawlTarget, ready reason) {
	switch ready.Reason {
	case crawlv1.ReasonExcluded, crawlv1.ReasonDuplicateSite, crawlv1.ReasonNoEgressNode, crawlv1.ReasonInvalidURL,
		crawlv1.ReasonSiteIndexConflict, crawlv1.ReasonReconcileError:
		r.Recorder.Eventf(ct, nil, corev1.EventTypeWarning, ready.Reason, "Reconcile", "%s", ready.Message)
	}
}

func setOrRemove(conds *[]metav1.Condition, generation int64, typ string, r reason) {
	if !r.set() {
		meta.RemoveStatusCondition(conds, typ)
		return
	}
	setCondition(conds, generation, typ, metav1.ConditionTrue, r)
}
