package crawlqueue

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fullQueue is 2 egress nodes of 4 slots, all busy, and waiting targets
// waiting: what thousands of waiting targets face.
func fullQueue(b *testing.B, waiting int) *Queue {
	b.Helper()
	q := New(4)
	q.SetWake(func(types.NamespacedName) {})
	q.SetNodes(twoNodes)
	for i := range 8 {
		q.Observe(crawlerPod(fmt.Sprintf("run-%d", i), twoNodes[i%2].Name, fmt.Sprintf("run-%d.example", i), corev1.PodRunning))
	}
	for i := range waiting {
		name := fmt.Sprintf("w%06d", i)
		q.Book(waiter(name, i, name+".example", ""), podKey(name+"-1"), types.UID(name), twoNodes)
	}
	return q
}

// BenchmarkBookWhileFull is one due target asking for a slot while the
// fleet is full and 100,000 targets wait: a new target, due after all of
// them (the usual case), or at a random place in the queue.
func BenchmarkBookWhileFull(b *testing.B) {
	for _, tc := range []struct {
		name string
		due  func(i int) int
	}{
		{"newest", func(i int) int { return 100_000 + i }},
		{"random", func(int) int { return rand.IntN(100_000) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			q := fullQueue(b, 100_000)
			b.ResetTimer()
			for i := range b.N {
				name := fmt.Sprintf("new%09d", i)
				d, _ := q.Book(waiter(name, tc.due(i), name+".example", ""), podKey(name+"-1"), types.UID(name), twoNodes)
				if d.Wait == 0 {
					b.Fatal("started on a full fleet")
				}
			}
		})
	}
}

// BenchmarkCrawlEnds is a crawl ending with 100,000 targets waiting: the
// slot frees, the plan picks the oldest waiter and wakes it, it books the
// slot, and its Pod shows up in the cache.
func BenchmarkCrawlEnds(b *testing.B) {
	q := fullQueue(b, 100_000)
	var running []*corev1.Pod
	for i := range 8 {
		running = append(running, crawlerPod(fmt.Sprintf("run-%d", i), twoNodes[i%2].Name, fmt.Sprintf("run-%d.example", i), corev1.PodRunning))
	}
	var woken []types.NamespacedName
	q.SetWake(func(t types.NamespacedName) { woken = append(woken, t) })
	b.ResetTimer()
	for i := range b.N {
		ended := running[i%8]
		ended.Status.Phase = corev1.PodSucceeded
		q.Observe(ended)
		if len(woken) != 1 {
			b.Fatalf("woken %v, want the oldest waiter", woken)
		}
		next := q.byTarget[woken[0]]
		woken = woken[:0]
		d, _ := q.Book(*next, podKey(next.Target.Name+"-1"), types.UID(next.Target.Name), twoNodes)
		if d.Wait != 0 {
			b.Fatalf("the oldest waiter could not start: %+v", d)
		}
		started := crawlerPod(next.Target.Name+"-1", d.Node.Name, next.Host, corev1.PodRunning)
		q.Observe(started)
		running[i%8] = started
	}
}

// BenchmarkStats is one metrics scrape with 100,000 targets waiting.
func BenchmarkStats(b *testing.B) {
	q := fullQueue(b, 100_000)
	b.ResetTimer()
	for range b.N {
		if st := q.Stats(); st.Waiting[AllFull] != 100_000 {
			b.Fatalf("stats = %v", st.Waiting)
		}
	}
}
