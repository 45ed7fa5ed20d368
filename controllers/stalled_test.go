package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// failWithExitCode ends a crawler Pod the way the crawler does on bad
// input: exit code 2 and its one-line message.
func failWithExitCode(t *testing.T, pod *corev1.Pod, code int32, message string) {
	t.Helper()
	fresh := &corev1.Pod{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), fresh); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	fresh.Status.Phase = corev1.PodFailed
	fresh.Status.StartTime = &now
	fresh.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "crawler", Image: "crawler:test", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: message,
			StartedAt: metav1.NewTime(now.Add(-time.Second)), FinishedAt: now},
	}}}
	if err := k8s.Status().Update(context.Background(), fresh); err != nil {
		t.Fatal(err)
	}
}

// waitStalled waits for Ready=False and Stalled=True with reason, and no
// timer: nextCrawlTime is empty.
func waitStalled(t *testing.T, ct *crawlv1.CrawlTarget, reason, inMessage string) *crawlv1.CrawlTarget {
	t.Helper()
	got := waitReady(t, ct, metav1.ConditionFalse, reason)
	stalled := meta.FindStatusCondition(got.Status.Conditions, crawlv1.ConditionStalled)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != reason || !strings.Contains(stalled.Message, inMessage) {
		t.Errorf("Stalled = %+v, want True/%s naming %q", stalled, reason, inMessage)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, crawlv1.ConditionReconciling); c != nil {
		t.Errorf("Reconciling = %+v, want none: nothing happens without a person", c)
	}
	if got.Status.NextCrawlTime != nil || got.Status.Phase != crawlv1.PhaseFailed {
		t.Errorf("nextCrawlTime %v, phase %s; want no timer, Failed", got.Status.NextCrawlTime, got.Status.Phase)
	}
	return got
}

// A crawl that fails on input that cannot change (the crawler's bad-input
// exit, an address the bot never connects to) is not retried on a timer: the
// target shows Stalled with the reason until its spec changes or a crawl is
// requested.
func TestCrawlFailingOnUnchangeableInputStalls(t *testing.T) {
	createEgressNode(t, "egress-stall", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "stuck", "http://intranet.stall.example:8080/")

	// 1. The crawler exits 2: bad input, its last JSON log record.
	failWithExitCode(t, waitPod(t, ct, 1), 2, `{"time":"2026-12-01T10:00:00Z","level":"INFO","msg":"start"}`+"\n"+
		`{"time":"2026-12-01T10:00:00Z","level":"ERROR","msg":"bad input: invalid URL \"http://intranet.stall.example:0/\": bad port"}`+"\n")
	if c := meta.FindStatusCondition(waitStalled(t, ct, crawlv1.ReasonInvalidInput, "bad port").Status.Conditions, crawlv1.ConditionStalled); strings.Contains(c.Message, `"level"`) {
		t.Errorf("Stalled shows the log record, not its message: %q", c.Message)
	}
	// Far past the back-off (the operator gives up on Pods older than
	// testDeadline by this clock, so the steps stay below it).
	op.clock.Step(24 * time.Hour)
	poke(t, ct)
	podCountStays(t, ct, 1, 2*time.Second, "a bad-input crawl is not retried on a timer")
	eventually(t, "Warning Event", eventWith(ct, crawlv1.ReasonInvalidInput, "bad port"))

	// 2. A person asks for a crawl: it runs, and the address is refused.
	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "try-again")
	pod := waitPod(t, ct, 2)
	setPodPhase(t, pod, corev1.PodRunning, 0)
	refused := "refused: intranet.stall.example resolves to 10.1.2.3: " + fetch.ErrNonPublic.Error()
	if code, body := postReport(t, op, pod, runToken(t, pod), runreport.Report{Final: true, Result: runreport.Crawl{
		Pages: []runreport.Page{}, Skipped: []runreport.Skip{{URL: "http://intranet.stall.example:8080/", Reason: refused}}}}); code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	setPodPhase(t, pod, corev1.PodSucceeded, 0)
	got := waitStalled(t, ct, crawlv1.ReasonAddressRefused, "10.1.2.3")
	if got.Status.ConsecutiveFailures != 2 || got.Status.PagesIndexed != 0 {
		t.Errorf("status %+v", got.Status)
	}
	op.clock.Step(24 * time.Hour)
	poke(t, ct)
	podCountStays(t, ct, 2, 2*time.Second, "a refused address is not retried on a timer")

	// 3. A spec change lifts the stall: the back-off has long passed, so
	// the next crawl starts at once.
	fresh := getTarget(t, ct)
	fresh.Spec.MaxPages = ptr.To[int32](5)
	if err := k8s.Update(context.Background(), fresh); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ct, 3)
	// The status is patched after the Pod is created.
	eventually(t, "Stalled lifted", func() error {
		if c := meta.FindStatusCondition(getTarget(t, ct).Status.Conditions, crawlv1.ConditionStalled); c != nil {
			return fmt.Errorf("still Stalled: %+v", c)
		}
		return nil
	})
}

// A refusal that may be gone tomorrow (connection refused) keeps the usual
// retries.
func TestTransientRefusalIsRetried(t *testing.T) {
	createEgressNode(t, "egress-stall2", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "down", "https://down.stall.example/")
	pod := waitPod(t, ct, 1)
	setPodPhase(t, pod, corev1.PodRunning, 0)
	if code, body := postReport(t, op, pod, runToken(t, pod), runreport.Report{Final: true, Result: runreport.Crawl{
		Skipped: []runreport.Skip{{URL: "https://down.stall.example/", Reason: "refused: GET https://down.stall.example/: dial tcp 203.0.113.7:443: connect: connection refused"}}}}); code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	setPodPhase(t, pod, corev1.PodSucceeded, 0)
	eventually(t, "run recorded with a next crawl and no stall", func() error {
		got := getTarget(t, ct)
		if got.Status.LastFinishedRun != 1 {
			return fmt.Errorf("run not recorded yet")
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, crawlv1.ConditionStalled); c != nil || got.Status.NextCrawlTime == nil {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})
}

func eventWith(o client.Object, reason, inNote string) func() error {
	return func() error {
		var list eventsv1.EventList
		if err := k8s.List(context.Background(), &list, client.InNamespace(o.GetNamespace())); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == o.GetName() && e.Reason == reason && strings.Contains(e.Note, inNote) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event naming %q among %d", reason, inNote, len(list.Items))
	}
}
