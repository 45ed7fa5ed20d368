// Package testutil holds the builders and the fake kubelet that the
// envtest suites and the end-to-end tests share. envtest runs no kubelet,
// so tests move crawler Pods through their phases themselves and report
// results the way the crawler does. Only tests import it.
package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// CreateEgressNode registers a Ready egress Node with an ExternalIP, the way
// the chart and the dev cluster label and taint them, and deletes it when
// the test ends.
func CreateEgressNode(t testing.TB, c client.Client, name, ip string) *corev1.Node {
	t.Helper()
	return CreateNodeSelectedBy(t, c, egress.DefaultSelector(), name, ip)
}

// CreateNodeSelectedBy is CreateEgressNode for the egress nodes of sel.
func CreateNodeSelectedBy(t testing.TB, c client.Client, sel egress.Selector, name, ip string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sel.Labels()},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{sel.Taint()}},
	}
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	// The API server taints every new Node not-ready (TaintNodesByCondition);
	// the node lifecycle controller lifts it once the node is Ready, and
	// envtest runs none. Crawls keep off a node with that taint.
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: ip}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
	}
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
	return n
}

// SetPodPhase plays the kubelet: it moves a Pod to a phase, with a
// terminated container status for the final phases.
func SetPodPhase(t testing.TB, c client.Client, pod *corev1.Pod, phase corev1.PodPhase, exitCode int32) {
	t.Helper()
	ctx := context.Background()
	fresh := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
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
	if err := c.Status().Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
}

// RunToken reads the token the operator handed a run, as the Pod would.
// The operator makes the Secret just after the Pod (it is the Pod's to
// own), so a Pod may be seen a moment before its Secret; a kubelet waits
// for it too.
func RunToken(t testing.TB, c client.Client, pod *corev1.Pod) string {
	t.Helper()
	s := &corev1.Secret{}
	Eventually(t, 10*time.Second, "the token Secret of "+pod.Name, func() error {
		return c.Get(context.Background(), client.ObjectKey{Namespace: pod.Namespace, Name: crawlpod.SecretName(pod.Name)}, s)
	})
	return string(s.Data[crawlpod.TokenKey])
}

// PostReport sends a report (a value to encode, or a raw string) to the
// results endpoint at base as the crawler does, and returns the HTTP status
// and body.
func PostReport(t testing.TB, base string, pod *corev1.Pod, token string, body any) (int, string) {
	t.Helper()
	var buf bytes.Buffer
	if s, ok := body.(string); ok {
		buf.WriteString(s)
	} else if err := json.NewEncoder(&buf).Encode(body); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, crawlpod.ReportURL(base, pod.Namespace, pod.Name), &buf)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(out))
}

// Pages builds n pages of a crawl result under base.
func Pages(base string, n int) []runreport.Page {
	var out []runreport.Page
	for i := range n {
		out = append(out, runreport.Page{
			URL:            fmt.Sprintf("%s/page-%d", base, i),
			StatusCode:     200,
			Title:          fmt.Sprintf("Page %d", i),
			Description:    "A page of the test site",
			Headings:       runreport.Headings{H1: []string{"Heading"}},
			InboundAnchors: []string{"link to page"},
			FetchedAt:      time.Now(),
		})
	}
	return out
}

// FinishCrawl delivers a final report of n pages to the results endpoint at
// resultsURL and marks the Pod Succeeded: a successful crawler run.
func FinishCrawl(t testing.TB, c client.Client, resultsURL string, pod *corev1.Pod, base string, n int) {
	t.Helper()
	SetPodPhase(t, c, pod, corev1.PodRunning, 0)
	code, body := PostReport(t, resultsURL, pod, RunToken(t, c, pod), runreport.Report{Final: true, Result: runreport.Crawl{
		Site: base, Robots: runreport.Robots{Status: 404}, Pages: Pages(base, n),
	}})
	if code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	SetPodPhase(t, c, pod, corev1.PodSucceeded, 0)
}

// Eventually polls check until it returns nil or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s: %v", what, err)
}

// ExclusionReady is a check for Eventually: ex is Ready (enforced) with
// matched CrawlTargets and purged pages in total; a negative want is not
// checked.
func ExclusionReady(c client.Client, ex *crawlv1.Exclusion, matched int32, purged int64) func() error {
	return func() error {
		got := &crawlv1.Exclusion{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(ex), got); err != nil {
			return err
		}
		st := got.Status
		if !meta.IsStatusConditionTrue(st.Conditions, crawlv1.ConditionReady) ||
			(matched >= 0 && st.MatchedTargets != matched) || (purged >= 0 && st.PurgedPages != purged) {
			return fmt.Errorf("Exclusion %s status %+v", ex.Name, st)
		}
		return nil
	}
}
