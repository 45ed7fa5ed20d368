package extract

import (
	"fmt"
	"os"

	"golang.org/x/net/html/atom"
)

// EXTRACT_DEBUG=1 makes internal errors panic with their stack and checks
// the light tree after every token.
func init() {
	if os.Getenv("EXTRACT_DEBUG") != "" {
		debugPanics = true
		debugCheck = checkBuilder
	}
}

func checkBuilder(b *builder) {
	bad := func(f string, args ...any) { panic(fmt.Sprintf("builder check: "+f, args...)) }
	onStack := map[nodeID]bool{}
	for _, id := range b.oe {
		n := &b.nodes[id]
		if n.flags&fFree != 0 || n.flags&fOnStack == 0 {
			bad("stack node %d flags %x", id, n.flags)
		}
		if onStack[id] {
			bad("node %d twice on the stack", id)
		}
		onStack[id] = true
	}
	tables := 0
	for _, id := range b.oe {
		if b.nodes[id].atom == atom.Table {
			tables++
		}
	}
	if tables != b.openTables {
		bad("openTables %d, %d on the stack", b.openTables, tables)
	}
	var open [countedSlots]int32
	for _, id := range b.oe {
		if n := &b.nodes[id]; n.ns == nsHTML && countedSlot(n.atom) >= 0 {
			open[countedSlot(n.atom)]++
		}
	}
	if open != b.open {
		bad("open counts %v, stack has %v", b.open, open)
	}
	for _, id := range b.afe {
		if id == scopeMarker {
			continue
		}
		if n := &b.nodes[id]; n.flags&fFree != 0 || n.flags&fInAFE == 0 {
			bad("afe node %d flags %x", id, n.flags)
		}
	}
	for id := range b.nodes {
		n := &b.nodes[id]
		if n.flags&fFree != 0 {
			continue
		}
		if n.flags&fOnStack != 0 && !onStack[nodeID(id)] {
			bad("node %d flagged on stack", id)
		}
		if n.flags&fInTree == 0 || n.parent == noNode {
			continue
		}
		p := &b.nodes[n.parent]
		if p.flags&fFree != 0 {
			bad("node %d has free parent %d", id, n.parent)
		}
		found := false
		prev := noNode
		for c := p.first; c != noNode; c = b.nodes[c].next {
			if b.nodes[c].prev != prev {
				bad("broken prev link at %d", c)
			}
			if b.nodes[c].parent != n.parent {
				bad("child %d of %d has parent %d", c, n.parent, b.nodes[c].parent)
			}
			if c == nodeID(id) {
				found = true
			}
			prev = c
		}
		if p.last != prev || !found {
			bad("node %d not among its parent's children", id)
		}
		if n.coll >= 0 {
			if c := b.colls[n.coll]; c.done || c.node != nodeID(id) {
				bad("node %d names collector %d (%+v)", id, n.coll, c)
			}
		}
	}
	for ci, c := range b.colls {
		if !c.done && (b.nodes[c.node].flags&fFree != 0 || b.nodes[c.node].coll != int32(ci)) {
			bad("collector %d lost its node %d", ci, c.node)
		}
	}
}
