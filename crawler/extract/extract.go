// Package extract reads the few things LohiSoftBot keeps from an HTML page
// (title, meta description, h1–h3, links with their text) in one streaming
// pass. Which text belongs to which element is decided as the HTML5 parsing
// algorithm decides it (tree.go follows golang.org/x/net/html's tree
// construction without building the page's DOM); text outside those
// elements is seen by the tokenizer and dropped on the spot.
package extract

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// Limits keep a hostile page from making the result (or memory) large.
const (
	MaxTextLen  = 512  // bytes kept of a title, description, heading or anchor text
	MaxHeadings = 50   // per level
	MaxLinks    = 2000 // links kept per page
	// MaxLangLen is what is kept of a lang attribute: more than any
	// valid tag the index keeps, so an over-long one stays over-long.
	MaxLangLen = 64
)

// Page is what one HTML page yields.
type Page struct {
	Title       string
	Description string
	H1, H2, H3  []string
	Links       []Link
	// Base is the href of the first <base> element, "" if none; links are
	// relative to it.
	Base string
	// Canonical is the href of the page's <link rel="canonical"> in its
	// <head>, as written; "" if none, or if the head names two different
	// ones (canonical.go).
	Canonical string
	// Robots holds the page's <meta name="robots"> directives (and those of
	// a meta tag named after the crawler's product token).
	Robots Directives
	// Lang is the lang attribute of the root element, from the first
	// <html> tag that has one, as written (cut to MaxLangLen);
	// runreport.Lang judges it.
	Lang string
}

// Link is an <a href> with its text (or its image's alt text when the link
// has no text of its own).
type Link struct {
	Href     string
	Text     string
	NoFollow bool // rel="nofollow"
}

// Directives are the indexing rules a page sets for crawlers.
type Directives struct {
	NoIndex  bool // fetch but do not store
	NoFollow bool // do not follow the links
}

// Merge returns the union of two sets of directives.
func (d Directives) Merge(o Directives) Directives {
	return Directives{NoIndex: d.NoIndex || o.NoIndex, NoFollow: d.NoFollow || o.NoFollow}
}

// Extract reads an HTML document. contentType is the Content-Type header,
// used with any BOM or <meta charset> to decode the bytes to UTF-8. token is
// the crawler's robots product token ("LohiSoftBot"): a <meta name> equal to
// it counts like name="robots".
func Extract(r io.Reader, contentType, token string) (*Page, error) {
	rd, err := decodeHTML(r, contentType)
	if err == io.EOF {
		return &Page{H1: []string{}, H2: []string{}, H3: []string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	return extract(rd, token)
}

// debugPanics re-raises internal errors (tests set it to see the stack);
// debugCheck, when set, runs after every token.
var (
	debugPanics = false
	debugCheck  func(*builder)
)

var extractors = sync.Pool{New: func() any { return new(extractor) }}

type extractor struct {
	b     builder
	p     *Page
	token string
	// canonicalSeen and canonicalConflict: a canonical link was seen in
	// the head; two different ones were.
	canonicalSeen, canonicalConflict bool
}

// extract reads a page already decoded to UTF-8.
func extract(rd io.Reader, token string) (p *Page, err error) {
	x := extractors.Get().(*extractor)
	x.p, x.token = &Page{}, token
	x.canonicalSeen, x.canonicalConflict = false, false
	b := &x.b
	b.reset(html.NewTokenizer(rd))
	defer func() {
		if r := recover(); r != nil {
			// A bug, not a page fault: report it, keep nothing.
			p, err = nil, fmt.Errorf("extract: internal error: %v", r)
			if debugPanics {
				panic(r)
			}
			x.b = builder{}
		}
		// Keep the slabs for the next page, not this page's bytes.
		x.p, x.b.z = nil, nil
		clear(x.b.links)
		extractors.Put(x)
	}()
	for {
		switch b.next() {
		case html.ErrorToken:
			p := x.p
			b.finish(p)
			p.H1, p.H2, p.H3 = nonNil(p.H1), nonNil(p.H2), nonNil(p.H3)
			if err := b.z.Err(); err != io.EOF {
				return p, err
			}
			return p, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			// Wherever they are, as before the tree was followed: a
			// robots meta counts even where a browser would not look.
			switch b.tok.atom {
			case atom.Meta:
				x.meta()
			case atom.Base:
				x.base()
			case atom.Link:
				x.link()
			}
		}
		if !b.stopped {
			if b.tok.typ == html.TextToken {
				if b.ignorableText() {
					continue
				}
				if b.collectableText() {
					if debugCheck != nil {
						debugCheck(b)
					}
					continue
				}
				b.decodeText()
			}
			b.parseCurrentToken()
			if b.toSettle {
				b.settle(false)
			}
			if debugCheck != nil {
				debugCheck(b)
			}
			if b.overBudget() {
				b.stop()
			}
		}
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (x *extractor) meta() {
	var name, content string
	hasContent := false
	for _, at := range x.b.readAttrs() {
		switch string(at.key) {
		case "name":
			name = strings.TrimSpace(string(at.val))
		case "content":
			content, hasContent = string(at.val), true
		}
	}
	if !hasContent {
		return
	}
	switch {
	case strings.EqualFold(name, "description"):
		if x.p.Description == "" {
			x.p.Description = CleanText(content)
		}
	case strings.EqualFold(name, "robots"), x.token != "" && strings.EqualFold(name, x.token):
		x.p.Robots = x.p.Robots.Merge(ParseDirectives(content))
	}
}

// base keeps the href of the first <base> element that has one.
func (x *extractor) base() {
	if x.p.Base != "" {
		return
	}
	if v, ok := x.b.attrVal("href"); ok {
		x.p.Base = strings.TrimSpace(string(v))
	}
}

// CleanText makes a site-supplied string safe to store and show: it drops
// invalid UTF-8, U+FFFD, C0 and C1 control characters (U+0000–U+001F,
// U+007F–U+009F) and the bidi embedding, override and isolate characters
// (U+202A–U+202E, U+2066–U+2069), which could reorder the text around it
// wherever it is displayed; it collapses whitespace runs (tab, line breaks,
// NEL and the Unicode spaces) to one space, trims, and caps the result at
// MaxTextLen bytes on a rune boundary.
func CleanText(s string) string {
	var c cleaner
	c.buf = make([]byte, 0, min(len(s), MaxTextLen))
	c.writeString(s)
	if len(c.buf) == 0 {
		return ""
	}
	// c.buf is not used again: hand it over instead of copying it.
	return unsafe.String(&c.buf[0], len(c.buf))
}

func clean(s string) string { return CleanText(s) }

// Rune classes for cleaning.
const (
	rKeep = iota
	rSpace
	rDrop
)

func runeClass(r rune) int {
	switch {
	case r == utf8.RuneError:
		return rDrop
	case r < 0x20:
		if r == '\t' || r == '\n' || r == '\r' || r == '\f' {
			return rSpace
		}
		return rDrop
	case r < 0x7F:
		if r == ' ' {
			return rSpace
		}
		return rKeep
	case r == 0x85: // NEL, a C1 control, is a line break: a space
		return rSpace
	case runreport.IsControlOrBidi(r): // DEL, C1, bidi overrides: one definition, shared with the manager
		return rDrop
	case isSpace(r):
		return rSpace
	}
	return rKeep
}

// cleaner builds a cleaned text from pieces: the result is CleanText of
// their concatenation.
type cleaner struct {
	buf   []byte
	space bool
	full  bool
}

func (c *cleaner) reset() { c.buf, c.space, c.full = c.buf[:0], false, false }

func (c *cleaner) write(s []byte) {
	for i := 0; i < len(s) && !c.full; {
		r, size := rune(s[i]), 1
		if r < utf8.RuneSelf && asciiClass[r] == rKeep && !c.space && len(c.buf) < MaxTextLen {
			c.buf = append(c.buf, s[i])
			i++
			continue
		}
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(s[i:])
		}
		i += size
		c.add(r, size)
	}
}

// asciiClass is runeClass for ASCII.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range t {
		t[r] = uint8(runeClass(rune(r)))
	}
	return t
}()

func (c *cleaner) writeString(s string) {
	for i := 0; i < len(s) && !c.full; {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		c.add(r, size)
	}
}

func (c *cleaner) add(r rune, size int) {
	switch runeClass(r) {
	case rDrop:
		return
	case rSpace:
		c.space = len(c.buf) > 0
		return
	}
	sp := 0
	if c.space {
		sp = 1
	}
	// A space goes in only with the character after it.
	if len(c.buf)+sp+size > MaxTextLen {
		c.full = true
		return
	}
	if c.space {
		c.buf = append(c.buf, ' ')
		c.space = false
	}
	c.buf = utf8.AppendRune(c.buf, r)
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\f', '\v', 0x85, 0xA0, 0x2028, 0x2029, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func hasToken(list, tok string) bool {
	for _, f := range strings.Fields(list) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// ParseDirectives reads a robots meta content or X-Robots-Tag value:
// directives separated by commas or whitespace ("noindex, nofollow" or
// "noindex nofollow"), "none" meaning noindex and nofollow.
func ParseDirectives(v string) Directives {
	var d Directives
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		switch strings.ToLower(f) {
		case "noindex":
			d.NoIndex = true
		case "nofollow":
			d.NoFollow = true
		case "none":
			d.NoIndex, d.NoFollow = true, true
		}
	}
	return d
}

// HeaderDirectives reads the X-Robots-Tag header values that apply to token.
// A value is a comma-separated list; a "name:" prefix on an item scopes it
// and the items after it, up to the next prefix, to the user agent name
// ("googlebot: nofollow, LohiSoftBot: noindex, nofollow" gives this bot
// noindex and nofollow). Unscoped items apply to every crawler; a scope
// applies when name is token (case-insensitive).
func HeaderDirectives(values []string, token string) Directives {
	var d Directives
	for _, v := range values {
		applies := true
		for _, item := range strings.Split(v, ",") {
			if scope, rest, ok := strings.Cut(item, ":"); ok && isAgentScope(scope) {
				applies = strings.EqualFold(strings.TrimSpace(scope), token)
				item = rest
			}
			if applies {
				d = d.Merge(ParseDirectives(item))
			}
		}
	}
	return d
}

// isAgentScope tells a user-agent prefix ("otherbot: noindex") from a
// directive that carries a value after a colon ("max-snippet: 20",
// "unavailable_after: ...").
func isAgentScope(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, " ,\t") {
		return false
	}
	switch strings.ToLower(s) {
	case "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview", "noindex", "nofollow", "none":
		return false
	}
	return true
}

// IsHTML reports whether a Content-Type is one the crawler parses.
func IsHTML(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "text/html" || mt == "application/xhtml+xml"
}
