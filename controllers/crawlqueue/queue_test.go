package crawlqueue

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// crawlerPod is a crawler Pod as the operator labels it.
func crawlerPod(name, node, host string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels:      map[string]string{crawlpod.LabelHostHash: host, crawlpod.LabelTargetUID: "uid-" + name},
			Annotations: map[string]string{crawlpod.AnnotationEgressNode: node}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func podKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: name}
}

// woken records wake-ups.
type woken struct {
	mu  sync.Mutex
	got []string
}

func (w *woken) wake(t types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, t.Name)
}

func (w *woken) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.got
	w.got = nil
	sort.Strings(out)
	return out
}

func TestSlotsHandedOutCountBeforeTheCacheShowsThem(t *testing.T) {
	q := New(1)
	d, _ := q.Book(waiter("a", 1, "a.example", ""), podKey("a-1"), "uid-a", twoNodes)
	if d.Wait != 0 {
		t.Fatalf("first booking waits: %+v", d)
	}
	d2, _ := q.Book(waiter("b", 2, "b.example", ""), podKey("b-1"), "uid-b", twoNodes)
	if d2.Wait != 0 || d2.Node.Name == d.Node.Name {
		t.Fatalf("second booking = %+v, want the other node", d2)
	}
	// Nothing observed yet: both slots are handed out, a third waits.
	d3, pos := q.Book(waiter("c", 3, "c.example", ""), podKey("c-1"), "uid-c", twoNodes)
	if d3.Wait != AllFull || pos != (Position{1, 1}) {
		t.Fatalf("third booking = %+v at %+v, want AllFull at 1 of 1", d3, pos)
	}
	// A Pod that was not created gives its slot back and wakes c.
	w := &woken{}
	q.SetWake(w.wake)
	q.Release(podKey("b-1"))
	if got := w.take(); !reflect.DeepEqual(got, []string{"c"}) {
		t.Errorf("woken after a release: %v, want [c]", got)
	}
}

func TestExpectationsTimeOut(t *testing.T) {
	q := New(1)
	now := t0
	q.now = func() time.Time { return now }
	if d, _ := q.Book(waiter("a", 1, "a.example", ""), podKey("a-1"), "uid-a", twoNodes[:1]); d.Wait != 0 {
		t.Fatal(d)
	}
	if d, _ := q.Book(waiter("b", 2, "b.example", ""), podKey("b-1"), "uid-b", twoNodes[:1]); d.Wait != AllFull {
		t.Fatalf("b = %+v, want AllFull", d)
	}
	// The cache never showed a-1 (created and deleted unseen): after the
	// TTL its slot is free again.
	now = now.Add(expectationTTL + time.Second)
	if d, _ := q.Book(waiter("b", 2, "b.example", ""), podKey("b-1"), "uid-b", twoNodes[:1]); d.Wait != 0 {
		t.Fatalf("b after the TTL = %+v, want a start", d)
	}
}

func TestAFinishedCrawlWakesTheOldestWaiterThatCanUseIt(t *testing.T) {
	q := New(2)
	w := &woken{}
	q.SetWake(w.wake)
	q.SetNodes(twoNodes[:1])
	running := crawlerPod("r-1", "a", "r.example", corev1.PodRunning)
	q.Observe(running)
	q.Observe(crawlerPod("s-1", "a", "s.example", corev1.PodRunning))
	// Waiting: one for the busy host r.example, then two younger ones.
	for _, wt := range []Waiter{waiter("same-host", 1, "r.example", ""), waiter("young", 3, "y.example", ""), waiter("old", 2, "o.example", "")} {
		if d, _ := q.Book(wt, podKey(wt.Target.Name+"-1"), types.UID(wt.Target.Name), twoNodes[:1]); d.Wait == 0 {
			t.Fatalf("%s started on a full node", wt.Target.Name)
		}
	}
	if got := w.take(); len(got) != 0 {
		t.Fatalf("woken while nothing changed: %v", got)
	}
	// A Pod moving along (Pending -> Running) frees nothing.
	q.Observe(crawlerPod("s-1", "a", "s.example", corev1.PodRunning))
	if got := w.take(); len(got) != 0 {
		t.Fatalf("woken by a running Pod: %v", got)
	}
	// r-1 ends: its slot and its host are free. same-host is the oldest
	// and may now crawl its host.
	running.Status.Phase = corev1.PodSucceeded
	q.Observe(running)
	if got := w.take(); !reflect.DeepEqual(got, []string{"same-host"}) {
		t.Errorf("woken = %v, want [same-host]", got)
	}
	// same-host leaves without starting (suspended meanwhile): the slot
	// goes to the next oldest, not the youngest.
	q.Leave(types.NamespacedName{Namespace: "ns", Name: "same-host"})
	if got := w.take(); !reflect.DeepEqual(got, []string{"old"}) {
		t.Errorf("woken after a leave = %v, want [old]", got)
	}
	// young asks first anyway: it is told older targets go first, and
	// old is woken (again: waking is idempotent).
	if d, pos := q.Book(waiter("young", 3, "y.example", ""), podKey("young-1"), "young", twoNodes[:1]); d.Wait != Behind || pos != (Position{2, 2}) {
		t.Errorf("young = %+v at %+v, want Behind at 2 of 2", d, pos)
	}
	if got := w.take(); !reflect.DeepEqual(got, []string{"old"}) {
		t.Errorf("woken while young waits = %v, want [old]", got)
	}
	if d, _ := q.Book(waiter("old", 2, "o.example", ""), podKey("old-1"), "old", twoNodes[:1]); d.Wait != 0 {
		t.Errorf("old = %+v, want a start", d)
	}
	// A deleted Pod frees its slot too.
	q.Forget(podKey("s-1"))
	if got := w.take(); !reflect.DeepEqual(got, []string{"young"}) {
		t.Errorf("woken after a deletion = %v, want [young]", got)
	}
}

func TestANodeThatBecomesUsableWakesWaiters(t *testing.T) {
	q := New(1)
	w := &woken{}
	q.SetWake(w.wake)
	for _, wt := range []Waiter{waiter("a", 1, "a.example", ""), waiter("b", 2, "b.example", ""), waiter("c", 3, "c.example", "")} {
		if d, _ := q.Book(wt, podKey(wt.Target.Name+"-1"), types.UID(wt.Target.Name), nil); d.Wait != NoNode {
			t.Fatalf("%s = %+v, want NoNode", wt.Target.Name, d)
		}
	}
	q.SetNodes(nil)
	if got := w.take(); len(got) != 0 {
		t.Fatalf("woken by no change: %v", got)
	}
	q.SetNodes(twoNodes)
	if got := w.take(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("woken = %v, want the two oldest [a b]", got)
	}
}

// A restarted manager (or a new leader) starts with an empty queue: the
// informer replays every crawler Pod into it before the first reconcile.
// Running crawls keep their slots, finished ones hold none.
func TestALedgerRebuiltFromPodsNeverExceedsTheSlots(t *testing.T) {
	q := New(2)
	q.Observe(crawlerPod("r-1", "a", "r.example", corev1.PodRunning))
	q.Observe(crawlerPod("s-1", "a", "s.example", corev1.PodPending))
	q.Observe(crawlerPod("old-1", "a", "x.example", corev1.PodSucceeded))
	q.Observe(crawlerPod("t-1", "b", "t.example", corev1.PodRunning))
	if got := q.Running("uid-r-1"); got == nil || got.Name != "r-1" {
		t.Errorf("Running(r) = %v, want r-1", got)
	}
	if got := q.Running("uid-old-1"); got != nil {
		t.Errorf("a finished Pod counts as running: %v", got.Name)
	}
	started := map[string]int{}
	for i := range 5 {
		name := fmt.Sprintf("w%d", i)
		d, _ := q.Book(waiter(name, i, name+".example", ""), podKey(name+"-1"), types.UID(name), twoNodes)
		if d.Wait == 0 {
			started[d.Node.Name]++
		}
	}
	if !reflect.DeepEqual(started, map[string]int{"b": 1}) {
		t.Errorf("started %v, want one more on b only (a runs 2, b runs 1, 2 slots each)", started)
	}
}

func TestCreatedFollowsThePodThatExists(t *testing.T) {
	q := New(1)
	if d, _ := q.Book(waiter("a", 1, "a.example", ""), podKey("a-1"), "uid-a-1", twoNodes); d.Wait != 0 {
		t.Fatal(d)
	}
	// An earlier attempt had created a-1 on node b: that is what it holds.
	q.Created(crawlerPod("a-1", "b", "a.example", corev1.PodPending))
	if got := q.Running("uid-a-1"); got == nil || got.Annotations[crawlpod.AnnotationEgressNode] != "b" {
		t.Fatalf("Running = %v, want the Pod on b", got)
	}
	if got := q.Stats().Running; !reflect.DeepEqual(got, map[string]int{"b": 1}) {
		t.Errorf("running = %v, want b:1", got)
	}
	// The cache shows it: the same slot, counted once.
	q.Observe(crawlerPod("a-1", "b", "a.example", corev1.PodRunning))
	if got := q.Stats().Running; !reflect.DeepEqual(got, map[string]int{"b": 1}) {
		t.Errorf("running = %v, want b:1", got)
	}
	// A Pod found finished holds nothing.
	if d, _ := q.Book(waiter("c", 1, "c.example", ""), podKey("c-1"), "uid-c-1", twoNodes); d.Wait != 0 {
		t.Fatal(d)
	}
	q.Created(crawlerPod("c-1", "a", "c.example", corev1.PodSucceeded))
	if got := q.Stats().Running; !reflect.DeepEqual(got, map[string]int{"b": 1}) {
		t.Errorf("running = %v, want b:1", got)
	}
}

func TestStats(t *testing.T) {
	q := New(1)
	q.Observe(crawlerPod("r-1", "a", "r.example", corev1.PodRunning))
	q.Book(waiter("host", 5, "r.example", ""), podKey("host-1"), "host", twoNodes[:1])
	q.Book(waiter("full", 3, "f.example", ""), podKey("full-1"), "full", twoNodes[:1])
	st := q.Stats()
	if !reflect.DeepEqual(st.Waiting, map[Wait]int{HostBusy: 1, AllFull: 1}) || !st.OldestDue.Equal(t0.Add(3*time.Second)) {
		t.Errorf("stats = %+v", st)
	}
}

// Many reconciles book at once: no node ever gets more than its slots and
// no host two crawls.
func TestConcurrentBookingsNeverOverbook(t *testing.T) {
	q := New(3)
	var mu sync.Mutex
	perNode, perHost := map[string]int{}, map[string]int{}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprintf("h%d.example", i%40)
			name := fmt.Sprintf("t%d", i)
			d, _ := q.Book(waiter(name, i, host, ""), podKey(name+"-1"), types.UID(name), twoNodes)
			if d.Wait == 0 {
				mu.Lock()
				perNode[d.Node.Name]++
				perHost[host]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if perNode["a"] != 3 || perNode["b"] != 3 {
		t.Errorf("started per node %v, want 3 on each", perNode)
	}
	for h, n := range perHost {
		if n > 1 {
			t.Errorf("host %s got %d crawls", h, n)
		}
	}
}
