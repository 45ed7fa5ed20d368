package crawlqueue

import (
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// expectationTTL is how long a slot handed out for a Pod the cache has not
// shown yet keeps counting. The cache shows a created Pod within
// milliseconds; one it never shows (created and deleted between two
// watch events) must not hold a slot for ever. The ReplicaSet
// controller's expectations use the same 5 minutes.
const expectationTTL = 5 * time.Minute

// Queue is the slot ledger and the waiting set of one manager. Both are
// under one lock, so a decision to start a crawl sees every slot handed out
// and every older waiter, however many reconciles run at once.
//
// The ledger is fed by the Pod informer's events: when the controller
// starts (on the leader, after leader election), the informer replays
// every crawler Pod before the first reconcile, so a new leader or a
// restarted manager starts from the Pods that exist, not from zero.
type Queue struct {
	maxPerNode int
	now        func() time.Time

	mu    sync.Mutex
	nodes []egress.Node
	// observed are the unfinished crawler Pods the cache shows.
	observed map[types.NamespacedName]held
	// expected are slots handed out for Pods the cache has not shown yet.
	expected map[types.NamespacedName]held
	// waiting is sorted oldest due first (pointers, so that inserting
	// into 100,000 moves little memory); byTarget finds an entry.
	waiting  []*Waiter
	byTarget map[types.NamespacedName]*Waiter
	wake     func(types.NamespacedName)
}

type held struct {
	slot Slot
	// pod is nil for a slot handed out whose Pod is being created.
	pod *corev1.Pod
	at  time.Time
}

// New returns an empty queue for nodes of maxPerNode slots.
func New(maxPerNode int) *Queue {
	return &Queue{
		maxPerNode: maxPerNode,
		now:        time.Now,
		observed:   map[types.NamespacedName]held{},
		expected:   map[types.NamespacedName]held{},
		byTarget:   map[types.NamespacedName]*Waiter{},
	}
}

// SetWake says where wake-ups go: the controller's work queue.
func (q *Queue) SetWake(wake func(types.NamespacedName)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.wake = wake
}

// Position is a waiter's place in the queue, 1 being next.
type Position struct{ N, Of int }

// Book is asked by a due target: it starts now on Decision.Node, and the
// slot is handed out for pod, or it waits in the queue. Starting or not,
// every other waiter the plan lets start is woken.
func (q *Queue) Book(w Waiter, pod types.NamespacedName, target types.UID, nodes []egress.Node) (Decision, Position) {
	q.mu.Lock()
	q.nodes = nodes
	q.removeLocked(w.Target)
	q.insertLocked(w)
	load := q.loadLocked()
	plan := Plan(q.waiting, load, nodes, q.maxPerNode)
	var d Decision
	var pos Position
	if n, ok := plan[w.Target]; ok {
		delete(plan, w.Target)
		q.removeLocked(w.Target)
		q.expected[pod] = held{slot: Slot{Pod: pod, Node: n.Name, Host: w.Host, Target: target}, at: q.now()}
		d.Node = n
	} else {
		d = Why(w, load, nodes, q.maxPerNode)
		pos = Position{N: q.indexLocked(w) + 1, Of: len(q.waiting)}
	}
	wake := q.wake
	q.mu.Unlock()
	wakeAll(wake, plan)
	return d, pos
}

// Created tells the queue that pod, for which a slot was handed out, exists
// now (created, or found from an earlier attempt); its own node and host
// are what it holds. A finished one holds nothing.
func (q *Queue) Created(pod *corev1.Pod) {
	if crawlpod.Finished(pod) {
		q.Release(keyOf(pod))
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	key := keyOf(pod)
	if h, ok := q.expected[key]; ok {
		h.slot, h.pod = slotOf(pod), pod
		q.expected[key] = h
	}
}

// Release gives back a slot handed out for a Pod that was not created.
func (q *Queue) Release(pod types.NamespacedName) {
	q.mu.Lock()
	_, had := q.expected[pod]
	delete(q.expected, pod)
	q.unlockAndReplan(had)
}

// Leave takes a target out of the queue: it started, is no longer due, or
// is gone. A waiter in front of others may have been keeping a slot, so
// the plan is made again.
func (q *Queue) Leave(target types.NamespacedName) {
	q.mu.Lock()
	had := q.removeLocked(target)
	q.unlockAndReplan(had)
}

// Observe records a crawler Pod as the cache shows it. A Pod that
// finished frees its slot and its host, and wakes whoever can use them.
func (q *Queue) Observe(pod *corev1.Pod) {
	key := keyOf(pod)
	q.mu.Lock()
	delete(q.expected, key)
	_, had := q.observed[key]
	if crawlpod.Finished(pod) {
		delete(q.observed, key)
		q.unlockAndReplan(had)
		return
	}
	q.observed[key] = held{slot: slotOf(pod), pod: pod}
	q.mu.Unlock()
}

// Forget records that a crawler Pod is gone from the cache.
func (q *Queue) Forget(pod types.NamespacedName) {
	q.mu.Lock()
	_, had := q.observed[pod]
	_, expected := q.expected[pod]
	delete(q.observed, pod)
	delete(q.expected, pod)
	q.unlockAndReplan(had || expected)
}

// SetNodes records the egress nodes that may take crawls now; when they
// changed, waiters that can now start are woken.
func (q *Queue) SetNodes(nodes []egress.Node) {
	q.mu.Lock()
	changed := !slices.EqualFunc(q.nodes, nodes, func(a, b egress.Node) bool {
		return a.Name == b.Name && a.IP == b.IP && a.Probation == b.Probation
	})
	q.nodes = nodes
	q.unlockAndReplan(changed)
}

// Resync makes the plan again and wakes who can start: the safety net for
// a change that came with no event (an expectation that timed out, a node
// whose FCrDNS check passed).
func (q *Queue) Resync() {
	q.mu.Lock()
	q.unlockAndReplan(true)
}

// Running returns the unfinished crawler Pod of a target, as the cache
// shows it or as it was created, or nil.
func (q *Queue) Running(target types.UID) *corev1.Pod {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range []map[types.NamespacedName]held{q.observed, q.expected} {
		for _, h := range m {
			if h.slot.Target == target && h.pod != nil {
				return h.pod
			}
		}
	}
	return nil
}

// TargetsOn returns the targets whose unfinished crawler Pods the cache
// shows on node.
func (q *Queue) TargetsOn(node string) []types.NamespacedName {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []types.NamespacedName
	for _, h := range q.observed {
		if h.slot.Node != node {
			continue
		}
		if ref := metav1.GetControllerOf(h.pod); ref != nil {
			out = append(out, types.NamespacedName{Namespace: h.pod.Namespace, Name: ref.Name})
		}
	}
	return out
}

// Stats describe the queue for metrics.
type Stats struct {
	// Waiting counts waiters by why they wait; those about to start count
	// as Behind until their reconcile starts them.
	Waiting map[Wait]int
	// OldestDue is when the oldest waiter became due (zero: none).
	OldestDue time.Time
	// Running counts unfinished crawls by node, with those handed out and
	// not yet in the cache.
	Running map[string]int
	// Nodes are the egress nodes that may take crawls now, each with
	// MaxPerNode slots.
	Nodes      []string
	MaxPerNode int
}

// Stats returns what the queue holds now.
func (q *Queue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	load := q.loadLocked()
	s := Stats{Waiting: map[Wait]int{}, Running: load.PerNode, MaxPerNode: q.maxPerNode}
	for _, n := range q.nodes {
		s.Nodes = append(s.Nodes, n.Name)
	}
	for _, w := range q.waiting {
		d := Why(*w, load, q.nodes, q.maxPerNode)
		s.Waiting[d.Wait]++
	}
	if len(q.waiting) > 0 {
		s.OldestDue = q.waiting[0].Due
	}
	return s
}

// unlockAndReplan unlocks q and, when replan is set, wakes every waiter
// the plan lets start.
func (q *Queue) unlockAndReplan(replan bool) {
	if !replan || len(q.waiting) == 0 || q.wake == nil {
		q.mu.Unlock()
		return
	}
	plan := Plan(q.waiting, q.loadLocked(), q.nodes, q.maxPerNode)
	wake := q.wake
	q.mu.Unlock()
	wakeAll(wake, plan)
}

func wakeAll(wake func(types.NamespacedName), plan map[types.NamespacedName]egress.Node) {
	if wake == nil {
		return
	}
	for t := range plan {
		wake(t)
	}
}

// loadLocked adds up the observed slots and the handed-out ones not yet
// observed, dropping expectations that timed out.
func (q *Queue) loadLocked() Load {
	slots := make([]Slot, 0, len(q.observed)+len(q.expected))
	for _, h := range q.observed {
		slots = append(slots, h.slot)
	}
	now := q.now()
	for k, h := range q.expected {
		if now.Sub(h.at) > expectationTTL {
			delete(q.expected, k)
			continue
		}
		slots = append(slots, h.slot)
	}
	return LoadOf(slots)
}

func (q *Queue) indexLocked(w Waiter) int {
	return sort.Search(len(q.waiting), func(i int) bool { return !q.waiting[i].before(w) })
}

func (q *Queue) insertLocked(w Waiter) {
	i := q.indexLocked(w)
	q.waiting = slices.Insert(q.waiting, i, &w)
	q.byTarget[w.Target] = &w
}

func (q *Queue) removeLocked(target types.NamespacedName) bool {
	w, ok := q.byTarget[target]
	if !ok {
		return false
	}
	delete(q.byTarget, target)
	i := q.indexLocked(*w)
	q.waiting = slices.Delete(q.waiting, i, i+1)
	return true
}

func keyOf(pod *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

// slotOf is what an unfinished crawler Pod holds, from the labels and
// annotations the operator put on it.
func slotOf(pod *corev1.Pod) Slot {
	return Slot{
		Pod:    keyOf(pod),
		Node:   pod.Annotations[crawlpod.AnnotationEgressNode],
		Host:   pod.Labels[crawlpod.LabelHostHash],
		Target: types.UID(pod.Labels[crawlpod.LabelTargetUID]),
	}
}
