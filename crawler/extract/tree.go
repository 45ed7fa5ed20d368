package extract

// This file holds the streaming tree builder: a port of the tree-construction
// stage of golang.org/x/net/html (parse.go, which implements the HTML5
// parsing algorithm with a few documented divergences) that keeps only what
// the extractor needs to decide which text lands inside which element.
//
// Every element gets a small node in a reusable slab while it can still
// matter: while it is on the stack of open elements or in the list of active
// formatting elements, while it is a title, heading or link whose text is not
// settled yet, or while it holds such text. A node that can no longer matter
// is unwrapped (its children move to its parent, which changes no collector's
// text) and its slot reused, so memory follows the depth of the document and
// the few elements being collected, not its size. Text is kept only when it
// lands inside a title, h1–h3 or link, and only as much as the caps need.
//
// Function and step names follow x/net/html so the two can be compared line
// by line; comments say where the port differs and why.
//
// Why a port and not html.Parse: html.Parse builds the whole DOM, text
// included, and is what goquery costs (2–3× the extractor's time and 5× its
// memory, see docs/crawler.md); the extractor must stay streaming. The
// differential fuzz targets keep the port honest against html.Parse.
//
// Being derived from golang.org/x/net/html/parse.go, this file carries its
// notice: Copyright 2010 The Go Authors. All rights reserved. Use of this
// source code is governed by a BSD-style license that can be found in the
// LICENSE file of golang.org/x/net.

import (
	"bytes"
	"hash/maphash"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	a "golang.org/x/net/html/atom"
)

// The work budget. A page can make the HTML5 algorithm scan the whole
// stack of open elements for every tag (2 MiB of "</p>" under 500 open
// elements) or rebuild dozens of formatting elements for every piece of
// text. html.Parse does all that work; the builder counts it (one unit per
// step of a scan, allocWork per node made) and stops, keeping what it has
// found and ignoring the rest of the page, once it has done more than
// workPerByte units per byte read beyond workBase. Ordinary pages do well
// under one unit per byte.
var (
	workPerByte = 16
	workBase    = 1 << 20
)

const allocWork = 4

// overBudget reports whether the builder has done too much work for the
// bytes it has read. A zero workPerByte turns the check off (tests).
func (b *builder) overBudget() bool {
	return workPerByte > 0 && b.work > workPerByte*b.consumed+workBase
}

// maxDepth is the deepest stack of open elements the builder follows. It is
// the limit golang.org/x/net/html enforces (html.Parse rejects deeper
// documents); the extractor keeps what it has found so far and ignores the
// rest of such a page.
const maxDepth = 512

type nodeID = int32

const (
	noNode nodeID = -1
	// scopeMarker is the marker in the list of active formatting elements.
	scopeMarker nodeID = -2
)

const (
	nsHTML uint8 = iota
	nsSVG
	nsMath
)

const (
	kindElem uint8 = iota
	kindText
	kindAlt // the alt text of an <img> inside a link
)

// Node flags.
const (
	fOnStack uint32 = 1 << iota
	fInAFE
	fPinned   // p.head, p.form or the root: kept allocated
	fFixed    // html and head elements: never unwrapped
	fInTree   // attached to a parent (or the root)
	fHasChild // had a child at some point (pre, listing, textarea rules)
	fSpecial
	fScopeStop // in defaultScopeStopTags for its namespace
	fSkip      // its content is not page text (script, style, template…)
	fHTMLIP    // HTML integration point
	fMathTextIP
	fNew         // created, never attached yet
	fFree        // in the free list
	fFormatting  // a formatting element (HTML)
	fCollectable // h1, h2, h3, a, title or img (HTML), a (SVG): see attached
)

type node struct {
	atom      a.Atom
	flags     uint32
	ns, kind  uint8
	key, fkey uint64 // lower-case tag name, and its Unicode case fold
	attrHash  uint64 // formatting elements: their attributes (Noah's Ark)
	nattr     int32
	parent    nodeID
	first     nodeID
	last      nodeID
	prev      nodeID
	next      nodeID
	slot      int8  // countedSlot for HTML elements, else -1
	coll      int32 // collector index, -1 if none
	link      int32 // index in links for an <a href>, -1 if none
	anc       int32 // cached nearest collector ancestor-or-self (see ancOf)
	epoch     uint32
	off, n    int32 // text and alt nodes: bytes in the arena
}

type mode uint8

const (
	imInitial mode = iota
	imBeforeHTML
	imBeforeHead
	imInHead
	imAfterHead
	imInBody
	imText
	imInTable
	imInCaption
	imInColumnGroup
	imInTableBody
	imInRow
	imInCell
	imInTemplate
	imAfterBody
	imInFrameset
	imAfterFrameset
	imAfterAfterBody
	imAfterAfterFrameset
	imIgnoreRest
)

type attr struct{ key, val []byte }

// token is the current token, read from the tokenizer without the
// allocations of Tokenizer.Token: the tag name is lower-cased into a fixed
// buffer and the attributes are read only when a rule needs them.
type token struct {
	typ       html.TokenType
	atom      a.Atom
	key, fkey uint64
	name      []byte // lower-case tag name (cut at len(nameBuf))
	synthetic bool   // an implied token: no attributes
	attrsRead bool
	attrs     []attr
	// rawAttr's single scan of the raw tag.
	rawScanned, rawOK bool
	rawHas            [3]bool
	rawVals           [3][]byte
	text              []byte
	nameBuf           [32]byte
}

var nameSeed = maphash.MakeSeed()

const hashBit = 1 << 63

// setName reads the tag name from the raw bytes of a tag token exactly as
// Tokenizer.TagName would return it (lower-cased, NUL as U+FFFD).
func (t *token) setName(raw []byte) {
	i := 1
	if len(raw) > 1 && raw[1] == '/' {
		i = 2
	}
	// Most names are lower-case letters and digits: use them in place.
	if j := i; j < len(raw) {
		for ; j < len(raw) && ('a' <= raw[j] && raw[j] <= 'z' || '0' <= raw[j] && raw[j] <= '9'); j++ {
		}
		if j < len(raw) && j-i <= len(t.nameBuf) {
			if c := raw[j]; c == ' ' || c == '>' || c == '/' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
				t.name = raw[i:j]
				t.atom = a.Lookup(t.name)
				t.key, t.fkey = nameKeys(t.atom, t.name, true)
				return
			}
		}
	}
	n, long, ascii := 0, false, true
	start := i
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '>' || c == '/' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			break
		}
		if c >= 0x80 || c == 0 {
			ascii = false
		}
		if n+3 > len(t.nameBuf) {
			long = true
			continue
		}
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == 0:
			t.nameBuf[n], t.nameBuf[n+1], t.nameBuf[n+2] = 0xEF, 0xBF, 0xBD
			n += 3
			continue
		}
		t.nameBuf[n] = c
		n++
	}
	end := i
	t.name = t.nameBuf[:n]
	if long {
		t.atom = 0
		var h maphash.Hash
		h.SetSeed(nameSeed)
		for _, c := range raw[start:end] {
			switch {
			case 'A' <= c && c <= 'Z':
				h.WriteByte(c + 'a' - 'A')
			case c == 0:
				h.WriteString("\uFFFD")
			default:
				h.WriteByte(c)
			}
		}
		t.key = h.Sum64() | hashBit
		if ascii {
			t.fkey = t.key
		} else {
			t.fkey = foldKeyLong(raw[start:end])
		}
		return
	}
	t.atom = a.Lookup(t.name)
	t.key, t.fkey = nameKeys(t.atom, t.name, ascii)
}

// nameKeys returns the identity of a lower-case tag name for exact
// comparisons (key) and for strings.EqualFold comparisons (fkey).
func nameKeys(at a.Atom, name []byte, ascii bool) (key, fkey uint64) {
	if at != 0 {
		key = uint64(at)
	} else {
		key = maphash.Bytes(nameSeed, name) | hashBit
	}
	if ascii {
		return key, key
	}
	return key, foldKey(name)
}

// foldKey hashes the simple case folding of name, so that two names have
// the same fold key when strings.EqualFold reports them equal (invalid UTF-8
// decodes to U+FFFD, as in EqualFold).
func foldKey(name []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(nameSeed)
	var buf [utf8.UTFMax]byte
	for len(name) > 0 {
		r, size := utf8.DecodeRune(name)
		name = name[size:]
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		h.Write(buf[:utf8.EncodeRune(buf[:], foldMin(r))])
	}
	return h.Sum64() | hashBit
}

func foldKeyLong(raw []byte) uint64 {
	b := make([]byte, 0, len(raw)+8)
	for _, c := range raw {
		switch {
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c == 0:
			b = append(b, "\uFFFD"...)
		default:
			b = append(b, c)
		}
	}
	return foldKey(b)
}

// foldMin returns the smallest rune of r's simple case-folding orbit.
func foldMin(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < m {
			m = f
		}
	}
	return m
}

// builder is the tree builder. The zero value is not ready: use reset.
type builder struct {
	z      *html.Tokenizer
	nodes  []node
	free   []nodeID
	oe     []nodeID
	afe    []nodeID
	root   nodeID // the html element
	head   nodeID
	form   nodeID
	im     mode
	origIM mode
	// origSet mirrors "originalIM != nil" in x/net/html.
	origSet         bool
	templateStack   []mode
	framesetOK      bool
	quirks          bool
	fosterParenting bool
	hasSelfClosing  bool
	tok             token
	epoch           uint32
	// openTables counts the table elements on the stack: while there are
	// none, a new element is last in tree order (see collect.go).
	openTables int
	// work counts steps of the algorithm (scans of the stack and of the
	// list of active formatting elements, nodes made) against the bytes
	// consumed: see overBudget.
	work, consumed int
	// open counts the HTML elements on the stack per countedSlot.
	open [countedSlots]int32

	// lang is the root element's lang attribute (cut to MaxLangLen), set
	// by the first <html> tag that has one, as html.Parse merges them.
	lang     []byte
	langSeen bool

	collectState
}

func (b *builder) reset(z *html.Tokenizer) {
	b.z = z
	b.nodes = b.nodes[:0]
	b.free = b.free[:0]
	b.oe = b.oe[:0]
	b.afe = b.afe[:0]
	b.root, b.head, b.form = noNode, noNode, noNode
	b.im, b.origIM, b.origSet = imInitial, imInitial, false
	b.templateStack = b.templateStack[:0]
	b.framesetOK, b.quirks, b.fosterParenting, b.hasSelfClosing = true, false, false, false
	b.tok.attrs = b.tok.attrs[:0]
	b.epoch = 1
	b.openTables = 0
	b.work, b.consumed = 0, 0
	b.open = [countedSlots]int32{}
	b.lang, b.langSeen = b.lang[:0], false
	b.collectState.reset()
}

// htmlAttrs takes the attributes of an <html> tag that reaches the root
// element (copyAttributes in x/net/html, for the one attribute kept).
func (b *builder) htmlAttrs() {
	if b.langSeen {
		return
	}
	if v, ok := b.attrVal("lang"); ok {
		b.lang, b.langSeen = append(b.lang[:0], v[:min(len(v), MaxLangLen)]...), true
	}
}

// ---- token input -------------------------------------------------------

// next reads the next token into b.tok and returns its type.
func (b *builder) next() html.TokenType {
	top := b.topOrNone()
	b.z.AllowCDATA(top != noNode && b.nodes[top].ns != nsHTML)
	tt := b.z.Next()
	b.consumed += len(b.z.Raw())
	t := &b.tok
	t.typ, t.synthetic, t.attrsRead, t.rawScanned = tt, false, false, false
	t.attrs = t.attrs[:0]
	t.text = nil
	b.hasSelfClosing = false
	switch tt {
	case html.TextToken:
		// Decoded by decodeText when the algorithm needs it.
	case html.DoctypeToken:
		t.text = b.z.Text()
	case html.StartTagToken, html.EndTagToken:
		t.setName(b.z.Raw())
	case html.SelfClosingTagToken:
		t.setName(b.z.Raw())
		t.typ = html.StartTagToken
		b.hasSelfClosing = true
	}
	return tt
}

// decodeText reads the current text token's text. Text unescapes and
// converts newlines byte by byte; most text has nothing to convert, and
// then its raw bytes are its text (not for a CDATA section, whose raw bytes
// include the "<![CDATA[" and "]]>" around it).
func (b *builder) decodeText() {
	if raw := b.z.Raw(); bytes.IndexByte(raw, '&') < 0 && bytes.IndexByte(raw, '\r') < 0 && bytes.IndexByte(raw, 0) < 0 && !bytes.HasPrefix(raw, cdataOpen) {
		b.tok.text = raw
	} else {
		b.tok.text = b.z.Text()
	}
}

var cdataOpen = []byte("<![CDATA[")

// ignorableText reports whether the current text token can change nothing
// the extractor keeps, so that the algorithm can skip it: in body, with an
// HTML current node that is not pre or listing (whose first newline is
// special), no formatting element to reconstruct, frameset-ok already off,
// and no title, heading or link around the current node. The algorithm
// would then only append the text to the current node.
func (b *builder) ignorableText() bool {
	if b.im != imInBody || b.framesetOK || len(b.oe) == 0 {
		return false
	}
	top := b.oe[len(b.oe)-1]
	if n := &b.nodes[top]; n.ns != nsHTML || n.atom == a.Pre || n.atom == a.Listing {
		return false
	}
	if k := len(b.afe); k > 0 {
		if last := b.afe[k-1]; last != scopeMarker && b.nodes[last].flags&fOnStack == 0 {
			return false
		}
	}
	return b.ancOf(top) < 0
}

// readAttrs reads the current tag's attributes once.
func (b *builder) readAttrs() []attr {
	t := &b.tok
	if t.attrsRead || t.synthetic {
		return t.attrs
	}
	t.attrsRead = true
	for {
		k, v, more := b.z.TagAttr()
		if k != nil {
			t.attrs = append(t.attrs, attr{k, v})
		}
		if !more {
			break
		}
	}
	return t.attrs
}

// rawAttr returns the value of the current start tag's attribute name (a
// lower-case ASCII name) as Tokenizer.TagAttr would, without copying: when
// the tag has no character reference, carriage return or NUL, the value is
// its raw bytes. It follows the tokenizer's attribute grammar (readTag);
// the first of repeated names wins. Otherwise it falls back to attrVal.
func (b *builder) rawAttr(name string) ([]byte, bool) {
	t := &b.tok
	if !t.rawScanned {
		t.rawScanned = true
		t.rawOK = !t.synthetic && !t.attrsRead && b.scanRawAttrs()
	}
	if !t.rawOK {
		return b.attrVal(name)
	}
	for i := range t.rawVals {
		if rawAttrNames[i] == name {
			if !t.rawHas[i] {
				return nil, false
			}
			return t.rawVals[i], true
		}
	}
	return b.attrVal(name)
}

// rawAttrNames are the attributes rawAttr reads.
var rawAttrNames = [3]string{"href", "rel", "alt"}

// scanRawAttrs reads rawAttrNames from the raw tag into b.tok, or reports
// false when the raw bytes are not the values.
func (b *builder) scanRawAttrs() bool {
	t := &b.tok
	t.rawHas = [3]bool{}
	raw := b.z.Raw()
	if bytes.IndexByte(raw, '&') >= 0 || bytes.IndexByte(raw, '\r') >= 0 || bytes.IndexByte(raw, 0) >= 0 {
		return false
	}
	i := 1
	for i < len(raw) && !isWS(raw[i]) && raw[i] != '/' && raw[i] != '>' {
		i++
	}
	for {
		for i < len(raw) && isWS(raw[i]) {
			i++
		}
		if i >= len(raw) || raw[i] == '>' {
			return true
		}
		// readTagAttrKey
		ks := i
		for ; i < len(raw); i++ {
			c := raw[i]
			if c == '=' && i == ks {
				continue
			}
			if c == '=' || isWS(c) || c == '/' || c == '>' {
				break
			}
		}
		key := raw[ks:i]
		// readTagAttrVal
		var val []byte
		for i < len(raw) && isWS(raw[i]) {
			i++
		}
		if i < len(raw) {
			switch c := raw[i]; c {
			case '/':
				i++
			case '=':
				i++
				for i < len(raw) && isWS(raw[i]) {
					i++
				}
				if i < len(raw) {
					switch q := raw[i]; q {
					case '>':
					case '\'', '"':
						i++
						vs := i
						for i < len(raw) && raw[i] != q {
							i++
						}
						val = raw[vs:i]
						if i < len(raw) {
							i++
						}
					default:
						vs := i
						i++
						for i < len(raw) && !isWS(raw[i]) && raw[i] != '>' {
							i++
						}
						val = raw[vs:i]
						if i < len(raw) && raw[i] != '>' {
							i++
						}
					}
				}
			}
		}
		for k, name := range rawAttrNames {
			if !t.rawHas[k] && keyIs(key, name) {
				t.rawVals[k], t.rawHas[k] = val, true
			}
		}
	}
}

// keyIs reports whether an attribute key, lower-cased as the tokenizer
// does (ASCII only), is name.
func keyIs(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// attrVal returns the value of the current tag's attribute name.
func (b *builder) attrVal(name string) ([]byte, bool) {
	for _, at := range b.readAttrs() {
		if string(at.key) == name {
			return at.val, true
		}
	}
	return nil, false
}

// ---- nodes -------------------------------------------------------------

func (b *builder) alloc() nodeID {
	b.work += allocWork
	var id nodeID
	if n := len(b.free); n > 0 {
		id = b.free[n-1]
		b.free = b.free[:n-1]
	} else {
		b.nodes = append(b.nodes, node{})
		id = nodeID(len(b.nodes) - 1)
	}
	b.nodes[id] = node{parent: noNode, first: noNode, last: noNode, prev: noNode, next: noNode, coll: -1, link: -1, slot: -1}
	return id
}

// newElement makes a detached element for the current token in namespace ns.
func (b *builder) newElement(ns uint8) nodeID {
	id := b.alloc()
	n := &b.nodes[id]
	t := &b.tok
	n.kind, n.ns, n.atom, n.key, n.fkey = kindElem, ns, t.atom, t.key, t.fkey
	if ns == nsHTML {
		info := htmlInfo(t.atom)
		n.flags = fNew | info.flags
		n.slot = info.slot
		if info.flags&fFormatting == 0 {
			return id // nothing below applies
		}
	} else {
		n.flags = fNew | elementFlags(ns, t.atom)
	}
	switch {
	case ns == nsMath && t.atom == a.AnnotationXml:
		for _, at := range b.readAttrs() {
			if string(at.key) == "encoding" && (equalFoldASCII(at.val, "text/html") || equalFoldASCII(at.val, "application/xhtml+xml")) {
				n.flags |= fHTMLIP
			}
		}
	case t.atom == a.A && ns != nsMath:
		if href, ok := b.rawAttr("href"); ok {
			rel, _ := b.rawAttr("rel")
			n.link = b.addLinkInfo(href, rel)
		}
	}
	// Noah's Ark compares attributes of formatting elements. Not of <a>:
	// the <a> start tag first removes any <a> after the last marker, so
	// there is never more than one to compare.
	if ns == nsHTML && t.atom != a.A {
		n.attrHash, n.nattr = b.attrsHash()
	}
	return id
}

// elemInfo is what the algorithm needs to know of an HTML element's name.
type elemInfo struct {
	flags uint32 // fSpecial, fScopeStop, fSkip, fFormatting, fCollectable
	slot  int8   // countedSlot
}

// htmlInfoTable holds elemInfo for every HTML element name that has any,
// by open addressing on the atom; other names have none.
var htmlInfoTable = func() (t [1024]struct {
	at   a.Atom
	info elemInfo
}) {
	var names []a.Atom
	for _, at := range []a.Atom{
		a.Address, a.Applet, a.Area, a.Article, a.Aside, a.Base, a.Basefont, a.Bgsound,
		a.Blockquote, a.Body, a.Br, a.Button, a.Caption, a.Center, a.Col, a.Colgroup, a.Dd,
		a.Details, a.Dir, a.Div, a.Dl, a.Dt, a.Embed, a.Fieldset, a.Figcaption, a.Figure,
		a.Footer, a.Form, a.Frame, a.Frameset, a.H1, a.H2, a.H3, a.H4, a.H5, a.H6, a.Head,
		a.Header, a.Hgroup, a.Hr, a.Html, a.Iframe, a.Img, a.Input, a.Keygen, a.Li, a.Link,
		a.Listing, a.Main, a.Marquee, a.Menu, a.Meta, a.Nav, a.Noembed, a.Noframes, a.Noscript,
		a.Object, a.Ol, a.P, a.Param, a.Plaintext, a.Pre, a.Script, a.Section, a.Select,
		a.Source, a.Style, a.Summary, a.Table, a.Tbody, a.Td, a.Template, a.Textarea, a.Tfoot,
		a.Th, a.Thead, a.Title, a.Tr, a.Track, a.Ul, a.Wbr, a.Xmp,
		a.A, a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.Nobr, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U,
		a.Ruby,
	} {
		names = append(names, at)
	}
	for _, at := range names {
		info := elemInfo{flags: elementFlags(nsHTML, at), slot: int8(countedSlot(at))}
		if isFormatting(at) {
			info.flags |= fFormatting
		}
		switch at {
		case a.H1, a.H2, a.H3, a.A, a.Title, a.Img:
			info.flags |= fCollectable
		}
		i := atomHash(at)
		for t[i].at != 0 {
			i = (i + 1) & (len(t) - 1)
		}
		t[i].at, t[i].info = at, info
	}
	return t
}()

func atomHash(at a.Atom) int { return int(uint32(at)*2654435761>>22) & 1023 }

func htmlInfo(at a.Atom) elemInfo {
	if at == 0 {
		return elemInfo{slot: -1}
	}
	for i := atomHash(at); ; i = (i + 1) & 1023 {
		switch htmlInfoTable[i].at {
		case at:
			return htmlInfoTable[i].info
		case 0:
			return elemInfo{slot: -1}
		}
	}
}

func equalFoldASCII(b []byte, s string) bool {
	// strings.EqualFold, as x/net/html uses, also folds non-ASCII runes; none
	// fold to the ASCII letters of these two values except the Kelvin sign
	// and long s, handled by the general comparison.
	if len(b) == len(s) {
		eq := true
		for i := 0; i < len(s); i++ {
			c := b[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != s[i] {
				eq = false
				break
			}
		}
		if eq {
			return true
		}
	}
	return equalFoldSlow(b, s)
}

func equalFoldSlow(b []byte, s string) bool {
	for _, c := range b {
		if c >= 0x80 {
			return foldKey(lowerASCII(b)) == foldKey([]byte(s))
		}
	}
	return false
}

func lowerASCII(b []byte) []byte {
	c := make([]byte, len(b))
	for i, x := range b {
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		c[i] = x
	}
	return c
}

// attrsHash sums a hash of each attribute: two elements have the same sum
// and count when they have the same attributes, which is the Noah's Ark
// comparison (the tokenizer drops repeated attribute names).
func (b *builder) attrsHash() (uint64, int32) {
	var sum uint64
	attrs := b.readAttrs()
	for _, at := range attrs {
		var h maphash.Hash
		h.SetSeed(nameSeed)
		h.Write(at.key)
		h.WriteByte(0)
		h.Write(at.val)
		sum += h.Sum64()
	}
	return sum, int32(len(attrs))
}

func isFormatting(at a.Atom) bool {
	switch at {
	case a.A, a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.Nobr, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
		return true
	}
	return false
}

// elementFlags precomputes the namespace-dependent element categories.
func elementFlags(ns uint8, at a.Atom) uint32 {
	var f uint32
	switch ns {
	case nsHTML:
		switch at {
		case a.Address, a.Applet, a.Area, a.Article, a.Aside, a.Base, a.Basefont, a.Bgsound,
			a.Blockquote, a.Body, a.Br, a.Button, a.Caption, a.Center, a.Col, a.Colgroup, a.Dd,
			a.Details, a.Dir, a.Div, a.Dl, a.Dt, a.Embed, a.Fieldset, a.Figcaption, a.Figure,
			a.Footer, a.Form, a.Frame, a.Frameset, a.H1, a.H2, a.H3, a.H4, a.H5, a.H6, a.Head,
			a.Header, a.Hgroup, a.Hr, a.Html, a.Iframe, a.Img, a.Input, a.Keygen, a.Li, a.Link,
			a.Listing, a.Main, a.Marquee, a.Menu, a.Meta, a.Nav, a.Noembed, a.Noframes, a.Noscript,
			a.Object, a.Ol, a.P, a.Param, a.Plaintext, a.Pre, a.Script, a.Section, a.Select,
			a.Source, a.Style, a.Summary, a.Table, a.Tbody, a.Td, a.Template, a.Textarea, a.Tfoot,
			a.Th, a.Thead, a.Title, a.Tr, a.Track, a.Ul, a.Wbr, a.Xmp:
			f |= fSpecial
		}
		switch at {
		case a.Applet, a.Caption, a.Html, a.Table, a.Td, a.Th, a.Marquee, a.Object, a.Template, a.Select:
			f |= fScopeStop
		}
		switch at {
		case a.Script, a.Style, a.Template, a.Noscript, a.Iframe, a.Noembed, a.Noframes:
			f |= fSkip
		}
	case nsMath:
		switch at {
		case a.Mi, a.Mo, a.Mn, a.Ms, a.Mtext:
			f |= fSpecial | fScopeStop | fMathTextIP
		case a.AnnotationXml:
			f |= fSpecial | fScopeStop
		case a.Script, a.Style:
			f |= fSkip
		}
	case nsSVG:
		switch at {
		case a.ForeignObject, a.Desc, a.Title:
			f |= fSpecial | fScopeStop | fHTMLIP
		case a.Script, a.Style:
			f |= fSkip
		case a.A:
			f |= fCollectable // an SVG link
		}
	}
	return f
}

func (b *builder) topOrNone() nodeID {
	if n := len(b.oe); n > 0 {
		return b.oe[n-1]
	}
	return noNode
}

func (b *builder) isHTML(id nodeID, at a.Atom) bool {
	n := &b.nodes[id]
	return n.ns == nsHTML && n.atom == at
}

// ---- tree operations -----------------------------------------------------

// appendChild attaches c as the last child of p (or before ref if ref is
// not noNode). p == noNode is the document.
func (b *builder) insert(c, p, ref nodeID) {
	cn := &b.nodes[c]
	cn.parent = p
	cn.flags |= fInTree
	isNew := cn.flags&fNew != 0
	cn.flags &^= fNew
	if p != noNode {
		pn := &b.nodes[p]
		pn.flags |= fHasChild
		var prev nodeID
		if ref != noNode {
			prev = b.nodes[ref].prev
			b.nodes[ref].prev = c
		} else {
			prev = pn.last
			pn.last = c
		}
		if prev != noNode {
			b.nodes[prev].next = c
		} else {
			pn.first = c
		}
		cn = &b.nodes[c]
		cn.prev, cn.next = prev, ref
	}
	if isNew && cn.kind == kindElem {
		b.attached(c)
	}
}

// detach removes c from its parent.
func (b *builder) detach(c nodeID) {
	cn := &b.nodes[c]
	if cn.flags&fInTree == 0 {
		return
	}
	p, prev, next := cn.parent, cn.prev, cn.next
	if p != noNode {
		if prev != noNode {
			b.nodes[prev].next = next
		} else {
			b.nodes[p].first = next
		}
		if next != noNode {
			b.nodes[next].prev = prev
		} else {
			b.nodes[p].last = prev
		}
	}
	cn.parent, cn.prev, cn.next = noNode, noNode, noNode
	cn.flags &^= fInTree
}

// reparentChildren moves all children of src to the end of dst.
func (b *builder) reparentChildren(dst, src nodeID) {
	for {
		c := b.nodes[src].first
		if c == noNode {
			return
		}
		b.detach(c)
		b.insert(c, dst, noNode)
	}
}

// insertionPlace is where addChild would put a new node: the current node,
// or the foster parent.
func (b *builder) insertionPlace() (parent, ref nodeID) {
	if b.shouldFosterParent() {
		return b.fosterPlace()
	}
	return b.topOrNone(), noNode
}

func (b *builder) shouldFosterParent() bool {
	if b.fosterParenting {
		switch b.nodes[b.topOrNone()].atom {
		case a.Table, a.Tbody, a.Tfoot, a.Thead, a.Tr:
			return true
		}
	}
	return false
}

// fosterPlace implements the foster parenting rules (x/net/html
// fosterParent): it returns the parent and the node to insert before.
func (b *builder) fosterPlace() (parent, ref nodeID) {
	i := len(b.oe) - 1
	for ; i >= 0; i-- {
		b.work++
		if b.nodes[b.oe[i]].atom == a.Table {
			break
		}
	}
	j := len(b.oe) - 1
	for ; j >= 0; j-- {
		b.work++
		if b.nodes[b.oe[j]].atom == a.Template {
			break
		}
	}
	if j >= 0 && (i < 0 || j > i) {
		return b.oe[j], noNode
	}
	if i < 0 {
		return b.oe[0], noNode
	}
	table := b.oe[i]
	parent = b.nodes[table].parent
	if (parent == noNode || b.nodes[table].flags&fInTree == 0) && i > 0 {
		// A table without a parent: x/net/html inserts before it into the
		// element below it on the stack, which leaves that element's child
		// list inconsistent; appending is what its tree walk then shows.
		return b.oe[i-1], noNode
	}
	return parent, table
}

// addChild attaches a new element at the insertion place and pushes it.
func (b *builder) addChild(c nodeID) {
	p, ref := b.insertionPlace()
	b.insert(c, p, ref)
	b.push(c)
}

// addElement adds an HTML element for the current token.
func (b *builder) addElement() {
	b.addChild(b.newElement(nsHTML))
}

// addComment records that a comment node was added (only child-ness
// matters: the pre/listing/textarea newline rules look at it).
func (b *builder) addComment() {
	p, _ := b.insertionPlace()
	if p != noNode {
		b.nodes[p].flags |= fHasChild
	}
}

// addText inserts text at the insertion place.
func (b *builder) addText(d []byte) {
	if len(d) == 0 {
		return
	}
	p, ref := b.insertionPlace()
	if p == noNode {
		return
	}
	b.nodes[p].flags |= fHasChild
	b.collectText(p, ref, d)
}

// ---- the stack of open elements and the list of active formatting
// elements ------------------------------------------------------------------

func (b *builder) push(id nodeID) {
	if len(b.oe) >= maxDepth {
		// html.Parse panics here ("open stack of elements exceeds 512
		// nodes") and returns no tree; stop reading the page.
		b.im = imIgnoreRest
		b.stopped = true
		b.nodes[id].flags |= fOnStack // popped like the others below
		b.oe = append(b.oe, id)
		b.countAT(id, 1)
		return
	}
	b.nodes[id].flags |= fOnStack
	b.oe = append(b.oe, id)
	b.countAT(id, 1)
}

// countedSlot numbers the elements whose count on the stack of open
// elements is kept (HTML namespace), so that a scope check for elements
// none of which is open costs nothing; -1 for the others.
func countedSlot(at a.Atom) int {
	switch at {
	case a.P:
		return 0
	case a.Li:
		return 1
	case a.Dd:
		return 2
	case a.Dt:
		return 3
	case a.Button:
		return 4
	case a.Select:
		return 5
	case a.Ruby:
		return 6
	case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
		return 7
	case a.Form:
		return 8
	case a.Nobr:
		return 9
	case a.Td, a.Th:
		return 10
	case a.Tr:
		return 11
	case a.Tbody, a.Thead, a.Tfoot:
		return 12
	case a.Caption:
		return 13
	case a.Template:
		return 14
	case a.Body:
		return 15
	case a.Applet, a.Marquee, a.Object:
		return 16
	case a.A:
		return 17
	}
	return -1
}

const countedSlots = 18

// countAT keeps the counts when id joins (d = 1) or leaves (d = -1) the
// stack of open elements.
func (b *builder) countAT(id nodeID, d int) {
	n := &b.nodes[id]
	if n.slot >= 0 {
		b.open[n.slot] += int32(d)
	}
	if n.atom == a.Table {
		b.openTables += d
		if b.openTables == 0 && b.pending > 0 {
			b.toSettle = true
		}
	}
}

func (b *builder) pop() nodeID {
	i := len(b.oe) - 1
	id := b.oe[i]
	b.oe = b.oe[:i]
	b.leftStack(id, noNode)
	return id
}

// popTo pops elements until the stack has i elements.
func (b *builder) popTo(i int) {
	for len(b.oe) > i {
		b.pop()
	}
}

func (b *builder) stackIndex(id nodeID) int {
	if b.nodes[id].flags&fOnStack == 0 {
		return -1
	}
	for i := len(b.oe) - 1; i >= 0; i-- {
		b.work++
		if b.oe[i] == id {
			return i
		}
	}
	return -1
}

// removeFromStack removes id from anywhere in the stack.
func (b *builder) removeFromStack(id nodeID) {
	i := b.stackIndex(id)
	if i < 0 {
		return
	}
	if i == len(b.oe)-1 {
		b.pop()
		return
	}
	copy(b.oe[i:], b.oe[i+1:])
	b.oe = b.oe[:len(b.oe)-1]
	b.leftStack(id, b.oe[i])
}

func (b *builder) insertInStack(i int, id nodeID) {
	b.oe = append(b.oe, noNode)
	copy(b.oe[i+1:], b.oe[i:])
	b.oe[i] = id
	b.nodes[id].flags |= fOnStack
	b.countAT(id, 1)
}

// replaceInStack puts clone where old is.
func (b *builder) replaceInStack(i int, clone nodeID) {
	old := b.oe[i]
	b.oe[i] = clone
	b.nodes[clone].flags |= fOnStack
	b.countAT(clone, 1)
	b.leftStack(old, clone)
}

func (b *builder) containsTemplate() bool {
	if !b.mayBeOpen(a.Template) {
		return false
	}
	for _, id := range b.oe {
		b.work++
		if b.isHTML(id, a.Template) {
			return true
		}
	}
	return false
}

func (b *builder) afeIndex(id nodeID) int {
	if id >= 0 && b.nodes[id].flags&fInAFE == 0 {
		return -1
	}
	for i := len(b.afe) - 1; i >= 0; i-- {
		b.work++
		if b.afe[i] == id {
			return i
		}
	}
	return -1
}

func (b *builder) afeRemoveAt(i int) {
	id := b.afe[i]
	copy(b.afe[i:], b.afe[i+1:])
	b.afe = b.afe[:len(b.afe)-1]
	if id >= 0 {
		b.nodes[id].flags &^= fInAFE
		b.release(id)
	}
}

func (b *builder) afeRemove(id nodeID) {
	if i := b.afeIndex(id); i >= 0 {
		b.afeRemoveAt(i)
	}
}

func (b *builder) afeInsert(i int, id nodeID) {
	b.afe = append(b.afe, noNode)
	copy(b.afe[i+1:], b.afe[i:])
	b.afe[i] = id
	b.nodes[id].flags |= fInAFE
}

func (b *builder) afeReplace(i int, id nodeID) {
	old := b.afe[i]
	b.afe[i] = id
	b.nodes[id].flags |= fInAFE
	if old >= 0 {
		b.nodes[old].flags &^= fInAFE
		b.release(old)
	}
}

func (b *builder) afePushMarker() { b.afe = append(b.afe, scopeMarker) }

func (b *builder) clearActiveFormattingElements() {
	for len(b.afe) > 0 {
		i := len(b.afe) - 1
		id := b.afe[i]
		b.afeRemoveAt(i)
		if id == scopeMarker {
			return
		}
	}
}

// clone makes a detached copy of element id (x/net/html Node.clone).
func (b *builder) clone(id nodeID) nodeID {
	c := b.alloc()
	src := b.nodes[id]
	n := &b.nodes[c]
	n.kind, n.ns, n.atom, n.key, n.fkey, n.slot = src.kind, src.ns, src.atom, src.key, src.fkey, src.slot
	n.flags = fNew | src.flags&(fSpecial|fScopeStop|fSkip|fHTMLIP|fMathTextIP|fFormatting)
	// A clone of an <a> is not a link: it gets no link info.
	n.attrHash, n.nattr = src.attrHash, src.nattr
	return c
}

// ---- scope ---------------------------------------------------------------

type scope int

const (
	defaultScope scope = iota
	listItemScope
	buttonScope
	tableScope
	tableRowScope
	tableBodyScope
)

func (b *builder) indexOfElementInScope(s scope, match ...a.Atom) int {
	if !b.mayBeOpen(match...) {
		return -1
	}
	for i := len(b.oe) - 1; i >= 0; i-- {
		b.work++
		n := &b.nodes[b.oe[i]]
		if n.ns == nsHTML {
			for _, t := range match {
				if t == n.atom {
					return i
				}
			}
			switch s {
			case listItemScope:
				if n.atom == a.Ol || n.atom == a.Ul {
					return -1
				}
			case buttonScope:
				if n.atom == a.Button {
					return -1
				}
			case tableScope:
				if n.atom == a.Html || n.atom == a.Table || n.atom == a.Template {
					return -1
				}
			}
		}
		switch s {
		case defaultScope, listItemScope, buttonScope:
			if n.flags&fScopeStop != 0 {
				return -1
			}
		}
	}
	return -1
}

// mayBeOpen reports whether an HTML element with one of the tag names may
// be on the stack of open elements (false only when none is).
func (b *builder) mayBeOpen(match ...a.Atom) bool {
	for _, t := range match {
		if k := countedSlot(t); k < 0 || b.open[k] > 0 {
			return true
		}
	}
	return false
}

func (b *builder) elementInScope(s scope, match ...a.Atom) bool {
	return b.indexOfElementInScope(s, match...) != -1
}

func (b *builder) popUntil(s scope, match ...a.Atom) bool {
	if i := b.indexOfElementInScope(s, match...); i != -1 {
		b.popTo(i)
		return true
	}
	return false
}

func (b *builder) clearStackToContext(s scope) {
	for i := len(b.oe) - 1; i >= 0; i-- {
		b.work++
		at := b.nodes[b.oe[i]].atom
		switch s {
		case tableScope:
			if at == a.Html || at == a.Table || at == a.Template {
				b.popTo(i + 1)
				return
			}
		case tableRowScope:
			if at == a.Html || at == a.Tr || at == a.Template {
				b.popTo(i + 1)
				return
			}
		case tableBodyScope:
			if at == a.Html || at == a.Tbody || at == a.Tfoot || at == a.Thead || at == a.Template {
				b.popTo(i + 1)
				return
			}
		}
	}
}

// generateImpliedEndTags pops dd, dt, li, optgroup, option, p, rb, rp, rt
// and rtc elements, except the one named except (0 for none).
func (b *builder) generateImpliedEndTags(except a.Atom) {
	i := len(b.oe) - 1
	for ; i >= 0; i-- {
		b.work++
		at := b.nodes[b.oe[i]].atom
		switch at {
		case a.Dd, a.Dt, a.Li, a.Optgroup, a.Option, a.P, a.Rb, a.Rp, a.Rt, a.Rtc:
			if at == except {
				break
			}
			continue
		}
		break
	}
	b.popTo(i + 1)
}

// ---- the algorithm -------------------------------------------------------

// parseGenericRawTextElement: x/net/html sets originalIM without the
// "set twice" check.
func (b *builder) parseGenericRawTextElement() {
	b.addElement()
	b.origIM, b.origSet = b.im, true
	b.im = imText
}

// setOriginalIM returns false where x/net/html panics (and html.Parse
// fails): the builder then stops.
func (b *builder) setOriginalIM() bool {
	if b.origSet {
		b.stop()
		return false
	}
	b.origIM, b.origSet = b.im, true
	return true
}

func (b *builder) stop() {
	b.im = imIgnoreRest
	b.stopped = true
}

func (b *builder) addFormattingElement() {
	at := b.tok.atom
	b.addElement()
	top := b.topOrNone()
	tn := b.nodes[top]
	identical := 0
	for i := len(b.afe) - 1; i >= 0; i-- {
		b.work++
		id := b.afe[i]
		if id == scopeMarker {
			break
		}
		n := &b.nodes[id]
		if n.ns != nsHTML || n.atom != at || n.nattr != tn.nattr || n.attrHash != tn.attrHash {
			continue
		}
		identical++
		if identical >= 3 {
			b.afeRemoveAt(i)
		}
	}
	b.afe = append(b.afe, top)
	b.nodes[top].flags |= fInAFE
}

func (b *builder) reconstructActiveFormattingElements() {
	if len(b.afe) == 0 {
		return
	}
	last := len(b.afe) - 1
	if id := b.afe[last]; id == scopeMarker || b.nodes[id].flags&fOnStack != 0 {
		return
	}
	i := last
	for b.afe[i] != scopeMarker && b.nodes[b.afe[i]].flags&fOnStack == 0 {
		b.work++
		if i == 0 {
			i = -1
			break
		}
		i--
	}
	for {
		i++
		c := b.clone(b.afe[i])
		b.addChild(c)
		b.afeReplace(i, c)
		if i == len(b.afe)-1 || b.stopped {
			break
		}
	}
}

func (b *builder) resetInsertionMode() {
	for i := len(b.oe) - 1; i >= 0; i-- {
		b.work++
		n := &b.nodes[b.oe[i]]
		last := i == 0
		switch n.atom {
		case a.Td, a.Th:
			b.im = imInCell
		case a.Tr:
			b.im = imInRow
		case a.Tbody, a.Thead, a.Tfoot:
			b.im = imInTableBody
		case a.Caption:
			b.im = imInCaption
		case a.Colgroup:
			b.im = imInColumnGroup
		case a.Table:
			b.im = imInTable
		case a.Template:
			if n.ns != nsHTML {
				continue
			}
			if len(b.templateStack) == 0 {
				b.stop() // x/net/html indexes an empty stack and fails
				return
			}
			b.im = b.templateStack[len(b.templateStack)-1]
		case a.Head:
			b.im = imInHead
		case a.Body:
			b.im = imInBody
		case a.Frameset:
			b.im = imInFrameset
		case a.Html:
			if b.head == noNode {
				b.im = imBeforeHead
			} else {
				b.im = imAfterHead
			}
		default:
			if last {
				b.im = imInBody
				return
			}
			continue
		}
		return
	}
}

func (b *builder) parseImpliedToken(t html.TokenType, at a.Atom) {
	saved, selfClosing := b.tok, b.hasSelfClosing
	b.tok = token{typ: t, atom: at, key: uint64(at), fkey: uint64(at), synthetic: true}
	b.hasSelfClosing = false
	b.parseCurrentToken()
	attrs := b.tok.attrs
	b.tok, b.hasSelfClosing = saved, selfClosing
	if cap(attrs) > cap(b.tok.attrs) {
		b.tok.attrs = attrs[:0]
	}
}

func (b *builder) parseCurrentToken() {
	for consumed := false; !consumed; {
		if b.inForeignContent() {
			consumed = b.parseForeignContent()
		} else {
			consumed = b.step(b.im)
		}
	}
	b.hasSelfClosing = false
}

func (b *builder) step(m mode) bool {
	switch m {
	case imInitial:
		return b.initialIM()
	case imBeforeHTML:
		return b.beforeHTMLIM()
	case imBeforeHead:
		return b.beforeHeadIM()
	case imInHead:
		return b.inHeadIM()
	case imAfterHead:
		return b.afterHeadIM()
	case imInBody:
		return b.inBodyIM()
	case imText:
		return b.textIM()
	case imInTable:
		return b.inTableIM()
	case imInCaption:
		return b.inCaptionIM()
	case imInColumnGroup:
		return b.inColumnGroupIM()
	case imInTableBody:
		return b.inTableBodyIM()
	case imInRow:
		return b.inRowIM()
	case imInCell:
		return b.inCellIM()
	case imInTemplate:
		return b.inTemplateIM()
	case imAfterBody:
		return b.afterBodyIM()
	case imInFrameset:
		return b.inFramesetIM()
	case imAfterFrameset:
		return b.afterFramesetIM()
	case imAfterAfterBody:
		return b.afterAfterBodyIM()
	case imAfterAfterFrameset:
		return b.afterAfterFramesetIM()
	}
	return true // imIgnoreRest
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' }

func trimLeftWS(d []byte) []byte {
	for len(d) > 0 && isWS(d[0]) {
		d = d[1:]
	}
	return d
}

func allWS(d []byte) bool { return len(trimLeftWS(d)) == 0 }

// removeNUL drops NUL bytes in place.
func removeNUL(d []byte) []byte {
	j := bytes.IndexByte(d, 0)
	if j < 0 {
		return d
	}
	for _, c := range d[j:] {
		if c != 0 {
			d[j] = c
			j++
		}
	}
	return d[:j]
}

func (b *builder) initialIM() bool {
	switch b.tok.typ {
	case html.TextToken:
		b.tok.text = trimLeftWS(b.tok.text)
		if len(b.tok.text) == 0 {
			return true
		}
	case html.CommentToken:
		return true
	case html.DoctypeToken:
		b.quirks = doctypeQuirks(string(b.tok.text))
		b.im = imBeforeHTML
		return true
	}
	b.quirks = true
	b.im = imBeforeHTML
	return false
}

func (b *builder) beforeHTMLIM() bool {
	switch b.tok.typ {
	case html.DoctypeToken:
		return true
	case html.TextToken:
		b.tok.text = trimLeftWS(b.tok.text)
		if len(b.tok.text) == 0 {
			return true
		}
	case html.StartTagToken:
		if b.tok.atom == a.Html {
			b.htmlAttrs()
			b.addElement()
			b.root = b.topOrNone()
			b.nodes[b.root].flags |= fPinned | fFixed
			b.im = imBeforeHead
			return true
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Head, a.Body, a.Html, a.Br:
			b.parseImpliedToken(html.StartTagToken, a.Html)
			return false
		default:
			return true
		}
	case html.CommentToken:
		return true
	}
	b.parseImpliedToken(html.StartTagToken, a.Html)
	return false
}

func (b *builder) beforeHeadIM() bool {
	switch b.tok.typ {
	case html.TextToken:
		b.tok.text = trimLeftWS(b.tok.text)
		if len(b.tok.text) == 0 {
			return true
		}
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Head:
			b.addElement()
			b.head = b.topOrNone()
			b.nodes[b.head].flags |= fPinned | fFixed
			b.im = imInHead
			return true
		case a.Html:
			return b.inBodyIM()
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Head, a.Body, a.Html, a.Br:
			b.parseImpliedToken(html.StartTagToken, a.Head)
			return false
		default:
			return true
		}
	case html.CommentToken:
		b.addComment()
		return true
	case html.DoctypeToken:
		return true
	}
	b.parseImpliedToken(html.StartTagToken, a.Head)
	return false
}

// inHeadIM is the "in head" insertion mode (HTML5 §13.2.6.4.4).
// It is long because it follows x/net/html's function of the same name
// case by case, in the same order, so the two can be compared line by line
// when x/net/html changes; splitting it would lose that.
func (b *builder) inHeadIM() bool {
	switch b.tok.typ {
	case html.TextToken:
		d := b.tok.text
		s := trimLeftWS(d)
		if len(s) < len(d) {
			b.addText(d[:len(d)-len(s)])
			if len(s) == 0 {
				return true
			}
			b.tok.text = s
		}
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Html:
			return b.inBodyIM()
		case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta:
			b.addElement()
			b.pop()
			return true
		case a.Noscript:
			// Scripting is enabled, as in html.Parse.
			b.parseGenericRawTextElement()
			return true
		case a.Script, a.Title:
			b.addElement()
			if !b.setOriginalIM() {
				return true
			}
			b.im = imText
			return true
		case a.Noframes, a.Style:
			b.parseGenericRawTextElement()
			return true
		case a.Head:
			return true
		case a.Template:
			// x/net/html divergence: with foreign content on the stack it
			// ignores the rest of the document.
			for _, id := range b.oe {
				b.work++
				if b.nodes[id].ns != nsHTML {
					b.im = imIgnoreRest
					return true
				}
			}
			b.addElement()
			b.afePushMarker()
			b.framesetOK = false
			b.im = imInTemplate
			b.templateStack = append(b.templateStack, imInTemplate)
			return true
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Head:
			b.pop()
			b.im = imAfterHead
			return true
		case a.Body, a.Html, a.Br:
			b.parseImpliedToken(html.EndTagToken, a.Head)
			return false
		case a.Template:
			if !b.containsTemplate() {
				return true
			}
			b.generateImpliedEndTags(0)
			for i := len(b.oe) - 1; i >= 0; i-- {
				b.work++
				if b.isHTML(b.oe[i], a.Template) {
					b.popTo(i)
					break
				}
			}
			b.clearActiveFormattingElements()
			b.templateStack = b.templateStack[:len(b.templateStack)-1]
			b.resetInsertionMode()
			return true
		default:
			return true
		}
	case html.CommentToken:
		b.addComment()
		return true
	case html.DoctypeToken:
		return true
	}
	b.parseImpliedToken(html.EndTagToken, a.Head)
	return false
}

func (b *builder) afterHeadIM() bool {
	switch b.tok.typ {
	case html.TextToken:
		d := b.tok.text
		s := trimLeftWS(d)
		if len(s) < len(d) {
			b.addText(d[:len(d)-len(s)])
			if len(s) == 0 {
				return true
			}
			b.tok.text = s
		}
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Html:
			return b.inBodyIM()
		case a.Body:
			b.addElement()
			b.framesetOK = false
			b.im = imInBody
			return true
		case a.Frameset:
			b.addElement()
			b.im = imInFrameset
			return true
		case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta, a.Noframes, a.Script, a.Style, a.Template, a.Title:
			head := b.head
			b.oe = append(b.oe, head) // insertOpenElement(p.head)
			b.nodes[head].flags |= fOnStack
			b.countAT(head, 1)
			r := b.inHeadIM()
			b.removeFromStack(head)
			return r
		case a.Head:
			return true
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Body, a.Html, a.Br:
		case a.Template:
			return b.inHeadIM()
		default:
			return true
		}
	case html.CommentToken:
		b.addComment()
		return true
	case html.DoctypeToken:
		return true
	}
	b.parseImpliedToken(html.StartTagToken, a.Body)
	b.framesetOK = true
	if b.tok.typ == html.ErrorToken {
		return true
	}
	return false
}

// inBodyIM is the "in body" insertion mode (HTML5 §13.2.6.4.7).
// It is long because it follows x/net/html's function of the same name
// case by case, in the same order, so the two can be compared line by line
// when x/net/html changes; splitting it would lose that.
func (b *builder) inBodyIM() bool {
	t := &b.tok
	switch t.typ {
	case html.TextToken:
		d := t.text
		if top := b.topOrNone(); top != noNode {
			if n := &b.nodes[top]; (n.atom == a.Pre || n.atom == a.Listing) && n.flags&fHasChild == 0 {
				if len(d) > 0 && d[0] == '\r' {
					d = d[1:]
				}
				if len(d) > 0 && d[0] == '\n' {
					d = d[1:]
				}
			}
		}
		d = removeNUL(d)
		if len(d) == 0 {
			return true
		}
		b.reconstructActiveFormattingElements()
		b.addText(d)
		if b.framesetOK && !allWS(d) {
			b.framesetOK = false
		}
	case html.StartTagToken:
		switch t.atom {
		case a.Html:
			if b.containsTemplate() {
				return true
			}
			b.htmlAttrs()
		case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta, a.Noframes, a.Script, a.Style, a.Template, a.Title:
			return b.inHeadIM()
		case a.Body:
			if b.containsTemplate() {
				return true
			}
			if len(b.oe) >= 2 && b.nodes[b.oe[1]].atom == a.Body {
				b.framesetOK = false
			}
		case a.Frameset:
			if !b.framesetOK || len(b.oe) < 2 || b.nodes[b.oe[1]].atom != a.Body {
				return true
			}
			b.removeBody()
			b.addElement()
			b.im = imInFrameset
			return true
		case a.Address, a.Article, a.Aside, a.Blockquote, a.Center, a.Details, a.Dialog, a.Dir, a.Div, a.Dl, a.Fieldset, a.Figcaption, a.Figure, a.Footer, a.Header, a.Hgroup, a.Main, a.Menu, a.Nav, a.Ol, a.P, a.Search, a.Section, a.Summary, a.Ul:
			b.popUntil(buttonScope, a.P)
			b.addElement()
		case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
			b.popUntil(buttonScope, a.P)
			if top := b.topOrNone(); top != noNode {
				switch b.nodes[top].atom {
				case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
					b.pop()
				}
			}
			b.addElement()
		case a.Pre, a.Listing:
			b.popUntil(buttonScope, a.P)
			b.addElement()
			b.framesetOK = false
		case a.Form:
			if b.form != noNode && !b.containsTemplate() {
				return true
			}
			b.popUntil(buttonScope, a.P)
			b.addElement()
			if !b.containsTemplate() {
				b.setForm(b.topOrNone())
			}
		case a.Li:
			b.framesetOK = false
			for i := len(b.oe) - 1; i >= 0 && b.mayBeOpen(a.Li); i-- {
				b.work++
				n := &b.nodes[b.oe[i]]
				switch n.atom {
				case a.Li:
					b.popTo(i)
				case a.Address, a.Div, a.P:
					continue
				default:
					if n.flags&fSpecial == 0 {
						continue
					}
				}
				break
			}
			b.popUntil(buttonScope, a.P)
			b.addElement()
		case a.Dd, a.Dt:
			b.framesetOK = false
			for i := len(b.oe) - 1; i >= 0 && b.mayBeOpen(a.Dd, a.Dt); i-- {
				b.work++
				n := &b.nodes[b.oe[i]]
				switch n.atom {
				case a.Dd, a.Dt:
					b.popTo(i)
				case a.Address, a.Div, a.P:
					continue
				default:
					if n.flags&fSpecial == 0 {
						continue
					}
				}
				break
			}
			b.popUntil(buttonScope, a.P)
			b.addElement()
		case a.Plaintext:
			b.popUntil(buttonScope, a.P)
			b.addElement()
		case a.Button:
			if b.elementInScope(defaultScope, a.Button) {
				b.generateImpliedEndTags(0)
				b.popUntil(defaultScope, a.Button)
			}
			b.reconstructActiveFormattingElements()
			b.addElement()
			b.framesetOK = false
		case a.A:
			for i := len(b.afe) - 1; i >= 0 && b.afe[i] != scopeMarker; i-- {
				b.work++
				if id := b.afe[i]; b.nodes[id].atom == a.A {
					// Keep id allocated across the adoption agency.
					b.nodes[id].flags |= fPinned
					b.inBodyEndTagFormatting(a.A, uint64(a.A))
					b.nodes[id].flags &^= fPinned
					b.removeFromStack(id)
					b.afeRemove(id)
					b.release(id)
					break
				}
			}
			b.reconstructActiveFormattingElements()
			b.addFormattingElement()
		case a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
			b.reconstructActiveFormattingElements()
			b.addFormattingElement()
		case a.Nobr:
			b.reconstructActiveFormattingElements()
			if b.elementInScope(defaultScope, a.Nobr) {
				b.inBodyEndTagFormatting(a.Nobr, uint64(a.Nobr))
				b.reconstructActiveFormattingElements()
			}
			b.addFormattingElement()
		case a.Applet, a.Marquee, a.Object:
			b.reconstructActiveFormattingElements()
			b.addElement()
			b.afePushMarker()
			b.framesetOK = false
		case a.Table:
			if !b.quirks {
				b.popUntil(buttonScope, a.P)
			}
			b.addElement()
			b.framesetOK = false
			b.im = imInTable
			return true
		case a.Area, a.Br, a.Embed, a.Img, a.Keygen, a.Wbr:
			b.reconstructActiveFormattingElements()
			b.addElement()
			b.pop()
			b.framesetOK = false
		case a.Input:
			b.popUntil(defaultScope, a.Select)
			b.reconstructActiveFormattingElements()
			b.addElement()
			b.pop()
			if v, ok := b.attrVal("type"); ok && equalFoldASCII(v, "hidden") {
				return true
			}
			b.framesetOK = false
		case a.Param, a.Source, a.Track:
			b.addElement()
			b.pop()
		case a.Hr:
			if b.elementInScope(buttonScope, a.P) {
				b.generateImpliedEndTags(a.P)
				b.popUntil(defaultScope, a.P)
			}
			if b.elementInScope(defaultScope, a.Select) {
				b.generateImpliedEndTags(0)
			}
			b.addElement()
			b.pop()
			b.framesetOK = false
		case a.Image:
			t.atom = a.Img
			t.key, t.fkey = uint64(a.Img), uint64(a.Img)
			t.name = append(t.nameBuf[:0], "img"...)
			return false
		case a.Textarea:
			b.addElement()
			if !b.setOriginalIM() {
				return true
			}
			b.framesetOK = false
			b.im = imText
		case a.Xmp:
			b.popUntil(buttonScope, a.P)
			b.reconstructActiveFormattingElements()
			b.framesetOK = false
			b.parseGenericRawTextElement()
		case a.Iframe:
			b.framesetOK = false
			b.parseGenericRawTextElement()
		case a.Noembed:
			b.parseGenericRawTextElement()
		case a.Noscript:
			b.parseGenericRawTextElement()
			return true
		case a.Select:
			if b.popUntil(defaultScope, a.Select) {
				return true
			}
			b.reconstructActiveFormattingElements()
			b.addElement()
			b.framesetOK = false
			return true
		case a.Option:
			if b.elementInScope(defaultScope, a.Select) {
				b.generateImpliedEndTags(a.Optgroup)
			} else if top := b.topOrNone(); top != noNode && b.nodes[top].atom == a.Option {
				b.pop()
			}
			b.reconstructActiveFormattingElements()
			b.addElement()
		case a.Optgroup:
			if b.elementInScope(defaultScope, a.Select) {
				b.generateImpliedEndTags(0)
			} else if top := b.topOrNone(); top != noNode && b.nodes[top].atom == a.Option {
				b.pop()
			}
			b.reconstructActiveFormattingElements()
			b.addElement()
		case a.Rb, a.Rtc:
			if b.elementInScope(defaultScope, a.Ruby) {
				b.generateImpliedEndTags(0)
			}
			b.addElement()
		case a.Rp, a.Rt:
			if b.elementInScope(defaultScope, a.Ruby) {
				b.generateImpliedEndTags(a.Rtc)
			}
			b.addElement()
		case a.Math, a.Svg:
			b.reconstructActiveFormattingElements()
			ns := nsSVG
			if t.atom == a.Math {
				ns = nsMath
			}
			b.addChild(b.newElement(ns))
			if b.hasSelfClosing {
				b.pop()
				b.hasSelfClosing = false
			}
			return true
		case a.Caption, a.Col, a.Colgroup, a.Frame, a.Head, a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr:
			// Ignore the token.
		default:
			b.reconstructActiveFormattingElements()
			b.addElement()
		}
	case html.EndTagToken:
		if b.endTagPopsTop() {
			b.pop()
			return true
		}
		switch t.atom {
		case a.Body:
			if b.elementInScope(defaultScope, a.Body) {
				b.im = imAfterBody
			}
		case a.Html:
			if b.elementInScope(defaultScope, a.Body) {
				b.parseImpliedToken(html.EndTagToken, a.Body)
				return false
			}
			return true
		case a.Address, a.Article, a.Aside, a.Blockquote, a.Button, a.Center, a.Details, a.Dialog, a.Dir, a.Div, a.Dl, a.Fieldset, a.Figcaption, a.Figure, a.Footer, a.Header, a.Hgroup, a.Listing, a.Main, a.Menu, a.Nav, a.Ol, a.Pre, a.Search, a.Section, a.Select, a.Summary, a.Ul:
			if !b.elementInScope(defaultScope, t.atom) {
				return true
			}
			b.generateImpliedEndTags(0)
			b.popUntil(defaultScope, t.atom)
		case a.Form:
			if b.containsTemplate() {
				i := b.indexOfElementInScope(defaultScope, a.Form)
				if i == -1 {
					return true
				}
				b.generateImpliedEndTags(0)
				if b.nodes[b.oe[i]].atom != a.Form {
					// Stale index after the pops, as in x/net/html.
					return true
				}
				b.popUntil(defaultScope, a.Form)
			} else {
				// node stays pinned (by the pointer) until it is done with.
				node := b.form
				b.form = noNode
				i := b.indexOfElementInScope(defaultScope, a.Form)
				if node == noNode || i == -1 || b.oe[i] != node {
					b.unpin(node)
					return true
				}
				b.generateImpliedEndTags(0)
				b.removeFromStack(node)
				b.unpin(node)
			}
		case a.P:
			if !b.elementInScope(buttonScope, a.P) {
				b.parseImpliedToken(html.StartTagToken, a.P)
			}
			b.popUntil(buttonScope, a.P)
		case a.Li:
			b.popUntil(listItemScope, a.Li)
		case a.Dd, a.Dt:
			b.popUntil(defaultScope, t.atom)
		case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
			b.popUntil(defaultScope, a.H1, a.H2, a.H3, a.H4, a.H5, a.H6)
		case a.A, a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.Nobr, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
			b.inBodyEndTagFormatting(t.atom, t.key)
		case a.Applet, a.Marquee, a.Object:
			if b.popUntil(defaultScope, t.atom) {
				b.clearActiveFormattingElements()
			}
		case a.Br:
			t.typ = html.StartTagToken
			return false
		case a.Template:
			return b.inHeadIM()
		default:
			b.inBodyEndTagOther(t.atom, t.key)
		}
	case html.CommentToken:
		b.addComment()
	}
	return true
}

// endTagPopsTop reports whether the current end tag, in body, only pops
// the current node: it names the current node (an HTML element) and its
// rule is one of "pop up to that element" without side effects (not body,
// html, form, br, template, applet, marquee, object, nor the formatting
// elements, which have their own fast path). For a heading end tag any
// heading on top does.
func (b *builder) endTagPopsTop() bool {
	top := b.topOrNone()
	if top == noNode {
		return false
	}
	n, at := &b.nodes[top], b.tok.atom
	if n.ns != nsHTML || at == 0 {
		return false
	}
	switch at {
	case a.Address, a.Article, a.Aside, a.Blockquote, a.Button, a.Center, a.Details, a.Dialog, a.Dir, a.Div, a.Dl, a.Fieldset, a.Figcaption, a.Figure, a.Footer, a.Header, a.Hgroup, a.Listing, a.Main, a.Menu, a.Nav, a.Ol, a.Pre, a.Search, a.Section, a.Select, a.Summary, a.Ul,
		a.P, a.Li, a.Dd, a.Dt:
		return n.atom == at
	case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
		switch n.atom {
		case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
			return true
		}
		return false
	case a.Body, a.Html, a.Form, a.Br, a.Template, a.Applet, a.Marquee, a.Object,
		a.A, a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.Nobr, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
		return false
	}
	// Any other end tag: the current node has the name.
	return n.atom == at
}

// collectableText handles a text token inside a title, heading or link in
// the common state (see ignorableText): the algorithm only appends it to the
// current node. It reports whether it did.
func (b *builder) collectableText() bool {
	if b.im != imInBody || b.framesetOK || len(b.oe) == 0 {
		return false
	}
	top := b.oe[len(b.oe)-1]
	if n := &b.nodes[top]; n.ns != nsHTML || n.atom == a.Pre || n.atom == a.Listing {
		return false
	}
	if k := len(b.afe); k > 0 {
		if last := b.afe[k-1]; last != scopeMarker && b.nodes[last].flags&fOnStack == 0 {
			return false
		}
	}
	b.decodeText()
	if d := removeNUL(b.tok.text); len(d) > 0 {
		b.nodes[top].flags |= fHasChild
		b.collectText(top, noNode, d)
	}
	return true
}

// setForm sets the form element pointer, keeping the element allocated
// while the pointer names it (it is compared by identity).
func (b *builder) setForm(id nodeID) {
	old := b.form
	b.form = id
	if id != noNode {
		b.nodes[id].flags |= fPinned
	}
	if old != id {
		b.unpin(old)
	}
}

func (b *builder) unpin(id nodeID) {
	if id != noNode {
		b.nodes[id].flags &^= fPinned
		b.release(id)
	}
}

// inBodyEndTagFormatting is the adoption agency algorithm.
// It is long because it follows x/net/html's function of the same name
// case by case, in the same order, so the two can be compared line by line
// when x/net/html changes; splitting it would lose that.
func (b *builder) inBodyEndTagFormatting(tagAtom a.Atom, tagKey uint64) {
	// The common case, <b>text</b>: the element is the current node and the
	// last active formatting element. The algorithm finds it, in scope,
	// with no furthest block, and pops it.
	if k, top := len(b.afe), b.topOrNone(); k > 0 && top != noNode && b.afe[k-1] == top {
		if n := &b.nodes[top]; n.ns == nsHTML && n.atom == tagAtom && tagAtom != 0 {
			b.pop()
			b.afeRemoveAt(k - 1)
			return
		}
	}
	// Steps 1-2.
	if cur := b.topOrNone(); cur != noNode && b.nodes[cur].key == tagKey && b.nodes[cur].flags&fInAFE == 0 {
		b.pop()
		return
	}
	// Steps 3-5. The outer loop.
	for i := 0; i < 8; i++ {
		// Step 6.
		fe := noNode
		for j := len(b.afe) - 1; j >= 0; j-- {
			b.work++
			if b.afe[j] == scopeMarker {
				break
			}
			if b.nodes[b.afe[j]].atom == tagAtom {
				fe = b.afe[j]
				break
			}
		}
		if fe == noNode {
			b.inBodyEndTagOther(tagAtom, tagKey)
			return
		}
		// Step 7.
		feIndex := b.stackIndex(fe)
		if feIndex == -1 {
			b.afeRemove(fe)
			return
		}
		// Step 8.
		if !b.elementInScope(defaultScope, tagAtom) {
			return
		}
		// Steps 10-11.
		fb := noNode
		for _, e := range b.oe[feIndex:] {
			b.work++
			if b.nodes[e].flags&fSpecial != 0 {
				fb = e
				break
			}
		}
		if fb == noNode {
			for {
				e := b.pop()
				if e == fe {
					break
				}
			}
			b.afeRemove(fe)
			return
		}
		// Steps 12-13.
		commonAncestor := b.oe[feIndex-1]
		bookmark := b.afeIndex(fe)
		// Keep fe allocated until step 20 even when it leaves the lists.
		b.nodes[fe].flags |= fPinned

		// Step 14. The inner loop.
		lastNode := fb
		node := fb
		x := b.stackIndex(node)
		for j := 1; ; j++ {
			b.work++
			x--
			node = b.oe[x]
			if node == fe {
				break
			}
			if ni := b.afeIndex(node); j > 3 && ni > -1 {
				b.afeRemoveAt(ni)
				if ni <= bookmark {
					bookmark--
				}
				continue
			}
			if b.afeIndex(node) == -1 {
				b.removeFromStack(node)
				continue
			}
			clone := b.clone(node)
			b.afeReplace(b.afeIndex(node), clone)
			b.replaceInStack(b.stackIndex(node), clone)
			node = clone
			if lastNode == fb {
				bookmark = b.afeIndex(node) + 1
			}
			b.detach(lastNode)
			b.insert(lastNode, node, noNode)
			lastNode = node
		}

		// Step 15.
		b.detach(lastNode)
		switch b.nodes[commonAncestor].atom {
		case a.Table, a.Tbody, a.Tfoot, a.Thead, a.Tr:
			p, ref := b.fosterPlace()
			b.insert(lastNode, p, ref)
		default:
			b.insert(lastNode, commonAncestor, noNode)
		}

		// Steps 16-18.
		clone := b.clone(fe)
		b.reparentChildren(clone, fb)
		b.insert(clone, fb, noNode)

		// Step 19.
		if oldLoc := b.afeIndex(fe); oldLoc != -1 && oldLoc < bookmark {
			bookmark--
		}
		b.afeRemove(fe)
		if bookmark < 0 || bookmark > len(b.afe) {
			b.stop() // x/net/html panics here
			return
		}
		b.afeInsert(bookmark, clone)

		// Step 20.
		b.removeFromStack(fe)
		b.insertInStack(b.stackIndex(fb)+1, clone)
		b.nodes[fe].flags &^= fPinned
		b.release(fe)
		b.moved()
	}
}

func (b *builder) inBodyEndTagOther(tagAtom a.Atom, tagKey uint64) {
	for i := len(b.oe) - 1; i >= 0; i-- {
		b.work++
		n := &b.nodes[b.oe[i]]
		if n.ns == nsHTML && n.atom == tagAtom && (tagAtom != 0 || n.key == tagKey) {
			b.popTo(i)
			break
		}
		if n.flags&fSpecial != 0 {
			break
		}
	}
}

func (b *builder) textIM() bool {
	switch b.tok.typ {
	case html.ErrorToken:
		b.pop()
	case html.TextToken:
		d := b.tok.text
		if top := b.topOrNone(); top != noNode {
			if n := &b.nodes[top]; n.atom == a.Textarea && n.flags&fHasChild == 0 {
				if len(d) > 0 && d[0] == '\r' {
					d = d[1:]
				}
				if len(d) > 0 && d[0] == '\n' {
					d = d[1:]
				}
			}
		}
		if len(d) == 0 {
			return true
		}
		b.addText(d)
		return true
	case html.EndTagToken:
		b.pop()
	}
	b.im = b.origIM
	b.origSet = false
	return b.tok.typ == html.EndTagToken
}

// inTableIM is the "in table" insertion mode (HTML5 §13.2.6.4.9).
// It is long because it follows x/net/html's function of the same name
// case by case, in the same order, so the two can be compared line by line
// when x/net/html changes; splitting it would lose that.
func (b *builder) inTableIM() bool {
	t := &b.tok
	switch t.typ {
	case html.TextToken:
		t.text = removeNUL(t.text)
		switch b.nodes[b.topOrNone()].atom {
		case a.Table, a.Tbody, a.Tfoot, a.Thead, a.Tr:
			if allWS(t.text) {
				b.addText(t.text)
				return true
			}
		}
	case html.StartTagToken:
		switch t.atom {
		case a.Caption:
			b.clearStackToContext(tableScope)
			b.afePushMarker()
			b.addElement()
			b.im = imInCaption
			return true
		case a.Colgroup:
			b.clearStackToContext(tableScope)
			b.addElement()
			b.im = imInColumnGroup
			return true
		case a.Col:
			b.parseImpliedToken(html.StartTagToken, a.Colgroup)
			return false
		case a.Tbody, a.Tfoot, a.Thead:
			b.clearStackToContext(tableScope)
			b.addElement()
			b.im = imInTableBody
			return true
		case a.Td, a.Th, a.Tr:
			b.parseImpliedToken(html.StartTagToken, a.Tbody)
			return false
		case a.Table:
			if b.popUntil(tableScope, a.Table) {
				b.resetInsertionMode()
				return false
			}
			return true
		case a.Style, a.Script, a.Template:
			return b.inHeadIM()
		case a.Input:
			if v, ok := b.attrVal("type"); ok && equalFoldASCII(v, "hidden") {
				b.addElement()
				b.pop()
				return true
			}
		case a.Form:
			if b.containsTemplate() || b.form != noNode {
				return true
			}
			b.addElement()
			b.setForm(b.topOrNone())
			b.pop()
		}
	case html.EndTagToken:
		switch t.atom {
		case a.Table:
			if b.popUntil(tableScope, a.Table) {
				b.resetInsertionMode()
				return true
			}
			return true
		case a.Body, a.Caption, a.Col, a.Colgroup, a.Html, a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr:
			return true
		case a.Template:
			return b.inHeadIM()
		}
	case html.CommentToken:
		b.addComment()
		return true
	case html.DoctypeToken:
		return true
	case html.ErrorToken:
		return b.inBodyIM()
	}
	b.fosterParenting = true
	r := b.inBodyIM()
	b.fosterParenting = false
	return r
}

func (b *builder) inCaptionIM() bool {
	switch b.tok.typ {
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Caption, a.Col, a.Colgroup, a.Tbody, a.Td, a.Tfoot, a.Thead, a.Tr:
			if !b.popUntil(tableScope, a.Caption) {
				return true
			}
			b.clearActiveFormattingElements()
			b.im = imInTable
			return false
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Caption:
			if b.popUntil(tableScope, a.Caption) {
				b.clearActiveFormattingElements()
				b.im = imInTable
			}
			return true
		case a.Table:
			if !b.popUntil(tableScope, a.Caption) {
				return true
			}
			b.clearActiveFormattingElements()
			b.im = imInTable
			return false
		case a.Body, a.Col, a.Colgroup, a.Html, a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr:
			return true
		}
	}
	return b.inBodyIM()
}

func (b *builder) inColumnGroupIM() bool {
	switch b.tok.typ {
	case html.TextToken:
		d := b.tok.text
		s := trimLeftWS(d)
		if len(s) < len(d) {
			b.addText(d[:len(d)-len(s)])
			if len(s) == 0 {
				return true
			}
			b.tok.text = s
		}
	case html.CommentToken:
		b.addComment()
		return true
	case html.DoctypeToken:
		return true
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Html:
			return b.inBodyIM()
		case a.Col:
			b.addElement()
			b.pop()
			return true
		case a.Template:
			return b.inHeadIM()
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Colgroup:
			if b.nodes[b.topOrNone()].atom == a.Colgroup {
				b.pop()
				b.im = imInTable
			}
			return true
		case a.Col:
			return true
		case a.Template:
			return b.inHeadIM()
		}
	case html.ErrorToken:
		return b.inBodyIM()
	}
	if b.nodes[b.topOrNone()].atom != a.Colgroup {
		return true
	}
	b.pop()
	b.im = imInTable
	return false
}

func (b *builder) inTableBodyIM() bool {
	switch b.tok.typ {
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Tr:
			b.clearStackToContext(tableBodyScope)
			b.addElement()
			b.im = imInRow
			return true
		case a.Td, a.Th:
			b.parseImpliedToken(html.StartTagToken, a.Tr)
			return false
		case a.Caption, a.Col, a.Colgroup, a.Tbody, a.Tfoot, a.Thead:
			if b.popUntil(tableScope, a.Tbody, a.Thead, a.Tfoot) {
				b.im = imInTable
				return false
			}
			return true
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Tbody, a.Tfoot, a.Thead:
			if b.elementInScope(tableScope, b.tok.atom) {
				b.clearStackToContext(tableBodyScope)
				b.pop()
				b.im = imInTable
			}
			return true
		case a.Table:
			if b.popUntil(tableScope, a.Tbody, a.Thead, a.Tfoot) {
				b.im = imInTable
				return false
			}
			return true
		case a.Body, a.Caption, a.Col, a.Colgroup, a.Html, a.Td, a.Th, a.Tr:
			return true
		}
	case html.CommentToken:
		b.addComment()
		return true
	}
	return b.inTableIM()
}

func (b *builder) inRowIM() bool {
	switch b.tok.typ {
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Td, a.Th:
			b.clearStackToContext(tableRowScope)
			b.addElement()
			b.afePushMarker()
			b.im = imInCell
			return true
		case a.Caption, a.Col, a.Colgroup, a.Tbody, a.Tfoot, a.Thead, a.Tr:
			if b.elementInScope(tableScope, a.Tr) {
				b.clearStackToContext(tableRowScope)
				b.pop()
				b.im = imInTableBody
				return false
			}
			return true
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Tr:
			if b.elementInScope(tableScope, a.Tr) {
				b.clearStackToContext(tableRowScope)
				b.pop()
				b.im = imInTableBody
				return true
			}
			return true
		case a.Table:
			if b.elementInScope(tableScope, a.Tr) {
				b.clearStackToContext(tableRowScope)
				b.pop()
				b.im = imInTableBody
				return false
			}
			return true
		case a.Tbody, a.Tfoot, a.Thead:
			if b.elementInScope(tableScope, b.tok.atom) && b.elementInScope(tableScope, a.Tr) {
				b.clearStackToContext(tableRowScope)
				b.pop()
				b.im = imInTableBody
				return false
			}
			return true
		case a.Body, a.Caption, a.Col, a.Colgroup, a.Html, a.Td, a.Th:
			return true
		}
	}
	return b.inTableIM()
}

func (b *builder) inCellIM() bool {
	switch b.tok.typ {
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Caption, a.Col, a.Colgroup, a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr:
			if b.popUntil(tableScope, a.Td, a.Th) {
				b.clearActiveFormattingElements()
				b.im = imInRow
				return false
			}
			return true
		}
	case html.EndTagToken:
		switch b.tok.atom {
		case a.Td, a.Th:
			if !b.popUntil(tableScope, b.tok.atom) {
				return true
			}
			b.clearActiveFormattingElements()
			b.im = imInRow
			return true
		case a.Body, a.Caption, a.Col, a.Colgroup, a.Html:
			return true
		case a.Table, a.Tbody, a.Tfoot, a.Thead, a.Tr:
			if !b.elementInScope(tableScope, b.tok.atom) {
				return true
			}
			if b.popUntil(tableScope, a.Td, a.Th) {
				b.clearActiveFormattingElements()
			}
			b.im = imInRow
			return false
		}
	}
	return b.inBodyIM()
}

func (b *builder) switchTemplateMode(m mode) bool {
	b.templateStack[len(b.templateStack)-1] = m
	b.im = m
	return false
}

func (b *builder) inTemplateIM() bool {
	switch b.tok.typ {
	case html.TextToken, html.CommentToken, html.DoctypeToken:
		return b.inBodyIM()
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta, a.Noframes, a.Script, a.Style, a.Template, a.Title:
			return b.inHeadIM()
		case a.Caption, a.Colgroup, a.Tbody, a.Tfoot, a.Thead:
			return b.switchTemplateMode(imInTable)
		case a.Col:
			return b.switchTemplateMode(imInColumnGroup)
		case a.Tr:
			return b.switchTemplateMode(imInTableBody)
		case a.Td, a.Th:
			return b.switchTemplateMode(imInRow)
		default:
			return b.switchTemplateMode(imInBody)
		}
	case html.EndTagToken:
		if b.tok.atom == a.Template {
			return b.inHeadIM()
		}
		return true
	}
	return false
}

func (b *builder) afterBodyIM() bool {
	switch b.tok.typ {
	case html.ErrorToken:
		return true
	case html.TextToken:
		if allWS(b.tok.text) {
			return b.inBodyIM()
		}
	case html.StartTagToken:
		if b.tok.atom == a.Html {
			return b.inBodyIM()
		}
	case html.EndTagToken:
		if b.tok.atom == a.Html {
			b.im = imAfterAfterBody
			return true
		}
	case html.CommentToken:
		if len(b.oe) < 1 || b.nodes[b.oe[0]].atom != a.Html {
			b.stop() // x/net/html panics
			return true
		}
		b.nodes[b.oe[0]].flags |= fHasChild
		return true
	}
	b.im = imInBody
	return false
}

// keepWS keeps only the HTML whitespace of d, in place.
func keepWS(d []byte) []byte {
	j := 0
	for _, c := range d {
		if isWS(c) {
			d[j] = c
			j++
		}
	}
	return d[:j]
}

func (b *builder) inFramesetIM() bool {
	switch b.tok.typ {
	case html.CommentToken:
		b.addComment()
	case html.TextToken:
		if s := keepWS(b.tok.text); len(s) > 0 {
			b.addText(s)
		}
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Html:
			return b.inBodyIM()
		case a.Frameset:
			b.addElement()
		case a.Frame:
			b.addElement()
			b.pop()
		case a.Noframes:
			return b.inHeadIM()
		}
	case html.EndTagToken:
		if b.tok.atom == a.Frameset {
			if b.nodes[b.topOrNone()].atom != a.Html {
				b.pop()
				if b.nodes[b.topOrNone()].atom != a.Frameset {
					b.im = imAfterFrameset
					return true
				}
			}
		}
	}
	return true
}

func (b *builder) afterFramesetIM() bool {
	switch b.tok.typ {
	case html.CommentToken:
		b.addComment()
	case html.TextToken:
		if s := keepWS(b.tok.text); len(s) > 0 {
			b.addText(s)
		}
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Html:
			return b.inBodyIM()
		case a.Noframes:
			return b.inHeadIM()
		}
	case html.EndTagToken:
		if b.tok.atom == a.Html {
			b.im = imAfterAfterFrameset
			return true
		}
	}
	return true
}

func (b *builder) afterAfterBodyIM() bool {
	switch b.tok.typ {
	case html.ErrorToken:
		return true
	case html.TextToken:
		if allWS(b.tok.text) {
			return b.inBodyIM()
		}
	case html.StartTagToken:
		if b.tok.atom == a.Html {
			return b.inBodyIM()
		}
	case html.CommentToken:
		return true
	case html.DoctypeToken:
		return b.inBodyIM()
	}
	b.im = imInBody
	return false
}

func (b *builder) afterAfterFramesetIM() bool {
	switch b.tok.typ {
	case html.CommentToken:
	case html.TextToken:
		if s := keepWS(b.tok.text); len(s) > 0 {
			b.tok.text = s
			return b.inBodyIM()
		}
	case html.StartTagToken:
		switch b.tok.atom {
		case a.Html:
			return b.inBodyIM()
		case a.Noframes:
			return b.inHeadIM()
		}
	case html.DoctypeToken:
		return b.inBodyIM()
	}
	return true
}

func isBreakout(at a.Atom) bool {
	switch at {
	case a.B, a.Big, a.Blockquote, a.Body, a.Br, a.Center, a.Code, a.Dd, a.Div, a.Dl, a.Dt, a.Em,
		a.Embed, a.H1, a.H2, a.H3, a.H4, a.H5, a.H6, a.Head, a.Hr, a.I, a.Img, a.Li, a.Listing,
		a.Menu, a.Meta, a.Nobr, a.Ol, a.P, a.Pre, a.Ruby, a.S, a.Small, a.Span, a.Strong,
		a.Strike, a.Sub, a.Sup, a.Table, a.Tt, a.U, a.Ul, a.Var:
		return true
	}
	return false
}

func (b *builder) parseForeignContent() bool {
	t := &b.tok
	switch t.typ {
	case html.TextToken:
		if b.framesetOK {
			b.framesetOK = allWSorNUL(t.text)
		}
		// NUL becomes U+FFFD here; both are dropped from kept text, so the
		// bytes can stay as they are.
		b.addText(t.text)
	case html.CommentToken:
		b.addComment()
	case html.StartTagToken:
		brk := isBreakout(t.atom)
		if t.atom == a.Font {
			for _, at := range b.readAttrs() {
				switch string(at.key) {
				case "color", "face", "size":
					brk = true
				}
			}
		}
		if brk {
			for i := len(b.oe) - 1; i >= 0; i-- {
				b.work++
				n := &b.nodes[b.oe[i]]
				if n.ns == nsHTML || n.flags&(fHTMLIP|fMathTextIP) != 0 {
					b.popTo(i + 1)
					break
				}
			}
			return b.step(b.im)
		}
		ns := b.nodes[b.topOrNone()].ns
		if ns == nsSVG {
			if adj, ok := svgTagAtoms[string(t.name)]; ok {
				// The name keys stay those of the lower-case name: every
				// comparison of tag names in foreign content is EqualFold.
				t.atom = adj
			}
		}
		b.addChild(b.newElement(ns))
		b.z.NextIsNotRawText()
		if b.hasSelfClosing {
			b.pop()
			b.hasSelfClosing = false
		}
	case html.EndTagToken:
		if top := b.topOrNone(); b.nodes[top].fkey == t.fkey {
			b.pop()
			return true
		}
		for i := len(b.oe) - 1; i >= 0; i-- {
			b.work++
			if b.nodes[b.oe[i]].fkey == t.fkey {
				b.popTo(i)
				return true
			}
			if i > 0 && b.nodes[b.oe[i-1]].ns == nsHTML {
				break
			}
		}
		return b.step(b.im)
	}
	return true
}

func allWSorNUL(d []byte) bool {
	for _, c := range d {
		if !isWS(c) && c != 0 {
			return false
		}
	}
	return true
}

// svgTagAtoms maps lower-case SVG tag names to the atom of their adjusted
// (camel-case) names, for the few whose adjusted name is an atom. Only
// foreignObject is, and only its atom matters to the algorithm.
var svgTagAtoms = map[string]a.Atom{
	"foreignobject": a.ForeignObject,
}

func (b *builder) inForeignContent() bool {
	if len(b.oe) == 0 {
		return false
	}
	n := &b.nodes[b.topOrNone()]
	if n.ns == nsHTML {
		return false
	}
	t := &b.tok
	if n.flags&fMathTextIP != 0 {
		if t.typ == html.StartTagToken && t.atom != a.Mglyph && t.atom != a.Malignmark {
			return false
		}
		if t.typ == html.TextToken {
			return false
		}
	}
	if n.ns == nsMath && n.atom == a.AnnotationXml && t.typ == html.StartTagToken && t.atom == a.Svg {
		return false
	}
	if n.flags&fHTMLIP != 0 && (t.typ == html.StartTagToken || t.typ == html.TextToken) {
		return false
	}
	if t.typ == html.ErrorToken {
		return false
	}
	return true
}
