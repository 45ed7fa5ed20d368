package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/controllers"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// failEgress ends a crawler Pod as the crawler does when the echo service
// reports observed ("" for no usable answer) instead of its node's
// published address: exit code 3, both addresses in its last log line.
func failEgress(t *testing.T, pod *corev1.Pod, observed string) {
	t.Helper()
	published := pod.Annotations[crawlpod.AnnotationEgressIP]
	line := fmt.Sprintf(`{"time":"2026-12-05T10:00:00Z","level":"ERROR","msg":"egress address mismatch: sites would see %s, not the published %s","%s":%q,"%s":%q}`,
		observed, published, runreport.LogExpectedEgressIP, published, runreport.LogObservedEgressIP, observed)
	failWithExitCode(t, pod, runreport.ExitEgressUnverified, `{"level":"INFO","msg":"start"}`+"\n"+line+"\n")
}

// finishVerified delivers a run's final result, verified to leave from its
// node's published address, and ends its Pod, which started at started.
func finishVerified(t *testing.T, op *harness, pod *corev1.Pod, base string, started time.Time) {
	t.Helper()
	setPodPhase(t, pod, corev1.PodRunning, 0)
	if code, body := postReport(t, op, pod, runToken(t, pod), runreport.Report{Final: true, Result: runreport.Crawl{
		Site: base, Robots: runreport.Robots{Status: 404}, Pages: pages(base, 1),
		EgressIP: pod.Annotations[crawlpod.AnnotationEgressIP]}}); code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	fresh := &corev1.Pod{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), fresh); err != nil {
		t.Fatal(err)
	}
	fresh.Status.Phase = corev1.PodSucceeded
	fresh.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "crawler", Image: "crawler:test", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(started.Add(time.Second))},
	}}}
	if err := k8s.Status().Update(context.Background(), fresh); err != nil {
		t.Fatal(err)
	}
}

func nodeOf(pod *corev1.Pod) string { return pod.Annotations[crawlpod.AnnotationEgressNode] }

// mismatchGauge checks crawl_operator_egress_address_mismatch per node.
func mismatchGauge(t *testing.T, want map[string]float64) func() error {
	return func() error {
		m := testutil.Metrics(t, metrics.Registry)
		for node, v := range want {
			series := fmt.Sprintf(`crawl_operator_egress_address_mismatch{node=%q}`, node)
			if got, ok := m[series]; !ok || got != v {
				return fmt.Errorf("%s = %v (exported: %v), want %v", series, got, ok, v)
			}
		}
		return nil
	}
}

// The egress check end to end, as the manager sees it: a crawler that
// finds its node's address is not what sites see quarantines the node,
// the crawl moves to the other node at once without counting against the
// site, the node takes no crawl until its quarantine ends, then one, whose
// verified result puts it back in full use; the SiteIndex records each
// run's verified address.
func TestEgressMismatchQuarantinesTheNode(t *testing.T) {
	ips := map[string]string{"egress-echo-a": "79.139.58.98", "egress-echo-b": "79.139.58.121"}
	for name, ip := range ips {
		createEgressNode(t, name, ip)
	}
	const echoURL = "https://echo.bot.lohisoft.com/ip"
	ns := newNamespace(t)
	op := startOperator(t, operatorOptions{maxPerNode: 2, echoURL: echoURL, namespaces: []string{ns}})
	target := func(name string) *crawlv1.CrawlTarget {
		return createTarget(t, ns, name, "https://"+name+".echo.example.com/")
	}

	// 1. The first crawl's Pod asks the echo for its node's address.
	first := target("first")
	p1 := waitPod(t, first, 1)
	bad := nodeOf(p1)
	good := "egress-echo-a"
	if bad == good {
		good = "egress-echo-b"
	}
	if args := p1.Spec.Containers[0].Args; !slices.Contains(args, "--egress-echo-url="+echoURL) || !slices.Contains(args, "--expect-egress-ip="+ips[bad]) {
		t.Fatalf("crawler args %q: want the echo URL and %s, the address its node %s publishes", args, ips[bad], bad)
	}

	// 2. Sites would see another address: the crawl moves to the other
	// node at once, with no failure counted and no clock step.
	quarantinedAt := op.clock.Now()
	failEgress(t, p1, "203.0.113.7")
	p2 := waitPod(t, first, 2)
	if nodeOf(p2) != good {
		t.Fatalf("the retry runs on %s, want %s: %s is quarantined", nodeOf(p2), good, bad)
	}
	eventually(t, "the mismatch settled without a failure", func() error {
		st := getTarget(t, first).Status
		if st.LastFinishedRun != 1 || st.ConsecutiveFailures != 0 || st.LastFailureTime != nil {
			return fmt.Errorf("lastFinishedRun %d, consecutiveFailures %d, lastFailureTime %v", st.LastFinishedRun, st.ConsecutiveFailures, st.LastFailureTime)
		}
		return nil
	})
	eventually(t, "a Warning Event on the node", eventWith(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: bad}},
		controllers.ReasonEgressAddressMismatch, "sites would see 203.0.113.7, not the published "+ips[bad]))
	eventually(t, "an Event on the target", eventWith(first, controllers.ReasonEgressAddressMismatch, "retried on another egress node"))
	eventually(t, "the mismatch gauge", mismatchGauge(t, map[string]float64{bad: 1, good: 0}))

	// 3. While quarantined the node takes nothing, though it has two free
	// slots: the second target takes the good node's last slot, the third
	// waits.
	// The third is made once the second runs: made in the same second,
	// the two would be due at the same time, and either may go first.
	second := target("second")
	if p := waitPod(t, second, 1); nodeOf(p) != good {
		t.Errorf("second target runs on %s, want %s", nodeOf(p), good)
	}
	third := target("third")
	waitReady(t, third, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	op.clock.Step(egress.DefaultQuarantine - time.Second)
	poke(t, third)
	podCountStays(t, third, 0, 2*time.Second, "a quarantined node takes no crawl")

	// 4. The quarantine ends: one crawl at a time goes there, and checks.
	op.clock.Step(2 * time.Second)
	waitPodAfterPokes(t, third, "the third target's crawl on the node on probation")
	probe := waitPod(t, third, 1)
	if nodeOf(probe) != bad {
		t.Fatalf("the probe runs on %s, want %s", nodeOf(probe), bad)
	}
	fourth := target("fourth")
	waitReady(t, fourth, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	podCountStays(t, fourth, 0, 2*time.Second, "a node on probation runs one crawl at a time")

	// 5. The probe verifies the address: the node is in full use again,
	// and the SiteIndex records the address the crawl left from.
	finishVerified(t, op, probe, "https://third.echo.example.com", quarantinedAt.Add(egress.DefaultQuarantine+time.Second))
	eventually(t, "the node verified", eventWith(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: bad}},
		controllers.ReasonEgressAddressVerified, ips[bad]))
	eventually(t, "the mismatch gauge back to 0", mismatchGauge(t, map[string]float64{bad: 0, good: 0}))
	eventually(t, "the verified address in the SiteIndex", func() error {
		si := &crawlv1.SiteIndex{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(third), si); err != nil {
			return err
		}
		if si.Status.EgressIP != ips[bad] || !si.Status.Complete {
			return fmt.Errorf("status.egressIP %q, complete %v; want %s", si.Status.EgressIP, si.Status.Complete, ips[bad])
		}
		return nil
	})
	fifth := target("fifth")
	for _, ct := range []*crawlv1.CrawlTarget{fourth, fifth} {
		waitPodAfterPokes(t, ct, ct.Name+" crawls on the verified node")
		if p := waitPod(t, ct, 1); nodeOf(p) != bad {
			t.Errorf("%s runs on %s, want %s: the good node is full", ct.Name, nodeOf(p), bad)
		}
	}
}

// A requested crawl that fails the egress check has not answered the
// request: the retry does, at once, although the target's schedule would
// not crawl it again for a day.
func TestEgressMismatchKeepsTheCrawlRequest(t *testing.T) {
	createEgressNode(t, "egress-req-a", "79.139.58.98")
	createEgressNode(t, "egress-req-b", "79.139.58.121")
	ns := newNamespace(t)
	op := startOperator(t, operatorOptions{echoURL: "http://echo.bot.lohisoft.com/", namespaces: []string{ns}})
	ct := createTarget(t, ns, "asked", "https://asked.echo.example.com/", withInterval(24*time.Hour))
	p1 := waitPod(t, ct, 1)
	finishVerified(t, op, p1, "https://asked.echo.example.com", op.clock.Now())
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)

	const request = "2026-12-05T11:00:00Z"
	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, request)
	p2 := waitPod(t, ct, 2)
	failEgress(t, p2, "")
	p3 := waitPod(t, ct, 3)
	if p3.Annotations[crawlpod.AnnotationRequestedAt] != request || nodeOf(p3) == nodeOf(p2) {
		t.Errorf("retry on %s answering %q; want another node than %s, answering %s",
			nodeOf(p3), p3.Annotations[crawlpod.AnnotationRequestedAt], nodeOf(p2), request)
	}
	eventually(t, "the request handled by the retry", func() error {
		if st := getTarget(t, ct).Status; st.LastHandledRequestedAt != request || st.Runs != 3 || st.ConsecutiveFailures != 0 {
			return fmt.Errorf("lastHandledRequestedAt %q, runs %d, failures %d", st.LastHandledRequestedAt, st.Runs, st.ConsecutiveFailures)
		}
		return nil
	})
	eventually(t, "the node's Event says nothing was verified", eventWith(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeOf(p2)}},
		controllers.ReasonEgressAddressMismatch, "could not be verified as the published "+p2.Annotations[crawlpod.AnnotationEgressIP]))
}
