package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// Event reasons of the egress check (--egress-echo-url): on the Node whose
// address sites would not see as published (Warning) and again when a
// crawl there verifies it (Normal), and on the CrawlTarget whose crawl was
// moved to another node (Normal: the site did nothing wrong, and its owner
// has nothing to do).
const (
	ReasonEgressAddressMismatch = "EgressAddressMismatch"
	ReasonEgressAddressVerified = "EgressAddressVerified"
)

// recordEgressUnverified records a run whose crawler could not verify that
// sites see its node's published address, and so sent the site nothing.
// It is the node's fault, not the site's: the node is quarantined, no
// failure is counted against the target (its retry backoff and Ready stay
// as they were) and the run is settled, so the steps after this one start
// the crawl again at once, on another node. A crawl request the run was
// answering stays unanswered until then.
func (r *CrawlTargetReconciler) recordEgressUnverified(ctx context.Context, s *targetScope, pod *corev1.Pod) {
	node, published := pod.Annotations[crawlpod.AnnotationEgressNode], pod.Annotations[crawlpod.AnnotationEgressIP]
	observed := observedEgress(pod)
	started, length := r.Quarantine.Mismatch(node, pod.Name, published, observed, s.now)
	st := &s.ct.Status
	reopenRequest(st, pod)
	what := egressProblem(pod, observed, published)
	regarding := r.nodeObject(ctx, node)
	run := st.Runs
	s.onCommit(func() {
		if started {
			r.Recorder.Eventf(regarding, pod, corev1.EventTypeWarning, ReasonEgressAddressMismatch, "Quarantine",
				"crawler Pod %s/%s: %s; no crawls on %s for %s, then one at a time until one verifies the address",
				pod.Namespace, pod.Name, what, node, length.Round(time.Second))
		}
		r.Recorder.Eventf(s.ct, pod, corev1.EventTypeNormal, ReasonEgressAddressMismatch, "Crawl",
			"crawl %d sent nothing to the site: on egress node %s, %s; retried on another egress node", run, node, what)
	})
}

// noteEgressVerified lifts the quarantine of the run's node when the run
// verified the node's published address and started after the quarantine
// ended (egress.Quarantine.Verified).
func (r *CrawlTargetReconciler) noteEgressVerified(ctx context.Context, s *targetScope, run string, started time.Time) {
	st, ip := &s.ct.Status, s.index.Status.EgressIP
	if ip == "" || s.index.Status.Run != run || ip != st.EgressIP || started.IsZero() {
		return
	}
	if !r.Quarantine.Verified(st.EgressNodeName, run, ip, started) {
		return
	}
	regarding, node := r.nodeObject(ctx, st.EgressNodeName), st.EgressNodeName
	s.onCommit(func() {
		r.Recorder.Eventf(regarding, nil, corev1.EventTypeNormal, ReasonEgressAddressVerified, "Quarantine",
			"crawl %s/%s verified that sites see %s, the published address: %s takes crawls again", s.ct.Namespace, run, ip, node)
	})
}

// nodeObject is the Node an Event is about, from the cache, so the Event
// carries its UID and `kubectl describe node` shows it; a Node the cache
// does not have is named only.
func (r *CrawlTargetReconciler) nodeObject(ctx context.Context, name string) *corev1.Node {
	n := &corev1.Node{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	return n
}

// egressProblem says in words what the crawler found.
func egressProblem(pod *corev1.Pod, observed, published string) string {
	if observed != "" {
		return fmt.Sprintf("sites would see %s, not the published %s", observed, published)
	}
	return fmt.Sprintf("the address sites see could not be verified as the published %s (%s)", published, podFailure(pod))
}

// observedEgress is the address the crawler's echo reported, from the
// fields of its last log line (runreport.LogObservedEgressIP), or "". The
// crawler is not trusted to write anything but an IPv4 address there.
func observedEgress(pod *corev1.Pod) string {
	var record map[string]any
	if json.Unmarshal([]byte(logTail(terminationMessage(pod))), &record) != nil {
		return ""
	}
	s, _ := record[runreport.LogObservedEgressIP].(string)
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return ""
	}
	return a.String()
}
