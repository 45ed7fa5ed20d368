// Package extract reads the few things LohiSoftBot keeps from an HTML page
// (title, meta description, h1–h3, links with their text) in one streaming
// pass. Nothing else of the page is retained: text outside those elements is
// seen by the tokenizer and dropped on the spot.
package extract

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Limits keep a hostile page from making the result (or memory) large.
const (
	MaxTextLen  = 512  // bytes kept of a title, description, heading or anchor text
	MaxHeadings = 50   // per level
	MaxLinks    = 2000 // links kept per page
	// maxCollect bounds the raw text gathered for one element before
	// whitespace is collapsed.
	maxCollect = 4 * MaxTextLen
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
	// Robots holds the page's <meta name="robots"> directives (and those of
	// a meta tag named after the crawler's product token).
	Robots Directives
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
	x := extractor{p: &Page{}, token: token}
	z := html.NewTokenizer(rd)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			x.finishAll()
			if err := z.Err(); err != io.EOF {
				return x.p, err
			}
			x.p.H1, x.p.H2, x.p.H3 = nonNil(x.p.H1), nonNil(x.p.H2), nonNil(x.p.H3)
			return x.p, nil
		case html.TextToken:
			if x.collecting() && x.skip == 0 {
				x.text(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			if a := rawTagAtom(z.Raw()); a != 0 {
				x.start(z, a, tt == html.SelfClosingTagToken)
			}
		case html.EndTagToken:
			if a := rawTagAtom(z.Raw()); a != 0 {
				x.end(a)
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

type extractor struct {
	p     *Page
	token string

	skip int // depth inside <script>, <style>, <template>: not page text

	inTitle  bool
	titleSet bool
	title    []byte

	heading int // 1..3 while inside a heading, else 0
	head    []byte

	inLink  bool
	link    Link
	anchor  []byte
	altText []byte
}

func (x *extractor) collecting() bool { return x.inTitle || x.heading != 0 || x.inLink }

func (x *extractor) text(b []byte) {
	if x.inTitle {
		x.title = appendCapped(x.title, b)
	}
	if x.heading != 0 {
		x.head = appendCapped(x.head, b)
	}
	if x.inLink {
		x.anchor = appendCapped(x.anchor, b)
	}
}

func appendCapped(dst, b []byte) []byte {
	if room := maxCollect - len(dst); room > 0 {
		if len(b) > room {
			b = b[:room]
		}
		dst = append(dst, b...)
	}
	return dst
}

// rawTagAtom reads the tag name from a raw tag token and returns its atom
// when it is one the extractor handles, 0 otherwise. Reading it here rather
// than through Tokenizer.TagName (which copies every name) keeps the
// thousands of <p>, <div> and <span> tags of a page free of allocations.
func rawTagAtom(raw []byte) atom.Atom {
	i := 1 // past '<'
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	var name [10]byte
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '>' || c == '/' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			break
		}
		if n == len(name) {
			return 0
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		name[n] = c
		n++
	}
	switch a := atom.Lookup(name[:n]); a {
	case atom.Title, atom.H1, atom.H2, atom.H3, atom.A, atom.Img, atom.Meta, atom.Base,
		atom.Script, atom.Style, atom.Template, atom.Body, atom.Html:
		return a
	}
	return 0
}

func (x *extractor) start(z *html.Tokenizer, a atom.Atom, selfClosing bool) {
	// Attributes are read with TagAttr, which returns nothing for a tag
	// without any, so no separate check is needed.
	switch a {
	case atom.Script, atom.Style, atom.Template:
		if !selfClosing {
			x.skip++
		}
	case atom.Title:
		if !x.titleSet && !selfClosing && x.skip == 0 {
			x.inTitle = true
		}
	case atom.H1, atom.H2, atom.H3:
		x.finishHeading()
		if !selfClosing {
			x.heading = headingLevel(a)
		}
	case atom.A:
		x.finishLink()
		var href, rel string
		found := false
		for {
			k, v, more := z.TagAttr()
			switch string(k) {
			case "href":
				if !found {
					href, found = string(v), true
				}
			case "rel":
				rel = string(v)
			}
			if !more {
				break
			}
		}
		if found {
			x.inLink = !selfClosing
			x.link = Link{Href: href, NoFollow: hasToken(rel, "nofollow")}
			if selfClosing {
				x.p.addLink(x.link)
			}
		}
	case atom.Img:
		if x.inLink {
			for {
				k, v, more := z.TagAttr()
				if string(k) == "alt" {
					// Several images in one link: their alts, space-separated.
					x.altText = appendCapped(append(x.altText, ' '), v)
				}
				if !more {
					break
				}
			}
		}
	case atom.Meta:
		x.meta(z)
	case atom.Base:
		if x.p.Base == "" {
			for {
				k, v, more := z.TagAttr()
				if string(k) == "href" {
					x.p.Base = strings.TrimSpace(string(v))
				}
				if !more || x.p.Base != "" {
					break
				}
			}
		}
	}
}

func headingLevel(a atom.Atom) int {
	switch a {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	}
	return 3
}

func (x *extractor) meta(z *html.Tokenizer) {
	var name, content string
	hasContent := false
	for {
		k, v, more := z.TagAttr()
		switch string(k) {
		case "name":
			name = strings.TrimSpace(string(v))
		case "content":
			content, hasContent = string(v), true
		}
		if !more {
			break
		}
	}
	if !hasContent {
		return
	}
	switch {
	case strings.EqualFold(name, "description"):
		if x.p.Description == "" {
			x.p.Description = clean(content)
		}
	case strings.EqualFold(name, "robots"), x.token != "" && strings.EqualFold(name, x.token):
		x.p.Robots = x.p.Robots.Merge(ParseDirectives(content))
	}
}

func (x *extractor) end(a atom.Atom) {
	switch a {
	case atom.Script, atom.Style, atom.Template:
		if x.skip > 0 {
			x.skip--
		}
	case atom.Title:
		if x.inTitle {
			x.inTitle, x.titleSet = false, true
			x.p.Title = clean(string(x.title))
		}
	case atom.H1, atom.H2, atom.H3:
		x.finishHeading()
	case atom.A:
		x.finishLink()
	case atom.Body, atom.Html:
		// Unclosed elements end with the document, not before: browsers
		// keep them open, and so do we until EOF.
	}
}

func (x *extractor) finishHeading() {
	if x.heading == 0 {
		return
	}
	t := clean(string(x.head))
	if t != "" {
		switch x.heading {
		case 1:
			x.p.H1 = appendHeading(x.p.H1, t)
		case 2:
			x.p.H2 = appendHeading(x.p.H2, t)
		case 3:
			x.p.H3 = appendHeading(x.p.H3, t)
		}
	}
	x.heading, x.head = 0, x.head[:0]
}

func appendHeading(list []string, t string) []string {
	if len(list) >= MaxHeadings {
		return list
	}
	return append(list, t)
}

func (x *extractor) finishLink() {
	if !x.inLink {
		return
	}
	l := x.link
	l.Text = clean(string(x.anchor))
	if l.Text == "" {
		l.Text = clean(string(x.altText))
	}
	x.p.addLink(l)
	x.inLink, x.anchor, x.altText = false, x.anchor[:0], x.altText[:0]
}

func (p *Page) addLink(l Link) {
	if len(p.Links) < MaxLinks {
		p.Links = append(p.Links, l)
	}
}

func (x *extractor) finishAll() {
	if x.inTitle {
		x.inTitle, x.titleSet = false, true
		x.p.Title = clean(string(x.title))
	}
	x.finishHeading()
	x.finishLink()
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
	return string(c.buf)
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
	case r <= 0x9F:
		// DEL and the C1 controls; NEL is a line break, so a space.
		if r == 0x85 {
			return rSpace
		}
		return rDrop
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
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
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(s[i:])
		}
		i += size
		c.add(r, size)
	}
}

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
	if c.space {
		if len(c.buf)+1 > MaxTextLen {
			c.full = true
			return
		}
		c.buf = append(c.buf, ' ')
		c.space = false
	}
	if len(c.buf)+size > MaxTextLen {
		c.full = true
		return
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
