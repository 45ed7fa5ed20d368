package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

const (
	waitTimeout = 20 * time.Second
	poll        = 50 * time.Millisecond
)

// newNamespace creates a namespace for one test; envtest has no namespace
// controller, so it is never really deleted, which is fine for a test run.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	// envtest runs no namespace controller, so a test's CrawlTargets would
	// outlive it and, still due, take the slots of the next test's egress
	// node the moment its manager (watching every namespace) starts.
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(context.Background(), &crawlv1.CrawlTarget{}, client.InNamespace(ns.Name))
	})
	return ns.Name
}

type targetOption func(*crawlv1.CrawlTarget)

func withInterval(d time.Duration) targetOption {
	return func(ct *crawlv1.CrawlTarget) { ct.Spec.Interval = &metav1.Duration{Duration: d} }
}

func withMaxPages(n int32) targetOption {
	return func(ct *crawlv1.CrawlTarget) { ct.Spec.MaxPages = &n }
}

func withCrawlPolicy(p crawlv1.CrawlPolicy) targetOption {
	return func(ct *crawlv1.CrawlTarget) { ct.Spec.CrawlPolicy = p }
}

func suspended() targetOption {
	return func(ct *crawlv1.CrawlTarget) { ct.Spec.CrawlPolicy = crawlv1.CrawlPolicySuspended }
}

func createTarget(t *testing.T, ns, name, url string, opts ...targetOption) *crawlv1.CrawlTarget {
	t.Helper()
	ct := &crawlv1.CrawlTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       crawlv1.CrawlTargetSpec{URL: url},
	}
	for _, o := range opts {
		o(ct)
	}
	if err := k8s.Create(context.Background(), ct); err != nil {
		t.Fatalf("create CrawlTarget %s: %v", name, err)
	}
	return ct
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, what, check)
}

func createEgressNode(t *testing.T, name, ip string) *corev1.Node {
	t.Helper()
	return testutil.CreateEgressNode(t, k8s, name, ip)
}

func setPodPhase(t *testing.T, pod *corev1.Pod, phase corev1.PodPhase, exitCode int32) {
	t.Helper()
	testutil.SetPodPhase(t, k8s, pod, phase, exitCode)
}

// runningPod waits for the first crawler Pod of ct, marks it Running and
// returns it with its run token: how most report tests begin.
func runningPod(t *testing.T, ct *crawlv1.CrawlTarget) (*corev1.Pod, string) {
	t.Helper()
	pod := waitPod(t, ct, 1)
	setPodPhase(t, pod, corev1.PodRunning, 0)
	return pod, runToken(t, pod)
}

func runToken(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	return testutil.RunToken(t, k8s, pod)
}

func postReport(t *testing.T, op *harness, pod *corev1.Pod, token string, body any) (int, string) {
	t.Helper()
	return testutil.PostReport(t, op.ResultsURL, pod, token, body)
}

func pages(base string, n int) []runreport.Page { return testutil.Pages(base, n) }

func finishCrawl(t *testing.T, op *harness, pod *corev1.Pod, base string, n int) {
	t.Helper()
	testutil.FinishCrawl(t, k8s, op.ResultsURL, pod, base, n)
}

// consistently checks that check keeps returning nil for d.
func consistently(t *testing.T, what string, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(poll)
	}
}

// podCountStays checks that a target keeps exactly n crawler Pods for d.
func podCountStays(t *testing.T, ct *crawlv1.CrawlTarget, n int, d time.Duration, why string) {
	t.Helper()
	consistently(t, why, d, func() error {
		if got := len(crawlerPods(t, ct)); got != n {
			return fmt.Errorf("%d crawler Pods, want %d", got, n)
		}
		return nil
	})
}

func getTarget(t *testing.T, ct *crawlv1.CrawlTarget) *crawlv1.CrawlTarget {
	t.Helper()
	out := &crawlv1.CrawlTarget{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitReady waits for the target's Ready condition to have status and reason.
func waitReady(t *testing.T, ct *crawlv1.CrawlTarget, status metav1.ConditionStatus, reason string) *crawlv1.CrawlTarget {
	t.Helper()
	var got *crawlv1.CrawlTarget
	eventually(t, fmt.Sprintf("%s Ready=%s/%s", ct.Name, status, reason), func() error {
		got = &crawlv1.CrawlTarget{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, crawlv1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != got.Generation {
			return fmt.Errorf("Ready = %+v", c)
		}
		return nil
	})
	return got
}

func readyCondition(ct *crawlv1.CrawlTarget) metav1.Condition {
	if c := meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// crawlerPods lists a target's crawler Pods, live.
func crawlerPods(t *testing.T, ct *crawlv1.CrawlTarget) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ct.Namespace),
		client.MatchingLabels{crawlpod.LabelTargetUID: string(getTarget(t, ct).UID)}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func activePods(t *testing.T, ct *crawlv1.CrawlTarget) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range crawlerPods(t, ct) {
		if crawlpod.Active(&p) {
			out = append(out, p)
		}
	}
	return out
}

// waitPod waits for the Pod of run n of a target.
func waitPod(t *testing.T, ct *crawlv1.CrawlTarget, run int64) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: ct.Namespace, Name: crawlpod.PodName(ct.Name, run)}
	eventually(t, "crawler Pod "+key.Name, func() error {
		err := k8s.Get(context.Background(), key, pod)
		if err == nil {
			return nil
		}
		// Say why the target has no Pod yet: its Ready condition names
		// what it waits for.
		cur := &crawlv1.CrawlTarget{}
		if gerr := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), cur); gerr == nil {
			if c := meta.FindStatusCondition(cur.Status.Conditions, crawlv1.ConditionReady); c != nil {
				return fmt.Errorf("%w (target Ready=%s %s: %s)", err, c.Status, c.Reason, c.Message)
			}
		}
		return err
	})
	return pod
}

func isNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("still exists")
	}
	return err
}

// waitPodAfterPokes pokes a waiting target until it gets a crawler Pod:
// capacity frees up without an event on the waiting target itself.
func waitPodAfterPokes(t *testing.T, ct *crawlv1.CrawlTarget, what string) {
	t.Helper()
	eventually(t, what, func() error {
		poke(t, ct)
		if len(crawlerPods(t, ct)) == 0 {
			return fmt.Errorf("no crawler Pod yet")
		}
		return nil
	})
}
