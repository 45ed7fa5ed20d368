package extract

// Collectors: the title, h1–h3 and links whose text the extractor keeps.
//
// Text lands in a collector when the tree builder inserts it inside the
// collector's element; it is kept (pre-cleaned, in a byte arena, as text
// nodes of the light tree) only while some enclosing collector still needs
// text: once MaxTextLen+1 non-space bytes are kept for an element, later
// text cannot change its cleaned, capped value.
//
// Order. The lists keep tree order, as a walk of the html.Parse tree gives
// it. An element inserted while no table is open is last in tree order and
// stays after every earlier one (the adoption agency moves a subtree to the
// end of its new parent, which keeps the order of the collectors in it), so
// it takes the next slot of its list at once. Only foster parenting, before
// an open table, puts an element before existing ones: collectors made while
// a table is open wait ("pending") until none is, then take their slots in
// one walk of the light tree. Clones of <a> elements are not links (see
// reference_test.go), so the adoption agency never makes a collector.
//
// Settling. A collector's text is final when its element has left the
// stack of open elements and no element it contains is still open (an <a>
// removed from the middle of the stack can keep open descendants: it is
// watched until the element above it goes). A final collector with a slot
// is settled: its text is cleaned into the slot and its kept text dropped.

import (
	"unicode"
	"unicode/utf8"

	a "golang.org/x/net/html/atom"
)

const (
	ckTitle uint8 = iota
	ckH1
	ckH2
	ckH3
	ckLink
)

const (
	// ancSkip marks nodes inside script, style, template and other
	// elements whose content is not page text.
	ancSkip = -2
	// needText is how many non-space bytes of an element's text decide its
	// cleaned value.
	needText = MaxTextLen + 1
	// maxChunks bounds the text nodes kept per element.
	maxChunks = 4 * MaxTextLen
	// maxPending bounds the collectors waiting for their place in tree
	// order (only while tables or links stay open).
	maxPending = 2*MaxLinks + 6*MaxHeadings
)

type collector struct {
	node      nodeID
	kind      uint8
	final     bool
	done      bool
	slot      int32 // place in its list, -1 while pending
	nonSpace  int32
	chunks    int32
	alt       int32
	altChunks int32
}

type linkInfo struct {
	href     string
	nofollow bool
}

type headSlot struct {
	text string
	done bool
}

type linkSlot struct {
	link Link
	done bool
}

type watcher struct {
	coll  int32
	watch nodeID
}

type collectState struct {
	arena     []byte
	colls     []collector
	freeColls []int32
	live      int // collectors not done
	pending   int
	finalQ    []int32
	// toSettle is set when settle has work: a final collector with a slot,
	// or pending collectors once no table is open.
	toSettle  bool
	watchers  []watcher
	links     []linkInfo
	titleSeen bool
	title     string
	heads     [3][]headSlot
	headsDone [3]int // settled non-empty headings per level
	linkSlots []linkSlot
	stopped   bool
	cl        cleaner
}

func (s *collectState) reset() {
	s.arena = s.arena[:0]
	s.colls = s.colls[:0]
	s.freeColls = s.freeColls[:0]
	s.live, s.pending = 0, 0
	s.finalQ = s.finalQ[:0]
	s.toSettle = false
	s.watchers = s.watchers[:0]
	s.links = s.links[:0]
	s.titleSeen, s.title = false, ""
	for i := range s.heads {
		s.heads[i] = s.heads[i][:0]
		s.headsDone[i] = 0
	}
	s.linkSlots = s.linkSlots[:0]
	s.stopped = false
}

func (b *builder) addLinkInfo(href, rel []byte) int32 {
	b.links = append(b.links, linkInfo{href: string(href), nofollow: hasTokenBytes(rel, "nofollow")})
	return int32(len(b.links) - 1)
}

// ancOf returns the nearest unsettled collector element that is id or an
// ancestor of id, -1 if there is none, ancSkip inside non-text content.
// Values are cached per epoch; moving nodes starts a new epoch.
func (b *builder) ancOf(id nodeID) int32 {
	if id == noNode {
		return -1
	}
	n := &b.nodes[id]
	if n.epoch == b.epoch {
		return n.anc
	}
	var v int32
	if n.flags&fSkip != 0 {
		v = ancSkip
	} else {
		pv := b.ancOf(n.parent)
		switch {
		case pv == ancSkip:
			v = ancSkip
		case b.nodes[id].coll >= 0:
			v = id
		default:
			v = pv
		}
	}
	n = &b.nodes[id]
	n.anc, n.epoch = v, b.epoch
	return v
}

// moved starts a new epoch after nodes changed parents.
func (b *builder) moved() { b.epoch++ }

// attached runs when a new element is first inserted in the tree: it makes
// the collectors (and keeps the alt text of images in links).
func (b *builder) attached(id nodeID) {
	n := &b.nodes[id]
	if n.flags&fCollectable == 0 {
		return
	}
	var kind uint8
	switch {
	case n.ns == nsHTML && n.atom == a.H1:
		kind = ckH1
	case n.ns == nsHTML && n.atom == a.H2:
		kind = ckH2
	case n.ns == nsHTML && n.atom == a.H3:
		kind = ckH3
	case n.atom == a.A && n.link >= 0:
		kind = ckLink
	case n.ns == nsHTML && n.atom == a.Title && n.parent == b.head && b.head != noNode && !b.titleSeen:
		b.titleSeen = true
		kind = ckTitle
	case n.ns == nsHTML && n.atom == a.Img:
		b.keepAlt(id)
		return
	default:
		return
	}
	if b.ancOf(n.parent) == ancSkip {
		return
	}
	var slot int32 = -1
	switch {
	case kind == ckTitle:
		slot = 0
	case b.openTables == 0:
		if !b.roomFor(kind) {
			return
		}
		slot = b.newSlot(kind, n.link)
	default:
		if b.pending >= maxPending {
			return
		}
		b.pending++
	}
	var ci int32
	if k := len(b.freeColls); k > 0 {
		ci = b.freeColls[k-1]
		b.freeColls = b.freeColls[:k-1]
	} else {
		b.colls = append(b.colls, collector{})
		ci = int32(len(b.colls) - 1)
	}
	b.colls[ci] = collector{node: id, kind: kind, slot: slot}
	b.live++
	b.nodes[id].coll = ci
	// The new collector is its own nearest collector: refresh the cache.
	b.nodes[id].epoch = 0
}

func (b *builder) roomFor(kind uint8) bool {
	if kind == ckLink {
		return len(b.linkSlots) < MaxLinks
	}
	return b.headsDone[kind-ckH1] < MaxHeadings
}

func (b *builder) newSlot(kind uint8, link int32) int32 {
	if kind == ckLink {
		li := b.links[link]
		b.linkSlots = append(b.linkSlots, linkSlot{link: Link{Href: li.href, NoFollow: li.nofollow}})
		return int32(len(b.linkSlots) - 1)
	}
	h := &b.heads[kind-ckH1]
	*h = append(*h, headSlot{})
	return int32(len(*h) - 1)
}

// collectText keeps text inserted into parent (before ref) for the
// collectors around it.
func (b *builder) collectText(parent, ref nodeID, d []byte) {
	anc := b.ancOf(parent)
	if anc < 0 {
		return
	}
	need := b.need(anc, parent, ref == noNode, false)
	if need <= 0 {
		return
	}
	prev := b.nodes[parent].last
	if ref != noNode {
		prev = b.nodes[ref].prev
	}
	start := len(b.arena)
	merge := prev != noNode && b.nodes[prev].kind == kindText && int(b.nodes[prev].off+b.nodes[prev].n) == start
	space := merge && start > 0 && b.arena[start-1] == ' '
	var ns int
	b.arena, ns = precleanAppend(b.arena, d, need, space)
	added := len(b.arena) - start
	if added == 0 {
		return
	}
	if merge {
		b.nodes[prev].n += int32(added)
	} else {
		t := b.alloc()
		tn := &b.nodes[t]
		tn.kind, tn.off, tn.n = kindText, int32(start), int32(added)
		b.insert(t, parent, ref)
	}
	for c := anc; c >= 0; c = b.ancOf(b.nodes[c].parent) {
		col := &b.colls[b.nodes[c].coll]
		col.nonSpace += int32(ns)
		col.chunks++
	}
}

// need is how many non-space bytes of text (alt text if alt) inserted
// into parent the collectors from anc outwards still need. Text that lands
// at the end of a collector's content is needed only up to the cap; text
// the parser puts before content it already has (foster parenting before a
// table in the element) may come first and is kept up to the whole cap.
// atEnd tells whether the insertion is after parent's last child.
func (b *builder) need(anc int32, parent nodeID, atEnd, alt bool) int {
	need := 0
	n := parent
	for c := anc; c >= 0; c = b.ancOf(b.nodes[c].parent) {
		for n != c {
			if b.nodes[n].next != noNode {
				atEnd = false
			}
			n = b.nodes[n].parent
		}
		col := &b.colls[b.nodes[c].coll]
		have, chunks := col.nonSpace, col.chunks
		if alt {
			if col.kind != ckLink {
				continue
			}
			have, chunks = col.alt, col.altChunks
		}
		if !atEnd {
			have = 0
		}
		if r := int(needText - have); r > need && chunks < maxChunks {
			need = r
		}
	}
	return need
}

// keepAlt keeps the alt text of image id for the links around it.
func (b *builder) keepAlt(id nodeID) {
	parent := b.nodes[id].parent
	anc := b.ancOf(parent)
	if anc < 0 {
		return
	}
	need := b.need(anc, parent, b.nodes[id].next == noNode, true)
	if need <= 0 {
		return
	}
	alt, ok := b.rawAttr("alt")
	if !ok {
		return
	}
	start := len(b.arena)
	var ns int
	b.arena, ns = precleanAppend(b.arena, alt, need, false)
	added := len(b.arena) - start
	if added == 0 {
		return
	}
	t := b.alloc()
	tn := &b.nodes[t]
	tn.kind, tn.off, tn.n = kindAlt, int32(start), int32(added)
	b.insert(t, parent, id)
	for c := anc; c >= 0; c = b.ancOf(b.nodes[c].parent) {
		if col := &b.colls[b.nodes[c].coll]; col.kind == ckLink {
			col.alt += int32(ns)
			col.altChunks++
		}
	}
}

// leftStack runs when id leaves the stack of open elements; above is the
// element that took its place (noNode when it was popped from the top).
func (b *builder) leftStack(id, above nodeID) {
	b.nodes[id].flags &^= fOnStack
	b.countAT(id, -1)
	for i := 0; i < len(b.watchers); {
		w := &b.watchers[i]
		if w.watch != id {
			i++
			continue
		}
		if above != noNode {
			w.watch = above
			i++
			continue
		}
		b.becameFinal(w.coll)
		b.watchers[i] = b.watchers[len(b.watchers)-1]
		b.watchers = b.watchers[:len(b.watchers)-1]
	}
	if ci := b.nodes[id].coll; ci >= 0 {
		if above != noNode {
			b.watchers = append(b.watchers, watcher{coll: ci, watch: above})
		} else {
			b.becameFinal(ci)
		}
	}
	b.release(id)
}

func (b *builder) becameFinal(ci int32) {
	c := &b.colls[ci]
	if c.final || c.done {
		return
	}
	c.final = true
	b.finalQ = append(b.finalQ, ci)
	if c.slot >= 0 {
		b.toSettle = true
	}
}

// release unwraps an element that no longer takes part in building the
// tree, and frees it when nothing refers to it.
func (b *builder) release(id nodeID) {
	n := &b.nodes[id]
	if n.flags&(fOnStack|fFixed|fFree) != 0 || n.coll >= 0 {
		return
	}
	if n.flags&fInTree != 0 {
		switch {
		case n.first == noNode && n.flags&fSkip == 0:
			// Nothing to move.
			p := n.parent
			b.detach(id)
			if p != noNode && b.nodes[p].first == noNode && b.nodes[p].flags&fSkip != 0 {
				b.release(p)
			}
		case n.flags&fSkip != 0 && n.first != noNode:
			return
		default:
			b.unwrap(id)
		}
	}
	if n := &b.nodes[id]; n.flags&(fInAFE|fPinned|fInTree|fNew) == 0 {
		b.freeNode(id)
	}
}

// freeNode returns a detached, unreferenced node to the slab.
func (b *builder) freeNode(id nodeID) {
	n := &b.nodes[id]
	if n.flags&fFree != 0 {
		return
	}
	n.flags = fFree
	n.coll = -1
	b.free = append(b.free, id)
}

// unwrap replaces id by its children. The collectors around them do not
// change; text with no collector around it any more is dropped.
func (b *builder) unwrap(id nodeID) {
	p := b.nodes[id].parent
	keep := p != noNode && b.ancOf(p) >= 0
	for c := b.nodes[id].first; c != noNode; {
		next := b.nodes[c].next
		b.detach(c)
		if b.nodes[c].kind != kindElem && !keep {
			b.freeNode(c)
		} else {
			b.insert(c, p, id)
		}
		c = next
	}
	b.detach(id)
	if p != noNode {
		if pn := &b.nodes[p]; pn.first == noNode && pn.flags&fSkip != 0 {
			b.release(p)
		}
	}
}

// dropText frees the kept text inside id, except inside unsettled
// collectors.
func (b *builder) dropText(id nodeID) {
	for c := b.nodes[id].first; c != noNode; {
		next := b.nodes[c].next
		n := &b.nodes[c]
		switch {
		case n.kind != kindElem:
			b.detach(c)
			b.freeNode(c)
		case n.coll < 0:
			b.dropText(c)
		}
		c = next
	}
}

// settle gives pending collectors their slots when their order is known
// and settles the final ones that have a slot. At the end of the document
// (eof) everything is final.
func (b *builder) settle(eof bool) {
	b.toSettle = false
	if eof {
		for ci := range b.colls {
			if c := &b.colls[ci]; !c.done && !c.final {
				c.final = true
				b.finalQ = append(b.finalQ, int32(ci))
			}
		}
		b.watchers = b.watchers[:0]
	}
	if b.pending > 0 && (b.openTables == 0 || eof) {
		b.assignPending()
	}
	j := 0
	for _, ci := range b.finalQ {
		if c := &b.colls[ci]; !c.done {
			if c.slot < 0 {
				b.finalQ[j] = ci
				j++
				continue
			}
			b.settleOne(ci)
		}
	}
	b.finalQ = b.finalQ[:j]
	if b.live == 0 && len(b.arena) > 0 {
		b.arena = b.arena[:0]
	}
}

// assignPending walks the light tree in order and gives each pending
// collector its slot.
func (b *builder) assignPending() {
	for id := b.root; id != noNode; {
		n := &b.nodes[id]
		if ci := n.coll; ci >= 0 {
			if c := &b.colls[ci]; c.slot < 0 && !c.done {
				b.pending--
				if b.roomFor(c.kind) {
					c.slot = b.newSlot(c.kind, n.link)
				} else {
					b.discard(ci)
				}
			}
		}
		// Next in pre-order.
		if f := b.nodes[id].first; f != noNode {
			id = f
			continue
		}
		for id != noNode && b.nodes[id].next == noNode {
			id = b.nodes[id].parent
		}
		if id != noNode {
			id = b.nodes[id].next
		}
	}
	if b.pending > 0 {
		// Not in the tree: nothing the tree walk would find.
		for ci := range b.colls {
			if c := &b.colls[ci]; !c.done && c.slot < 0 {
				b.discard(int32(ci))
			}
		}
		b.pending = 0
	}
}

// discard turns a collector back into a plain element.
func (b *builder) discard(ci int32) {
	c := &b.colls[ci]
	if c.slot < 0 && b.pending > 0 {
		b.pending--
	}
	c.done = true
	b.live--
	id := c.node
	b.nodes[id].coll = -1
	b.freeColls = append(b.freeColls, ci)
	b.moved()
	b.release(id)
}

func (b *builder) settleOne(ci int32) {
	c := &b.colls[ci]
	id := c.node
	text := b.collectorText(id, c.kind == ckLink)
	switch c.kind {
	case ckTitle:
		b.title = text
	case ckLink:
		s := &b.linkSlots[c.slot]
		s.link.Text, s.done = text, true
	default:
		k := c.kind - ckH1
		h := b.heads[k]
		h[c.slot] = headSlot{text: text, done: true}
		if text != "" {
			b.headsDone[k]++
		} else if int(c.slot) == len(h)-1 {
			b.heads[k] = h[:c.slot]
		}
	}
	c.done = true
	b.live--
	b.freeColls = append(b.freeColls, ci)
	b.nodes[id].coll = -1
	if b.ancOf(b.nodes[id].parent) < 0 {
		b.dropText(id)
	}
	b.release(id)
}

// collectorText is the cleaned text inside id: its text nodes in tree
// order, or for a link without any, the alt texts of its images.
func (b *builder) collectorText(id nodeID, link bool) string {
	// Usually the element holds one text node: its text is pre-cleaned
	// (no dropped characters, single spaces), so trimming and capping it
	// gives what the cleaner would.
	if f := b.nodes[id].first; f != noNode && f == b.nodes[id].last && b.nodes[f].kind == kindText {
		n := &b.nodes[f]
		return string(capClean(b.arena[n.off : n.off+n.n]))
	}
	b.cl.reset()
	b.walkText(id, kindText, false)
	if link && len(b.cl.buf) == 0 {
		b.cl.reset()
		b.walkText(id, kindAlt, true)
	}
	return string(b.cl.buf)
}

func (b *builder) walkText(root nodeID, kind uint8, sep bool) {
	id := b.nodes[root].first
	for id != noNode {
		n := &b.nodes[id]
		if n.kind == kind {
			if sep {
				b.cl.write(space)
			}
			b.cl.write(b.arena[n.off : n.off+n.n])
		}
		if n.first != noNode {
			id = n.first
			continue
		}
		for id != root && b.nodes[id].next == noNode {
			id = b.nodes[id].parent
		}
		if id == root {
			return
		}
		id = b.nodes[id].next
	}
}

var space = []byte{' '}

// capClean is CleanText for pre-cleaned text.
func capClean(t []byte) []byte {
	for len(t) > 0 && t[0] == ' ' {
		t = t[1:]
	}
	if len(t) > MaxTextLen {
		cut := MaxTextLen
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut]
	}
	for len(t) > 0 && t[len(t)-1] == ' ' {
		t = t[:len(t)-1]
	}
	return t
}

// removeBody handles <frameset> in body: the body element and all it
// holds leave the document, so its headings and links do too.
func (b *builder) removeBody() {
	body := b.oe[1]
	for ci := range b.colls {
		if c := &b.colls[ci]; !c.done && c.kind != ckTitle {
			c.final = true
			c.done = true
			b.live--
			b.nodes[c.node].coll = -1
			b.freeColls = append(b.freeColls, int32(ci))
		}
	}
	b.pending = 0
	b.watchers = b.watchers[:0]
	for i := range b.heads {
		b.heads[i] = b.heads[i][:0]
		b.headsDone[i] = 0
	}
	b.linkSlots = b.linkSlots[:0]
	b.moved()
	b.nodes[body].flags |= fFixed
	b.popTo(2)
	b.deleteSubtree(body)
	b.nodes[body].flags &^= fFixed
	b.popTo(1)
}

func (b *builder) deleteSubtree(id nodeID) {
	for c := b.nodes[id].first; c != noNode; {
		next := b.nodes[c].next
		b.deleteSubtree(c)
		c = next
	}
	b.detach(id)
	if n := &b.nodes[id]; n.flags&(fOnStack|fInAFE|fPinned|fFixed) == 0 && n.coll < 0 {
		b.freeNode(id)
	}
}

// finish settles everything at the end of the document and fills p.
func (b *builder) finish(p *Page) {
	b.settle(true)
	p.Title = b.title
	p.Lang = string(b.lang)
	for k := range b.heads {
		list := make([]string, 0, min(len(b.heads[k]), MaxHeadings))
		for _, h := range b.heads[k] {
			if h.text != "" && len(list) < MaxHeadings {
				list = append(list, h.text)
			}
		}
		switch k {
		case 0:
			p.H1 = list
		case 1:
			p.H2 = list
		case 2:
			p.H3 = list
		}
	}
	if len(b.linkSlots) > 0 {
		p.Links = make([]Link, len(b.linkSlots))
		for i, s := range b.linkSlots {
			p.Links[i] = s.link
		}
	}
}

// precleanAppend appends s to dst with whitespace runs collapsed to one
// space and dropped characters removed, stopping once need non-space bytes
// were written. space tells that dst already ends with a space that counts.
func precleanAppend(dst, s []byte, need int, space bool) ([]byte, int) {
	nonSpace := 0
	for i := 0; i < len(s) && nonSpace < need; {
		r, size := rune(s[i]), 1
		if r < utf8.RuneSelf {
			i++
			switch asciiClass[r] {
			case rKeep:
				dst = append(dst, byte(r))
				nonSpace++
				space = false
			case rSpace:
				if !space {
					dst = append(dst, ' ')
					space = true
				}
			}
			continue
		}
		r, size = utf8.DecodeRune(s[i:])
		i += size
		switch runeClass(r) {
		case rDrop:
			continue
		case rSpace:
			if !space {
				dst = append(dst, ' ')
				space = true
			}
			continue
		}
		dst = utf8.AppendRune(dst, r)
		nonSpace += utf8.RuneLen(r)
		space = false
	}
	return dst, nonSpace
}

// hasTokenBytes reports whether the whitespace-separated list holds tok
// (ASCII case-insensitive), as hasToken does, without a copy.
func hasTokenBytes(list []byte, tok string) bool {
	for len(list) > 0 {
		i := 0
		for i < len(list) && !isSpaceByteOrUnicode(list, i) {
			i++
		}
		if i == len(tok) && equalFoldASCII(list[:i], tok) {
			return true
		}
		if i == len(list) {
			break
		}
		_, size := utf8.DecodeRune(list[i:])
		list = list[i+size:]
	}
	return false
}

// isSpaceByteOrUnicode reports whether a Unicode space (as strings.Fields
// sees it) starts at b[i].
func isSpaceByteOrUnicode(b []byte, i int) bool {
	if c := b[i]; c < utf8.RuneSelf {
		return asciiSpace[c]
	}
	r, _ := utf8.DecodeRune(b[i:])
	return unicode.IsSpace(r)
}

var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}
