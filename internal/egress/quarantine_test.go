package egress

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

var q0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func at(minutes float64) time.Time { return q0.Add(time.Duration(minutes * float64(time.Minute))) }

// happening is one thing that happens to node "a" (published 79.139.58.98),
// and what the quarantine must then say.
type happening struct {
	at float64 // minutes after q0
	// One of: a mismatch (observed), a verification by a crawl started at
	// started, or just a look at the nodes.
	mismatch *string
	verified *float64
	ip       string // the address of a mismatch or verification; "" is 79.139.58.98
	run      string // the crawl's Pod
	// want: whether the mismatch started a quarantine and its length, or
	// whether the verification put the node back in use.
	started bool
	length  time.Duration
	back    bool
	// node is what Apply makes of "a" then: "out", "probation" or "in".
	node string
}

func s(v string) *string   { return &v }
func f(v float64) *float64 { return &v }
func published(ip string) string {
	if ip == "" {
		return "79.139.58.98"
	}
	return ip
}

func TestQuarantine(t *testing.T) {
	const m = time.Minute
	cases := []struct {
		name   string
		events []happening
	}{
		// Adversarial orders first.
		{"a reconcile replayed after a failed status patch gets the same answers", []happening{
			{at: 0, run: "t-crawl-1", mismatch: s("203.0.113.7"), started: true, length: 5 * m, node: "out"},
			{at: 0.1, run: "t-crawl-1", mismatch: s("203.0.113.7"), started: true, length: 5 * m, node: "out"},
			{at: 0.2, run: "u-crawl-4", mismatch: s("203.0.113.7"), node: "out"},
			{at: 7, run: "t-crawl-2", verified: f(6), back: true, node: "in"},
			{at: 7.1, run: "t-crawl-2", verified: f(6), back: true, node: "in"},
			{at: 7.2, run: "u-crawl-5", verified: f(7), node: "in"},
		}},
		{"a crawl started within the second the quarantine ended lifts it", []happening{
			{at: 0.01, mismatch: s("203.0.113.7"), started: true, length: 5 * m, node: "out"},
			{at: 6, verified: f(5), back: true, node: "in"},
		}},
		{"a crawl that checked before the mismatch does not lift it", []happening{
			{at: 0, mismatch: s("203.0.113.7"), started: true, length: 5 * m, node: "out"},
			{at: 1, verified: f(-1), node: "out"},
			{at: 6, verified: f(-1), node: "probation"},
			{at: 6, verified: f(2), node: "probation"},
		}},
		{"crawls already running fail too: one quarantine, not a longer one each", []happening{
			{at: 0, mismatch: s("203.0.113.7"), started: true, length: 5 * m, node: "out"},
			{at: 0.5, mismatch: s("203.0.113.7"), node: "out"},
			{at: 1, mismatch: s(""), node: "out"},
			{at: 5, node: "probation"},
		}},
		{"fixed by publishing the address sites see: a probe verifying it lifts the quarantine", []happening{
			{at: 0, mismatch: s("203.0.113.7"), started: true, length: 5 * m, node: "out"},
			{at: 7, verified: f(6), ip: "203.0.113.7", back: true, node: "in"},
		}},
		{"failed probes double the quarantine up to the hour", []happening{
			{at: 0, mismatch: s("203.0.113.7"), started: true, length: 5 * m, node: "out"},
			{at: 5, mismatch: s("203.0.113.7"), started: true, length: 10 * m, node: "out"},
			{at: 15, mismatch: s(""), started: true, length: 20 * m, node: "out"},
			{at: 35, mismatch: s("203.0.113.7"), started: true, length: 40 * m, node: "out"},
			{at: 75, mismatch: s("203.0.113.7"), started: true, length: 60 * m, node: "out"},
			{at: 135, mismatch: s("203.0.113.7"), started: true, length: 60 * m, node: "out"},
			{at: 195, node: "probation"},
		}},
		{"fixed: a probe verifies and the node is in use again", []happening{
			{at: 0, mismatch: s("203.0.113.7"), started: true, length: 5 * m, node: "out"},
			{at: 4.9, node: "out"},
			{at: 5, node: "probation"},
			{at: 8, verified: f(5), back: true, node: "in"},
			{at: 9, verified: f(8), node: "in"},
		}},
		{"after a verification the next mismatch starts over", []happening{
			{at: 0, mismatch: s("203.0.113.7"), started: true, length: 5 * m},
			{at: 5, mismatch: s("203.0.113.7"), started: true, length: 10 * m},
			{at: 16, verified: f(15), back: true, node: "in"},
			{at: 30, mismatch: s("203.0.113.8"), started: true, length: 5 * m, node: "out"},
		}},
		{"never mismatched: in use, verifications change nothing", []happening{
			{at: 0, verified: f(0), node: "in"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q Quarantine
			nodes := []Node{{Name: "a", IP: "79.139.58.98"}, {Name: "b", IP: "79.139.58.121"}}
			for i, e := range tc.events {
				if e.run == "" {
					e.run = fmt.Sprintf("crawl-%d", i)
				}
				switch {
				case e.mismatch != nil:
					started, length := q.Mismatch("a", e.run, published(e.ip), *e.mismatch, at(e.at))
					if started != e.started || length != e.length {
						t.Errorf("event %d: Mismatch = %v, %v; want %v, %v", i, started, length, e.started, e.length)
					}
				case e.verified != nil:
					if back := q.Verified("a", e.run, published(e.ip), at(*e.verified)); back != e.back {
						t.Errorf("event %d: Verified = %v, want %v", i, back, e.back)
					}
				}
				if e.node == "" {
					continue
				}
				got := q.Apply(nodes, at(e.at))
				want := []Node{{Name: "b", IP: "79.139.58.121"}}
				switch e.node {
				case "in":
					want = nodes
				case "probation":
					want = []Node{{Name: "a", IP: "79.139.58.98", Probation: true}, want[0]}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("event %d: Apply = %+v, want node a %s: %+v", i, got, e.node, want)
				}
			}
		})
	}
}

func TestQuarantineStates(t *testing.T) {
	q := Quarantine{Base: time.Minute, Max: 2 * time.Minute}
	q.Mismatch("b", "r1", "79.139.58.121", "", at(0))
	q.Mismatch("a", "r2", "79.139.58.98", "203.0.113.7", at(0))
	q.Verified("b", "r3", "79.139.58.121", at(1))
	want := []NodeState{
		{Node: "a", Unverified: true, Published: "79.139.58.98", Observed: "203.0.113.7", Until: at(1)},
		{Node: "b", Published: "79.139.58.121", Until: at(1)},
	}
	if got := q.States(); !reflect.DeepEqual(got, want) {
		t.Errorf("States = %+v, want %+v", got, want)
	}
	q.Forget("a")
	if got := q.States(); len(got) != 1 || got[0].Node != "b" {
		t.Errorf("States after Forget(a) = %+v, want b only", got)
	}
	if _, length := q.Mismatch("c", "r", "79.139.58.1", "", at(0)); length != time.Minute {
		t.Errorf("first quarantine %v, want Base", length)
	}
	q.Mismatch("c", "r", "79.139.58.1", "", at(1))
	if _, length := q.Mismatch("c", "r", "79.139.58.1", "", at(3)); length != 2*time.Minute {
		t.Errorf("third quarantine %v, want Max", length)
	}
}
