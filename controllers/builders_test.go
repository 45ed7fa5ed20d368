package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/crawler/result"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
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
	return ns.Name
}

type targetOption func(*crawlv1.CrawlTarget)

func withInterval(d time.Duration) targetOption {
	return func(ct *crawlv1.CrawlTarget) { ct.Spec.Interval = &metav1.Duration{Duration: d} }
}

func withMaxPages(n int32) targetOption {
	return func(ct *crawlv1.CrawlTarget) { ct.Spec.MaxPages = n }
}

func suspended() targetOption {
	return func(ct *crawlv1.CrawlTarget) { ct.Spec.Suspend = true }
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

// createEgressNode registers a Ready egress Node with an ExternalIP, the
// way the chart and the dev cluster label and taint them.
func createEgressNode(t *testing.T, name, ip string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{crawlpod.EgressLabel: crawlpod.EgressValue}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: crawlpod.EgressLabel, Value: crawlpod.EgressValue, Effect: corev1.TaintEffectNoSchedule,
		}}},
	}
	if err := k8s.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: ip}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
	}
	if err := k8s.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), n) })
	return n
}

// eventually polls check until it returns nil or the timeout passes.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(poll)
	}
	t.Fatalf("timed out waiting for %s: %v", what, err)
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
	eventually(t, "crawler Pod "+key.Name, func() error { return k8s.Get(context.Background(), key, pod) })
	return pod
}

// setPodPhase plays the kubelet: it moves a Pod to a phase, with a
// terminated container status for the final phases.
func setPodPhase(t *testing.T, pod *corev1.Pod, phase corev1.PodPhase, exitCode int32) {
	t.Helper()
	ctx := context.Background()
	fresh := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	fresh.Status.Phase = phase
	fresh.Status.StartTime = &now
	state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, StartedAt: metav1.NewTime(now.Add(-time.Second)), FinishedAt: now,
			Message: "crawler: final line of the log",
		}}
	}
	fresh.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "crawler", Image: "crawler:test", State: state}}
	if err := k8s.Status().Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
}

// runToken reads the token the operator handed a run, as the Pod would.
func runToken(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: pod.Namespace, Name: crawlpod.SecretName(pod.Name)}, s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[crawlpod.TokenKey])
}

// postReport sends a report to the results endpoint as the crawler does
// and returns the HTTP status and body.
func postReport(t *testing.T, op *operator, pod *corev1.Pod, token string, body any) (int, string) {
	t.Helper()
	var buf bytes.Buffer
	if s, ok := body.(string); ok {
		buf.WriteString(s)
	} else if err := json.NewEncoder(&buf).Encode(body); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, crawlpod.ReportURL(op.results.URL, pod.Namespace, pod.Name), &buf)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, strings.TrimSpace(out.String())
}

// pages builds a crawl result of n pages under base.
func pages(base string, n int) []result.Page {
	var out []result.Page
	for i := range n {
		out = append(out, result.Page{
			URL:            fmt.Sprintf("%s/page-%d", base, i),
			StatusCode:     200,
			Title:          fmt.Sprintf("Page %d", i),
			Description:    "A page of the test site",
			Headings:       result.Headings{H1: []string{"Heading"}},
			InboundAnchors: []string{"link to page"},
			FetchedAt:      time.Now(),
		})
	}
	return out
}

// finishCrawl delivers a final report of n pages and marks the Pod
// Succeeded, which is what a successful crawler run looks like.
func finishCrawl(t *testing.T, op *operator, pod *corev1.Pod, base string, n int) {
	t.Helper()
	setPodPhase(t, pod, corev1.PodRunning, 0)
	code, body := postReport(t, op, pod, runToken(t, pod), result.Report{Final: true, Result: result.Crawl{
		Site: base, Robots: result.Robots{Status: 404}, Pages: pages(base, n),
	}})
	if code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	setPodPhase(t, pod, corev1.PodSucceeded, 0)
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
