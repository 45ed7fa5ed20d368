package crawlqueue

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/lohisoft/crawl-operator/internal/egress"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// waiter is a waiter for host h, due at t0+due seconds, keeping node
// (may be "").
func waiter(name string, due int, host, node string) Waiter {
	return Waiter{Target: types.NamespacedName{Namespace: "ns", Name: name}, Due: t0.Add(time.Duration(due) * time.Second),
		Host: host, Site: "https://" + host, Node: node}
}

func slot(pod, node, host string) Slot {
	return Slot{Pod: types.NamespacedName{Namespace: "ns", Name: pod}, Node: node, Host: host, Target: types.UID(pod)}
}

var twoNodes = []egress.Node{{Name: "a", IP: "79.139.58.98"}, {Name: "b", IP: "79.139.58.121"}}

func sortWaiters(ws []Waiter) []*Waiter {
	var out []*Waiter
	for i := range ws {
		out = append(out, &ws[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].before(*out[j]) })
	return out
}

func starts(plan map[types.NamespacedName]egress.Node) map[string]string {
	out := map[string]string{}
	for t, n := range plan {
		out[t.Name] = n.Name
	}
	return out
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		waiters []Waiter
		running []Slot
		nodes   []egress.Node
		max     int
		want    map[string]string // target -> node ("*": any)
	}{
		{
			name:    "no node: nobody starts",
			waiters: []Waiter{waiter("x", 0, "x.example", "")},
			max:     2,
			want:    map[string]string{},
		},
		{
			name:    "oldest due first when one slot is free",
			waiters: []Waiter{waiter("young", 5, "y.example", ""), waiter("old", 1, "o.example", ""), waiter("mid", 3, "m.example", "")},
			running: []Slot{slot("p1", "a", "r1"), slot("p2", "b", "r2"), slot("p3", "b", "r3")},
			nodes:   twoNodes,
			max:     2,
			want:    map[string]string{"old": "a"},
		},
		{
			name:    "same due time: namespace/name decides",
			waiters: []Waiter{waiter("b", 1, "b.example", ""), waiter("a", 1, "a.example", "")},
			running: []Slot{slot("p1", "a", "r1"), slot("p2", "b", "r2"), slot("p3", "b", "r3")},
			nodes:   twoNodes,
			max:     2,
			want:    map[string]string{"a": "a"},
		},
		{
			name:    "a busy host is skipped and the next waiter takes the slot",
			waiters: []Waiter{waiter("old", 1, "busy.example", ""), waiter("young", 2, "free.example", "")},
			running: []Slot{slot("p1", "a", "busy.example")},
			nodes:   twoNodes[:1],
			max:     2,
			want:    map[string]string{"young": "a"},
		},
		{
			name:    "two waiters of one free host: only the older starts",
			waiters: []Waiter{waiter("http", 1, "h.example", ""), waiter("https", 2, "h.example", "")},
			nodes:   twoNodes,
			max:     2,
			want:    map[string]string{"http": "a"},
		},
		{
			name:    "a site keeps its node and waits for it while another node is free",
			waiters: []Waiter{waiter("pinned", 1, "p.example", "a"), waiter("free", 2, "f.example", "")},
			running: []Slot{slot("p1", "a", "r1")},
			nodes:   twoNodes,
			max:     1,
			want:    map[string]string{"free": "b"},
		},
		{
			name:    "a site whose node is gone goes anywhere",
			waiters: []Waiter{waiter("moved", 1, "m.example", "gone")},
			nodes:   twoNodes[1:],
			max:     1,
			want:    map[string]string{"moved": "b"},
		},
		{
			name: "free slots are shared out oldest first and no node gets more than max",
			waiters: []Waiter{waiter("w1", 1, "1.example", ""), waiter("w2", 2, "2.example", ""), waiter("w3", 3, "3.example", ""),
				waiter("w4", 4, "4.example", ""), waiter("w5", 5, "5.example", "")},
			running: []Slot{slot("p1", "a", "r1")},
			nodes:   twoNodes,
			max:     2,
			// w1 goes to the empty node; w2 and w3 tie, and a hash of the
			// site decides (egress.Choose's own test covers that).
			want: map[string]string{"w1": "b", "w2": "*", "w3": "*"},
		},
		{
			// Back from an egress quarantine: one crawl checks the node
			// before it takes more.
			name:    "a node on probation takes one crawl, the others go elsewhere",
			waiters: []Waiter{waiter("w1", 1, "1.example", ""), waiter("w2", 2, "2.example", ""), waiter("w3", 3, "3.example", "")},
			running: []Slot{slot("p1", "b", "r1")},
			nodes:   []egress.Node{{Name: "a", IP: "79.139.58.98", Probation: true}, twoNodes[1]},
			max:     4,
			want:    map[string]string{"w1": "a", "w2": "b", "w3": "b"},
		},
		{
			name:    "a node on probation with its crawl running takes nothing",
			waiters: []Waiter{waiter("w", 1, "w.example", "")},
			running: []Slot{slot("p1", "a", "r1")},
			nodes:   []egress.Node{{Name: "a", IP: "79.139.58.98", Probation: true}},
			max:     4,
			want:    map[string]string{},
		},
		{
			name:    "a node over its slots (max lowered) takes nothing",
			waiters: []Waiter{waiter("w", 1, "w.example", "")},
			running: []Slot{slot("p1", "a", "r1"), slot("p2", "a", "r2"), slot("p3", "a", "r3")},
			nodes:   twoNodes[:1],
			max:     2,
			want:    map[string]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := starts(Plan(sortWaiters(tc.waiters), LoadOf(tc.running), tc.nodes, tc.max))
			perNode := LoadOf(tc.running).PerNode
			for name, node := range got {
				if tc.want[name] == "*" {
					got[name] = "*"
				}
				perNode[node]++
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan starts %v, want %v", got, tc.want)
			}
			for node, n := range perNode {
				if n > tc.max && n > LoadOf(tc.running).PerNode[node] {
					t.Errorf("node %s planned to run %d crawls, more than %d", node, n, tc.max)
				}
			}
		})
	}
}

func TestWhy(t *testing.T) {
	full := []Slot{slot("p1", "a", "r1"), slot("p2", "b", "r2")}
	for _, tc := range []struct {
		name    string
		w       Waiter
		running []Slot
		nodes   []egress.Node
		want    Decision
	}{
		{"no node", waiter("w", 1, "w.example", ""), nil, nil, Decision{Wait: NoNode}},
		{"host busy", waiter("w", 1, "r1", ""), full, twoNodes, Decision{Wait: HostBusy, HostPod: "ns/p1"}},
		{"all full", waiter("w", 1, "w.example", ""), full, twoNodes, Decision{Wait: AllFull}},
		{"own node full", waiter("w", 1, "w.example", "a"), full[:1], twoNodes, Decision{Wait: NodeFull, Node: twoNodes[0]}},
		{"a slot is free: older waiters first", waiter("w", 1, "w.example", ""), full[:1], twoNodes, Decision{Wait: Behind}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Why(tc.w, LoadOf(tc.running), tc.nodes, 1)
			got.Node.Running = 0
			if got != tc.want {
				t.Errorf("Why = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Crawls spread over the egress nodes: each waiter takes the least busy
// node, so free nodes fill evenly whatever the sites' hashes say, and a
// site whose node is lost moves to the other.
func TestPlanSpreadsOverNodes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		waiters int
		running []Slot
		nodes   []egress.Node
		want    map[string]int
	}{
		{"two waiters, two free nodes: one each", 2, nil, twoNodes, map[string]int{"a": 1, "b": 1}},
		{"four waiters, two free nodes: two each", 4, nil, twoNodes, map[string]int{"a": 2, "b": 2}},
		{"one node busier: it gets fewer", 3, []Slot{slot("p1", "a", "r1")}, twoNodes, map[string]int{"a": 1, "b": 2}},
		{"one node lost: all go to the other", 3, nil, twoNodes[1:], map[string]int{"b": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ws []Waiter
			for i := range tc.waiters {
				h := fmt.Sprintf("site%d.example", i)
				ws = append(ws, waiter(h, i, h, ""))
			}
			got := map[string]int{}
			for _, n := range Plan(sortWaiters(ws), LoadOf(tc.running), tc.nodes, 4) {
				got[n.Name]++
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("crawls started per node %v, want %v", got, tc.want)
			}
		})
	}
}
