package extract

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// This file is the text-scoping rule written as a walk over the tree
// golang.org/x/net/html.Parse builds (the HTML5 tree-construction algorithm,
// as browsers build the DOM):
//
//   - The title is the text of the first HTML <title> that is a child of the
//     document's <head>; a page without one has no title (an SVG <title>, or
//     a <title> the parser leaves in <body>, is not the page's title).
//   - An h1, h2 or h3 keeps the text of the text nodes inside it.
//   - A link is an <a> element (HTML or SVG) with an href attribute, made by
//     an <a> start tag of the page; it keeps the text of the text nodes inside
//     it or, with none, the alt texts of the HTML <img> elements inside it.
//   - Clones do not count. The adoption agency algorithm and the
//     reconstruction of active formatting elements make copies of an <a>
//     element, and the text the parser puts into such a copy (the text after
//     a </div> that closed a link, say) is not the link's text: a link keeps
//     only what is inside the element its own start tag made, where the
//     parser leaves it. So a link left open never turns the rest of the page
//     into link text.
//   - Text inside script, style, template, noscript, iframe, noembed and
//     noframes (and inside SVG or MathML script and style) is not page text,
//     and titles, headings and links inside them do not count.
//   - Every text is cleaned by CleanText and capped; lists keep tree order,
//     empty headings are dropped, and the caps apply in that order.
//
// html.Parse's tree cannot tell a clone from the element it copies, so
// referencePage first gives every <a> start tag a unique attribute; the
// first element in tree order carrying a given value is the one the tag
// made (clones come after their original in tree order), except in a
// frameset document: <frameset> removes the body with every element made
// before it, and no <a> tag is read after it, so every <a> left in the tree
// is a clone (whitespace after </html> reconstructs them).

const xrefAttr = "data-xref-lohisoft"

// markAnchors inserts a unique attribute right after the name of every
// "<a" start tag. It works on bytes, so it also changes "<a " inside
// comments or raw text; referencePage detects that and then compares no
// links.
func markAnchors(doc []byte) []byte {
	var out bytes.Buffer
	n := 0
	for i := 0; i < len(doc); i++ {
		out.WriteByte(doc[i])
		if doc[i] == '<' && i+2 < len(doc) && (doc[i+1] == 'a' || doc[i+1] == 'A') {
			switch doc[i+2] {
			case ' ', '\t', '\n', '\r', '\f', '/', '>':
				n++
				out.WriteByte(doc[i+1])
				fmt.Fprintf(&out, ` %s="%d" `, xrefAttr, n)
				i++
			}
		}
	}
	return out.Bytes()
}

// referencePage returns what the rule gives for doc, and whether its links
// could be told from clones. err is html.Parse's (a page it rejects, such
// as one nested deeper than 512 elements).
func referencePage(doc []byte) (p *Page, linksOK bool, err error) {
	tree, err := html.Parse(bytes.NewReader(doc))
	if err != nil {
		return nil, false, err
	}
	marked, err := html.Parse(bytes.NewReader(markAnchors(doc)))
	if err == nil && dump(marked, true) == dump(tree, false) {
		tree, linksOK = marked, true
	}
	p = &Page{H1: []string{}, H2: []string{}, H3: []string{}}
	if root := child(tree, "html"); root != nil {
		for _, a := range root.Attr {
			if a.Namespace == "" && a.Key == "lang" {
				p.Lang = a.Val[:min(len(a.Val), MaxLangLen)]
			}
		}
	}
	for h := child(child(tree, "html"), "head"); h != nil; h = nil {
		if t := child(h, "title"); t != nil {
			var b strings.Builder
			for c := t.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					b.WriteString(c.Data)
				}
			}
			p.Title = CleanText(b.String())
		}
	}
	seen := map[string]bool{}
	frameset := child(child(tree, "html"), "frameset") != nil
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if notText(n) {
				return
			}
			switch {
			case n.Namespace == "" && (n.Data == "h1" || n.Data == "h2" || n.Data == "h3"):
				if t := CleanText(textOf(n)); t != "" {
					l := map[string]*[]string{"h1": &p.H1, "h2": &p.H2, "h3": &p.H3}[n.Data]
					if len(*l) < MaxHeadings {
						*l = append(*l, t)
					}
				}
			case n.Data == "a" && (n.Namespace == "" || n.Namespace == "svg"):
				href, ok := attrOf(n, "href")
				id, _ := attrOf(n, xrefAttr)
				if ok && !seen[id] && !frameset && len(p.Links) < MaxLinks {
					seen[id] = linksOK
					rel, _ := attrOf(n, "rel")
					l := Link{Href: href, Text: CleanText(textOf(n)), NoFollow: hasToken(rel, "nofollow")}
					if l.Text == "" {
						l.Text = CleanText(strings.Join(altsOf(n, nil), " "))
					}
					p.Links = append(p.Links, l)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(tree)
	return p, linksOK, nil
}

func child(n *html.Node, name string) *html.Node {
	if n == nil {
		return nil
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Namespace == "" && c.Data == name {
			return c
		}
	}
	return nil
}

func attrOf(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// notText reports an element whose content is not page text.
func notText(n *html.Node) bool {
	switch n.Data {
	case "script", "style":
		return true
	case "template", "noscript", "iframe", "noembed", "noframes":
		return n.Namespace == ""
	}
	return false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				b.WriteString(c.Data)
			case c.Type == html.ElementNode && !notText(c):
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

func altsOf(n *html.Node, alts []string) []string {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode || notText(c) {
			continue
		}
		if c.Namespace == "" && c.Data == "img" {
			if alt, ok := attrOf(c, "alt"); ok {
				alts = append(alts, alt)
			}
		}
		alts = altsOf(c, alts)
	}
	return alts
}

// dump writes the tree, leaving out the marking attribute when strip is
// set; two dumps are equal when the trees are.
func dump(n *html.Node, strip bool) string {
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		b.WriteString(strings.Repeat(" ", depth))
		b.WriteString(strconv.Itoa(int(n.Type)) + " " + n.Namespace + ":" + strconv.Quote(n.Data))
		for _, a := range n.Attr {
			if strip && a.Key == xrefAttr {
				continue
			}
			b.WriteString(" " + a.Namespace + ":" + a.Key + "=" + strconv.Quote(a.Val))
		}
		b.WriteByte('\n')
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}
