package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// The crawl queue (issue 12): waiting targets are woken when they can
// start, not polled; capacity comes from the cache and the manager's own
// ledger, never from a Pod List on the API server.

// managerRequests returns the requests the suite's managers made, from the
// audit log, after the first skip of them.
func managerRequests(t *testing.T, skip int) []testenv.Request {
	t.Helper()
	reqs, err := testenv.Current().Requests()
	if err != nil {
		t.Fatal(err)
	}
	user := testenv.ServiceAccountUser(testenv.ManagerNamespace, testenv.ManagerServiceAccount)
	var out []testenv.Request
	for _, r := range reqs[min(skip, len(reqs)):] {
		if r.User == user {
			out = append(out, r)
		}
	}
	return out
}

// auditMark is the number of requests in the audit log now.
func auditMark(t *testing.T) int {
	t.Helper()
	reqs, err := testenv.Current().Requests()
	if err != nil {
		t.Fatal(err)
	}
	return len(reqs)
}

// settle lets every reconcile that a target's creation caused finish, so
// that afterwards only a wake-up can start it.
func settle() { time.Sleep(time.Second) }

// A waiting target starts as soon as a slot frees: the finished crawl
// wakes it. The old design polled every 15 s.
func TestWaitingTargetStartsWhenASlotFrees(t *testing.T) {
	createEgressNode(t, "egress-wake", "79.139.58.98")
	ns := newNamespace(t)
	op := startOperator(t, operatorOptions{maxPerNode: 1, namespaces: []string{ns}})
	first := createTarget(t, ns, "first", "https://first.wake.example.com/")
	pod := waitPod(t, first, 1)
	second := createTarget(t, ns, "second", "https://second.wake.example.com/")
	got := waitReady(t, second, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	if msg := readyCondition(got).Message; !strings.Contains(msg, "run 1 crawls") || !strings.Contains(msg, "position 1 of 1 in the crawl queue") {
		t.Errorf("waiting message = %q", msg)
	}

	settle()
	finishCrawl(t, op, pod, "https://first.wake.example.com", 2)
	finished := time.Now()
	waitPod(t, second, 1)
	// Creation timestamps have one-second resolution: measure here.
	if d := time.Since(finished); d > 5*time.Second {
		t.Errorf("the waiting target started %s after the slot freed; it must be woken, not wait for a timer", d)
	}
}

// A target waiting for its host starts as soon as the other crawl of its host ends.
func TestWaitingForAHostStartsWhenTheHostFrees(t *testing.T) {
	createEgressNode(t, "egress-wake-host", "79.139.58.98")
	ns := newNamespace(t)
	startOperator(t, operatorOptions{namespaces: []string{ns}})
	first := createTarget(t, ns, "https", "https://host.wake.example.com/")
	pod := waitPod(t, first, 1)
	second := createTarget(t, ns, "http", "http://host.wake.example.com/")
	waitReady(t, second, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	settle()
	before := testutil.Metrics(t, metrics.Registry)[`crawl_operator_crawl_failures_total{cause="error"}`]
	setPodPhase(t, pod, corev1.PodFailed, 1)
	failed := time.Now()
	waitPod(t, second, 1)
	if d := time.Since(failed); d > 5*time.Second {
		t.Errorf("the waiting target started %s after its host freed; it must be woken, not wait for a timer", d)
	}
	eventually(t, "the failure counted under its cause", func() error {
		if n := testutil.Metrics(t, metrics.Registry)[`crawl_operator_crawl_failures_total{cause="error"}`]; n < before+1 {
			return fmt.Errorf("crawl_failures_total{cause=error} = %v, want at least %v", n, before+1)
		}
		return nil
	})
}

// The oldest due target goes first, whatever its name, and the queue is
// visible: the position in the waiting message and the queue metric.
func TestQueueServesTheOldestDueFirst(t *testing.T) {
	createEgressNode(t, "egress-order", "79.139.58.98")
	ns := newNamespace(t)
	op := startOperator(t, operatorOptions{maxPerNode: 1, namespaces: []string{ns}})
	running := createTarget(t, ns, "running", "https://running.order.example.com/")
	pod := waitPod(t, running, 1)
	// Creation times have one-second resolution: a second apart, so the
	// older one sorts last by name.
	older := createTarget(t, ns, "z-older", "https://older.order.example.com/")
	waitReady(t, older, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	time.Sleep(1100 * time.Millisecond)
	newer := createTarget(t, ns, "a-newer", "https://newer.order.example.com/")
	got := waitReady(t, newer, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	if msg := readyCondition(got).Message; !strings.Contains(msg, "position 2 of 2 in the crawl queue") {
		t.Errorf("newer target's message = %q, want position 2 of 2", msg)
	}
	eventually(t, "queue metric", func() error {
		m := testutil.Metrics(t, metrics.Registry)
		if n := m[`crawl_operator_queue_waiting{reason="no-free-slot"}`]; n != 2 {
			return fmt.Errorf("queue_waiting{no-free-slot} = %v, want 2", n)
		}
		if age := m["crawl_operator_queue_oldest_wait_seconds"]; age < 1 {
			return fmt.Errorf("oldest wait = %v s, want at least the 1 s between the two", age)
		}
		if n := m[`crawl_operator_crawls_running{node="egress-order"}`]; n != 1 {
			return fmt.Errorf("crawls_running{egress-order} = %v, want 1", n)
		}
		if n := m["crawl_operator_crawl_slots_per_node"]; n != 1 {
			return fmt.Errorf("crawl_slots_per_node = %v, want 1", n)
		}
		// Other tests' egress nodes share the API server.
		if n := m["crawl_operator_egress_nodes_usable"]; n < 1 {
			return fmt.Errorf("egress_nodes_usable = %v, want at least egress-order", n)
		}
		return nil
	})

	finishCrawl(t, op, pod, "https://running.order.example.com", 1)
	olderPod := waitPod(t, older, 1)
	podCountStays(t, newer, 0, time.Second, "the newer target waits while the older crawls")
	finishCrawl(t, op, olderPod, "https://older.order.example.com", 1)
	waitPod(t, newer, 1)
}

// No reconcile lists Pods from the API server, and waiting targets cost no
// request while nothing changes.
func TestWaitingCostsNoRequests(t *testing.T) {
	createEgressNode(t, "egress-quiet", "79.139.58.98")
	ns := newNamespace(t)
	op := startOperator(t, operatorOptions{maxPerNode: 1, namespaces: []string{ns}})
	first := createTarget(t, ns, "first", "https://first.quiet.example.com/")
	pod := waitPod(t, first, 1)
	mark := auditMark(t)

	var waiting []*crawlv1.CrawlTarget
	for i := range 20 {
		waiting = append(waiting, createTarget(t, ns, fmt.Sprintf("w%02d", i), fmt.Sprintf("https://w%02d.quiet.example.com/", i)))
	}
	for _, ct := range waiting {
		waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	}
	quiet := auditMark(t)
	time.Sleep(3 * time.Second)
	if reqs := managerRequests(t, quiet); len(reqs) > 0 {
		t.Errorf("%d requests while 20 targets waited and nothing changed, want none; first: %s", len(reqs), reqs[0])
	}

	// A slot frees: one waiter starts, still without a Pod List.
	finishCrawl(t, op, pod, "https://first.quiet.example.com", 1)
	waitPod(t, waiting[0], 1)
	for _, r := range managerRequests(t, mark) {
		if r.Resource == "pods" && r.Verb == "list" {
			t.Errorf("a Pod List went to the API server: %s (%s)", r, r.URI)
		}
	}
}

// A new target costs few writes: its SiteIndex, one status patch and the
// Event of its state. The issue measured 6 per new target.
func TestNewTargetWrites(t *testing.T) {
	ns := newNamespace(t)
	startOperator(t, operatorOptions{namespaces: []string{ns}})
	mark := auditMark(t)
	const n = 10
	var targets []*crawlv1.CrawlTarget
	for i := range n {
		targets = append(targets, createTarget(t, ns, fmt.Sprintf("s%02d", i), fmt.Sprintf("https://s%02d.writes.example.com/", i), suspended()))
	}
	for _, ct := range targets {
		waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonSuspended)
	}
	// Let any follow-up reconcile happen.
	time.Sleep(2 * time.Second)
	writes := map[string]int{}
	total := 0
	for _, r := range managerRequests(t, mark) {
		switch r.Verb {
		case "create", "update", "patch", "delete":
			if r.Namespace == ns {
				writes[r.Permission().String()]++
				total++
			}
		}
	}
	t.Logf("writes for %d new suspended targets: %v", n, writes)
	if total > 2*n {
		t.Errorf("%d writes for %d new targets (%v), want at most 2 each: SiteIndex, status", total, n, writes)
	}
}

// A manager that restarts rebuilds its ledger from the crawler Pods that
// exist, before its first reconcile: it never starts more crawls than the
// slots, and gives the freed slot to the oldest waiting target.
func TestRestartedManagerKeepsTheSlots(t *testing.T) {
	createEgressNode(t, "egress-ledger", "79.139.58.98")
	ns := newNamespace(t)
	op := startOperator(t, operatorOptions{maxPerNode: 2, namespaces: []string{ns}})
	a := createTarget(t, ns, "a", "https://a.ledger.example.com/")
	b := createTarget(t, ns, "b", "https://b.ledger.example.com/")
	pa := waitPod(t, a, 1)
	setPodPhase(t, pa, corev1.PodRunning, 0)
	waitPod(t, b, 1)
	op.Stop()

	// Created while no manager runs.
	c := createTarget(t, ns, "c", "https://c.ledger.example.com/")
	time.Sleep(1100 * time.Millisecond)
	d := createTarget(t, ns, "d", "https://d.ledger.example.com/")
	op2 := startOperator(t, operatorOptions{maxPerNode: 2, namespaces: []string{ns}})
	waitReady(t, c, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	waitReady(t, d, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	activeOnNode := func() error {
		var pods corev1.PodList
		if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		n := 0
		for i := range pods.Items {
			if crawlpod.Active(&pods.Items[i]) {
				n++
			}
		}
		if n > 2 {
			return fmt.Errorf("%d crawls running on a node of 2 slots", n)
		}
		return nil
	}
	consistently(t, "no more crawls than slots after the restart", 2*time.Second, activeOnNode)

	finishCrawl(t, op2, pa, "https://a.ledger.example.com", 1)
	waitPod(t, c, 1)
	consistently(t, "the freed slot went to the oldest waiter only", time.Second, func() error {
		if err := activeOnNode(); err != nil {
			return err
		}
		if n := len(crawlerPods(t, d)); n != 0 {
			return fmt.Errorf("d has %d Pods", n)
		}
		return nil
	})
}

// A target waiting for an egress node starts as soon as one joins.
func TestWaitingForANodeStartsWhenOneJoins(t *testing.T) {
	ns := newNamespace(t)
	startOperator(t, operatorOptions{namespaces: []string{ns}})
	ct := createTarget(t, ns, "lonely", "https://lonely.join.example.com/")
	waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonNoEgressNode)
	settle()
	createEgressNode(t, "egress-join", "79.139.58.98")
	joined := time.Now()
	pod := waitPod(t, ct, 1)
	if d := time.Since(joined); d > 5*time.Second {
		t.Errorf("the waiting target started %s after an egress node joined; it must be woken, not wait for a timer", d)
	}
	if pod.Annotations[crawlpod.AnnotationEgressNode] != "egress-join" {
		t.Errorf("pod on %q, want egress-join", pod.Annotations[crawlpod.AnnotationEgressNode])
	}
}

// A node that passes its FCrDNS self-check takes the crawl waiting for it
// at once. Passing changes no Node object, so without the checker's news
// the crawl would wait for the crawl queue's resync (30 s): after every
// manager start, with the chart's --require-egress-fcrdns.
func TestNodeVerifiedAfterStartTakesTheWaitingCrawl(t *testing.T) {
	createEgressNode(t, "egress-verified-late", "79.139.58.77")
	ns := newNamespace(t)
	target := createTarget(t, ns, "waits-for-fcrdns", "https://fcrdns.wake.example.com/")
	started := time.Now()
	startOperator(t, operatorOptions{requireFCrDNS: true, namespaces: []string{ns}, zone: dnstest.Zone{
		PTR: map[string][]string{"79.139.58.77": {"crawler77.bot.lohisoft.com"}},
		A:   map[string][]string{"crawler77.bot.lohisoft.com": {"79.139.58.77"}},
		// The check ends after the target's first reconcile: the crawl
		// waits for the node first.
		Delay: 2 * time.Second,
	}})
	pod := waitPod(t, target, 1)
	if node := pod.Annotations[crawlpod.AnnotationEgressNode]; node != "egress-verified-late" {
		t.Errorf("crawl on %q, want the one verified node", node)
	}
	if d := time.Since(started); d > 15*time.Second {
		t.Errorf("the crawl started %s after the manager; the verified node must wake it, not the queue's 30 s resync", d)
	}
}
