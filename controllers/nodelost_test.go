package controllers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/controllers"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// bindPod plays the scheduler: it binds a crawler Pod to the node it is
// pinned to. A bound Pod is one only a kubelet can finish deleting
// gracefully, as on a real cluster.
func bindPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: nodeOf(pod)}}
	if err := k8s.SubResource("binding").Create(context.Background(), pod, b); err != nil {
		t.Fatalf("bind %s to %s: %v", pod.Name, nodeOf(pod), err)
	}
}

// setNodeReady plays the node lifecycle controller: the Ready condition
// turns status at since, and an unready node gets its taints.
func setNodeReady(t *testing.T, name string, status corev1.ConditionStatus, since time.Time) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	var taints []corev1.Taint
	for _, tn := range n.Spec.Taints {
		if tn.Key != corev1.TaintNodeUnreachable {
			taints = append(taints, tn)
		}
	}
	if status != corev1.ConditionTrue {
		taints = append(taints,
			corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: since}})
	}
	n.Spec.Taints = taints
	if err := k8s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
		Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(since)}}
	if err := k8s.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}

func crawlingMessage(t *testing.T, ct *crawlv1.CrawlTarget, want ...string) func() error {
	return func() error {
		var c metav1.Condition
		for _, cond := range getTarget(t, ct).Status.Conditions {
			if cond.Type == crawlv1.ConditionCrawling {
				c = cond
			}
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				return fmt.Errorf("Crawling message %q lacks %q", c.Message, w)
			}
		}
		return nil
	}
}

// An egress node whose kubelet stops mid-crawl: its crawler Pod stays
// Running in the API, and a graceful delete would leave it Terminating for
// ever. Within the grace nothing happens; after it the Pod is gone at once
// and the crawl runs on the other node, not counted as a failure; the
// node takes no crawl until it is Ready again, and then it does.
func TestLostEgressNodeMovesTheCrawl(t *testing.T) {
	lostNodeMovesTheCrawl(t, "lost", nil)
}

// The same, when the status patch of the reconcile that deletes the lost
// node's Pod and starts the retry is refused (a conflict, as when anything
// else wrote the target meanwhile): the next reconcile finds the run's Pod
// gone and its node lost, and records the same as the refused patch would
// have, not "crawler Pod was deleted before it finished" (once seen in CI
// under load).
func TestLostEgressNodeMovesTheCrawlThroughAConflict(t *testing.T) {
	refuse := &conflictOnce{path: "/crawltargets/first/status", body: `"runs":2`}
	lostNodeMovesTheCrawl(t, "lostc", refuse)
	if !refuse.fired.Load() {
		t.Error("no status patch starting run 2 was refused: the test tested nothing")
	}
}

func lostNodeMovesTheCrawl(t *testing.T, prefix string, refuse *conflictOnce) {
	nodeA, nodeB := prefix+"-a", prefix+"-b"
	for name, ip := range map[string]string{nodeA: "79.139.58.98", nodeB: "79.139.58.121"} {
		createEgressNode(t, name, ip)
	}
	ns := newNamespace(t)
	opts := operatorOptions{maxPerNode: 2, namespaces: []string{ns}}
	if refuse != nil {
		opts.wrap = refuse.wrap
	}
	op := startOperator(t, opts)
	target := func(name string) *crawlv1.CrawlTarget {
		return createTarget(t, ns, name, "https://"+name+".lost.example.com/")
	}

	first := target("first")
	p1 := waitPod(t, first, 1)
	bindPod(t, p1)
	setPodPhase(t, p1, corev1.PodRunning, 0)
	lost, other := nodeOf(p1), nodeA
	if lost == other {
		other = nodeB
	}

	// 1. The kubelet stops; the node is marked Unknown. Within the grace
	// the crawl is left alone: the kubelet may be back in a moment.
	since := op.clock.Now()
	setNodeReady(t, lost, corev1.ConditionUnknown, since)
	op.clock.SetTime(since.Add(egress.DefaultLostAfter - time.Second))
	poke(t, first)
	eventually(t, "the Crawling condition says when the crawl will be given up",
		crawlingMessage(t, first, "egress node "+lost+" has been Ready=Unknown", "unless it is Ready by"))
	podCountStays(t, first, 1, time.Second, "a crawl on a node within its grace goes on")

	// 2. The grace is over: the Pod is deleted at once, although it is
	// bound and no kubelet will ever confirm, and the crawl starts again
	// on the other node.
	op.clock.SetTime(since.Add(egress.DefaultLostAfter + time.Second))
	if refuse != nil {
		refuse.armed.Store(true)
	}
	poke(t, first)
	eventually(t, "the lost node's Pod is gone", func() error {
		return isNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(p1), &corev1.Pod{}))
	})
	p2 := waitPod(t, first, 2)
	if nodeOf(p2) != other {
		t.Fatalf("the retry runs on %s, want %s: %s is lost", nodeOf(p2), other, lost)
	}
	// The status patch follows the Pod's creation (one patch at the end
	// of a reconcile, retried on a conflict): under load it shows a
	// moment later.
	eventually(t, "the lost run recorded as finished, not failed", func() error {
		st := getTarget(t, first).Status
		if st.LastFinishedRun != 1 || st.ConsecutiveFailures != 0 || st.LastFailureTime != nil {
			return fmt.Errorf("lastFinishedRun %d, consecutiveFailures %d, lastFailureTime %v; want 1, 0, none: the site did nothing wrong",
				st.LastFinishedRun, st.ConsecutiveFailures, st.LastFailureTime)
		}
		return nil
	})
	eventually(t, "the Crawling condition names the lost node",
		crawlingMessage(t, first, "crawl 2 runs in Pod "+p2.Name, "crawl 1 was lost: egress node "+lost))
	setPodPhase(t, p2, corev1.PodRunning, 0)
	poke(t, first)
	consistently(t, "the lost node stays named while the retry runs", time.Second,
		crawlingMessage(t, first, "crawl 1 was lost: egress node "+lost))
	eventually(t, "a Warning Event on the node", eventWith(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: lost}},
		controllers.ReasonEgressNodeLost, "crawler Pod "+ns+"/"+p1.Name+" deleted"))
	eventually(t, "a Normal Event on the target", eventWith(first, controllers.ReasonEgressNodeLost, "crawl 1 lost with its node"))
	eventually(t, "the lost crawl counted", func() error {
		series := fmt.Sprintf("crawl_operator_crawls_lost_total{node=%q}", lost)
		if got := testutil.Metrics(t, metrics.Registry)[series]; got < 1 {
			return fmt.Errorf("%s = %v", series, got)
		}
		return nil
	})

	// 3. While the node stays Unknown it takes nothing, though it has
	// two free slots: the second target takes the other node's last slot,
	// the third waits.
	// The third is made once the second runs: made in the same second,
	// the two would be due at the same time, and either may go first.
	second := target("second")
	if p := waitPod(t, second, 1); nodeOf(p) != other {
		t.Errorf("second target runs on %s, want %s", nodeOf(p), other)
	}
	third := target("third")
	waitReady(t, third, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	poke(t, third)
	podCountStays(t, third, 0, 2*time.Second, "a node that is not Ready takes no crawl")

	// 4. The kubelet is back: the node takes crawls again.
	setNodeReady(t, lost, corev1.ConditionTrue, op.clock.Now())
	waitPodAfterPokes(t, third, "the third target's crawl on the node back")
	if p := waitPod(t, third, 1); nodeOf(p) != lost {
		t.Errorf("third target runs on %s, want %s, the only node with a free slot", nodeOf(p), lost)
	}
}

// A Node that goes away (deleted, or no longer labelled as an egress
// node) loses its crawls at once: there is nothing to wait for.
func TestGoneEgressNodeMovesTheCrawlAtOnce(t *testing.T) {
	createEgressNode(t, "gone-a", "79.139.58.98")
	ns := newNamespace(t)
	startOperator(t, operatorOptions{namespaces: []string{ns}})
	ct := createTarget(t, ns, "gone", "https://gone.example.com/")
	p1 := waitPod(t, ct, 1)
	setPodPhase(t, p1, corev1.PodRunning, 0)
	createEgressNode(t, "gone-b", "79.139.58.121")
	if err := k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone-a"}}); err != nil {
		t.Fatal(err)
	}
	if p2 := waitPod(t, ct, 2); nodeOf(p2) != "gone-b" {
		t.Fatalf("the retry runs on %s, want gone-b", nodeOf(p2))
	}
	if st := getTarget(t, ct).Status; st.ConsecutiveFailures != 0 {
		t.Errorf("consecutiveFailures %d, want 0", st.ConsecutiveFailures)
	}
	eventually(t, "the Crawling condition says the node is gone", crawlingMessage(t, ct, "egress node gone-a is gone"))
}

// conflictOnce refuses, with 409 Conflict as the API server's optimistic
// lock does, the first armed request to a path ending in path whose body
// holds body; the API server never sees it.
type conflictOnce struct {
	path, body   string
	armed, fired atomic.Bool
}

func (c *conflictOnce) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodPatch || !strings.HasSuffix(req.URL.Path, c.path) || !c.armed.Load() || req.Body == nil {
			return next.RoundTrip(req)
		}
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		if !strings.Contains(string(b), c.body) || !c.fired.CompareAndSwap(false, true) {
			return next.RoundTrip(req)
		}
		st := apierrors.NewConflict(schema.GroupResource{Group: crawlv1.GroupVersion.Group, Resource: "crawltargets"},
			path.Base(path.Dir(req.URL.Path)), fmt.Errorf("the object has been modified (injected by the test)")).Status()
		st.Kind, st.APIVersion = "Status", "v1"
		status, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		return &http.Response{StatusCode: http.StatusConflict, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(status)), Request: req}, nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
