package extract

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// scopeCase is a page and what it yields under the text-scoping rule
// (reference_test.go). Nil expectations are not checked against the
// expected values, only against html.Parse.
type scopeCase struct {
	name       string
	doc        string
	title      string
	h1, h2, h3 []string
	links      []Link
}

func l(href, text string) Link { return Link{Href: href, Text: text} }

var scopeCases = []scopeCase{
	// The hostile pages of issue 8: body text after an element the author
	// did not close is not the element's text.
	{name: "header closes h1", doc: `<!doctype html><title>Header</title><header><h1>Site name</header><main><p>private text</p></main>`,
		title: "Header", h1: []string{"Site name"}},
	{name: "td closes h2", doc: `<table><tr><td><h2>Cell</td><td>other cell</td></tr></table>`,
		h2: []string{"Cell"}},
	{name: "li closes h3", doc: `<ul><li><h3>Item</li><li>other item</li></ul>`,
		h3: []string{"Item"}},
	{name: "div closes a", doc: `<div><a href="/x">Link</div><p>private text</p>`,
		links: []Link{l("/x", "Link")}},
	{name: "td closes a", doc: `<table><tr><td><a href="/c">Cell link</td><td>private</td></tr></table>`,
		links: []Link{l("/c", "Cell link")}},
	{name: "p closes a", doc: `<p><a href="/p">in p<p>next paragraph`,
		links: []Link{l("/p", "in p")}},
	{name: "dt closes h3", doc: `<dl><dt><h3>Term</dt><dd>definition</dd></dl>`,
		h3: []string{"Term"}},
	{name: "caption closes h2", doc: `<table><caption><h2>Cap</caption><tr><td>cell</td></tr></table>`,
		h2: []string{"Cap"}},
	{name: "button closes h1", doc: `<button><h1>Press</button>after`,
		h1: []string{"Press"}},
	{name: "select closes a", doc: `<select><option><a href="/s">opt</select>after`,
		links: []Link{l("/s", "opt")}},

	// Headings.
	{name: "heading closes heading", doc: `<h1>One<h2>Two</h2>after</h1>tail`,
		h1: []string{"One"}, h2: []string{"Two"}},
	{name: "any heading end closes", doc: `<h1>One</h3>after`,
		h1: []string{"One"}},
	{name: "nested heading counts in both", doc: `<h2>Outer<div><h3>Inner</h3></div>tail</h2>after`,
		h2: []string{"OuterInnertail"}, h3: []string{"Inner"}},
	{name: "p inside heading", doc: `<h3>A <p>B</h3>C`,
		h3: []string{"A B"}},
	{name: "unclosed heading runs to EOF", doc: `<h1>One <b>two`,
		h1: []string{"One two"}},
	{name: "formatting misnested", doc: `<h2><b>Bold <i>both</b> italic</i></h2>out`,
		h2: []string{"Bold both italic"}},
	{name: "script style noscript template in heading", doc: `<h2>A<script>x</script><style>y</style><noscript>z</noscript><template>t</template>B</h2>`,
		h2: []string{"AB"}},
	{name: "svg in heading", doc: `<h1><svg><title>Logo</title></svg> Name</h1>`,
		h1: []string{"Logo Name"}},
	{name: "heading in template", doc: `<template><h1>T</h1><a href="/t">t</a></template><h1>Real</h1>`,
		h1: []string{"Real"}},
	{name: "foster parented text order", doc: `<h1>A <table>B <tr><td>C </td></tr>D </table>E</h1>`,
		h1: []string{"A B D C E"}},
	{name: "empty headings dropped", doc: `<h1> </h1><h1>x</h1><h1><img alt=y></h1>`,
		h1: []string{"x"}},

	// Title.
	{name: "svg title is not the title", doc: `<!doctype html><body><svg><title>Icon label</title></svg><h1>No title here</h1>`,
		title: "", h1: []string{"No title here"}},
	{name: "title in body is not the title", doc: `<body><p>x</p><title>Body title</title>`,
		title: ""},
	{name: "title after head goes to head", doc: `<html><head></head><title>Late title</title><body>`,
		title: "Late title"},
	{name: "first title in head", doc: `<title></title><title>Second</title>`,
		title: ""},
	{name: "title in template is not the title", doc: `<head><template><title>T</title></template></head>`,
		title: ""},
	{name: "unclosed title", doc: `<title>T<h1>One`,
		title: "T<h1>One"},

	// Links.
	{name: "a closes a", doc: `<a href="/1">one<a href="/2">two</a>`,
		links: []Link{l("/1", "one"), l("/2", "two")}},
	{name: "adoption agency moves text out", doc: `<a href="/x">1<div>2</a>3</div>`,
		links: []Link{l("/x", "1")}},
	{name: "adoption agency clones a between", doc: `<b><a href="/y">link<div>block</b>after</div>`,
		links: []Link{l("/y", "link")}},
	{name: "foster parented text before a full cell", doc: `<a href="/f"><table><tr><td>` + strings.Repeat("c", 500) + `</td></tr><b>` + strings.Repeat("f", 100) + `</b></table></a>`,
		links: []Link{l("/f", strings.Repeat("f", 100)+strings.Repeat("c", MaxTextLen-100))}},
	{name: "foster parented link comes first", doc: `<table><tr><td><a href="/1">one</a></td></tr><a href="/2">two</a></table>`,
		links: []Link{l("/2", "two"), l("/1", "one")}},
	{name: "link in math text", doc: `<math><mi><a href="/m">math link</a></mi></math>`,
		links: []Link{l("/m", "math link")}},
	{name: "svg link", doc: `<svg><a href="/v"><text>svg link</text></a></svg>`,
		links: []Link{l("/v", "svg link")}},
	{name: "cdata in svg is text", doc: `<a href="/c"><svg><![CDATA[cdata text]]></svg></a><h1><math><![CDATA[x]]></math></h1>`,
		links: []Link{l("/c", "cdata text")}, h1: []string{"x"}},
	{name: "textarea text counts", doc: `<a href="/t"><textarea>typed</textarea></a>`,
		links: []Link{l("/t", "typed")}},
	{name: "alt texts", doc: `<a href="/i"><img alt="Logo"> <image alt="Two"></a><a href="/j">text <img alt="no"></a>`,
		links: []Link{l("/i", "Logo Two"), l("/j", "text")}},
	{name: "frameset removes body", doc: `<a href="/f"></a><frameset></frameset>`,
		links: []Link{}},
	{name: "frameset then a reconstructed clone", doc: `<a href="/f"><frameset></frameset></html> `,
		links: []Link{}},
	{name: "nofollow and first href", doc: `<a href="/n" href="/m" rel="x NoFollow">n</a>`,
		links: []Link{{Href: "/n", Text: "n", NoFollow: true}}},
	{name: "unclosed link runs to EOF", doc: `<p><a href="/u">text <b>more`,
		links: []Link{l("/u", "text more")}},
	{name: "link in heading", doc: `<h2><a href="/e">Heading link</a></h2>`,
		h2: []string{"Heading link"}, links: []Link{l("/e", "Heading link")}},
	{name: "a in a across a table", doc: `<a><table><a href="/x">0`,
		links: []Link{l("/x", "0")}},
	{name: "object keeps link open", doc: `<a href="/1"><object><a href="/2">inner</a></object>outer`,
		links: []Link{l("/1", "innerouter"), l("/2", "inner")}},
}

func TestTextScoping(t *testing.T) {
	for _, c := range scopeCases {
		t.Run(c.name, func(t *testing.T) {
			got := mustExtract(t, c.doc, "text/html; charset=utf-8")
			ref, linksOK, err := referencePage([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !linksOK {
				t.Fatal("reference could not tell links from clones")
			}
			if got.Title != c.title {
				t.Errorf("title %q, want %q", got.Title, c.title)
			}
			for _, h := range []struct {
				name      string
				got, want []string
			}{{"h1", got.H1, c.h1}, {"h2", got.H2, c.h2}, {"h3", got.H3, c.h3}} {
				if h.want != nil && !reflect.DeepEqual(h.got, h.want) {
					t.Errorf("%s %q, want %q", h.name, h.got, h.want)
				}
			}
			if c.links != nil && !sameLinks(got.Links, c.links) {
				t.Errorf("links %+v, want %+v", got.Links, c.links)
			}
			if diff := comparePages(got, ref, true); diff != "" {
				t.Errorf("differs from the html.Parse tree: %s", diff)
			}
		})
	}
}

func sameLinks(a, b []Link) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// comparePages reports how the extractor's page differs from the
// reference's in title, headings and (when links is set) links.
func comparePages(got, ref *Page, links bool) string {
	var d []string
	if got.Title != ref.Title {
		d = append(d, fmt.Sprintf("title %q, html.Parse %q", got.Title, ref.Title))
	}
	for _, h := range []struct {
		name      string
		got, want []string
	}{{"h1", got.H1, ref.H1}, {"h2", got.H2, ref.H2}, {"h3", got.H3, ref.H3}} {
		if !reflect.DeepEqual(h.got, h.want) {
			d = append(d, fmt.Sprintf("%s %q, html.Parse %q", h.name, h.got, h.want))
		}
	}
	if got.Lang != ref.Lang {
		d = append(d, fmt.Sprintf("lang %q, html.Parse %q", got.Lang, ref.Lang))
	}
	if links && !sameLinks(got.Links, ref.Links) {
		d = append(d, fmt.Sprintf("links %+v, html.Parse %+v", got.Links, ref.Links))
	}
	return strings.Join(d, "; ")
}

// A page that makes the algorithm scan 500 open elements for every tag is
// read until the work budget runs out: what came before is kept, the rest
// of the page is ignored. Without the budget the page reads as html.Parse
// reads it.
func TestWorkBudget(t *testing.T) {
	doc := `<h1>kept</h1><p><button>` + strings.Repeat("<div>", 500) + strings.Repeat("</p>", 200000) + `<h2>after</h2>`
	p := mustExtract(t, doc, "text/html")
	if !reflect.DeepEqual(p.H1, []string{"kept"}) || len(p.H2) != 0 {
		t.Errorf("with the budget: h1 %q h2 %q, want [kept] []", p.H1, p.H2)
	}
	saved := workPerByte
	workPerByte = 0
	defer func() { workPerByte = saved }()
	p = mustExtract(t, doc, "text/html")
	ref, _, err := referencePage([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if diff := comparePages(p, ref, true); diff != "" || !reflect.DeepEqual(p.H2, []string{"after"}) {
		t.Errorf("without the budget: h2 %q; %s", p.H2, diff)
	}
}
