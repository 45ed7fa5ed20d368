package extract

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzExtract feeds arbitrary bytes to the extractor: no panic, and every
// kept text is valid UTF-8, whitespace-collapsed, free of control and bidi
// characters and within the length caps.
func FuzzExtract(f *testing.F) {
	f.Add([]byte(`<title>T</title><meta name="description" content="d"><h1>H<b>1</b></h1><a href="/x"><img alt="I"></a>`), "text/html")
	f.Add([]byte("<meta charset=\"windows-1250\"><title>\x9e</title><h2>a\x00b</h2>"), "text/html")
	f.Add([]byte("\xff\xfe<\x00t\x00i\x00t\x00l\x00e\x00>\x00"), "text/html; charset=utf-16")
	f.Add([]byte(`<a href=x><a href=y>z<h3><script>x</script>s</h3><template><h1>t</h1></template>`), "")
	f.Add([]byte(`<meta name=robots content="none"><base href="//x/"><svg><title>s</title></svg>`), "application/xhtml+xml")
	f.Fuzz(func(t *testing.T, doc []byte, ct string) {
		p, err := Extract(bytes.NewReader(doc), ct, "LohiSoftBot")
		if err != nil {
			return
		}
		texts := []string{p.Title, p.Description}
		texts = append(texts, p.H1...)
		texts = append(texts, p.H2...)
		texts = append(texts, p.H3...)
		for _, l := range p.Links {
			texts = append(texts, l.Text)
		}
		for _, s := range texts {
			if len(s) > MaxTextLen || !utf8.ValidString(s) || strings.Contains(s, "  ") || strings.TrimSpace(s) != s {
				t.Fatalf("bad text %q", s)
			}
			for _, r := range s {
				if c := runeClass(r); c == rDrop || c == rSpace && r != ' ' {
					t.Fatalf("control, bidi or unnormalised space character in %q", s)
				}
			}
		}
		if len(p.Links) > MaxLinks || len(p.H1) > MaxHeadings || len(p.H2) > MaxHeadings || len(p.H3) > MaxHeadings {
			t.Fatal("limits exceeded")
		}
	})
}

// FuzzExtractMatchesHTML5 checks the streaming extractor against the tree
// golang.org/x/net/html.Parse builds for the same decoded page: same title,
// same headings per level, same links (href, text, nofollow) in the same
// order, after CleanText and the caps. The rule, and how clones made by the
// adoption agency are counted (they are not links), is in reference_test.go.
// Pages html.Parse rejects (nested deeper than 512 elements) are skipped; so
// are links, only, when the reference cannot mark every <a> start tag.
func FuzzExtractMatchesHTML5(f *testing.F) {
	for _, c := range scopeCases {
		f.Add([]byte(c.doc))
	}
	for _, s := range html5Seeds {
		f.Add([]byte(s))
	}
	noWorkBudget(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		// A page that takes seconds is a bug too: crash with the stacks, so
		// the fuzzer keeps the input.
		watchdog := time.AfterFunc(10*time.Second, func() {
			pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			panic(fmt.Sprintf("FuzzExtractMatchesHTML5: over 10s on %q", doc))
		})
		defer watchdog.Stop()
		decoded, err := io.ReadAll(mustDecode(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		ref, linksOK, err := referencePage(decoded)
		if err != nil {
			return
		}
		got, err := extract(bytes.NewReader(decoded), "LohiSoftBot")
		if err != nil {
			t.Fatal(err)
		}
		if d := comparePages(got, ref, linksOK); d != "" {
			t.Fatalf("%q: %s", decoded, d)
		}
	})
}

func mustDecode(t *testing.T, doc []byte) io.Reader {
	r, err := decodeHTML(bytes.NewReader(doc), "text/html; charset=utf-8")
	if err == io.EOF {
		return bytes.NewReader(nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// html5Seeds are messy and hostile pages for FuzzExtractMatchesHTML5, on
// top of the scoping table tests.
var html5Seeds = []string{
	`<table><tr><td>a<td>b<tr><th><h1>x</th></table><h2>y`,
	`<table><a href=1>f</a><tr><td><a href=2>c</a><caption><h3>cap</h3></table>`,
	`<table><tbody><tr><td><table><tr><td><h1>in</td></tr></table>out</td></tr></tbody></table>`,
	`<table><colgroup><col><col></colgroup><h2>fostered</h2><tr><td>x`,
	`<table><input type=hidden><input type=text><form><a href=/f>fo</a></form></table>`,
	`<ul><li>one<li><a href=/l>two<li>three</ul><ol><li><h3>x<li>y</ol>`,
	`<dl><dt>t<dd><a href=/d>d<dt>u</dl>`,
	`<a href=/1><a href=/2><a href=/3>x</a></a></a>`,
	`<a href=/1><div><a href=/2>nested</div>after</a>`,
	`<a href=/1>a<table><a href=/2>b</table>c`,
	`<a href=/1><svg><desc><a href=/2>x</a>y</desc></svg>z</a>`,
	`<b><i><u><s><a href=/x>fmt</b>1</i>2</u>3</s>4`,
	`<p><b class=x><b class=x><b class=x><b class=x>deep</p><p>again`,
	`<nobr>a<nobr>b</nobr>c`,
	`<font color=red><svg><font size=3><a href=/s>x</a></font></svg></font>`,
	`<svg><title>icon<h1>breaks out</h1></title><foreignObject><a href=/fo>fo</a></foreignObject></svg>`,
	`<math><mi><h2>mi</h2></mi><annotation-xml encoding="text/html"><a href=/ax>ax</a></annotation-xml><mtext><b>t</b></mtext></math>`,
	`<svg><style><a href=/st>styled</a></style><script>s</script><![CDATA[<h1>cdata</h1>]]></svg>`,
	`<template><a href=/t1>t</a><template><h1>x</h1></template></template><a href=/t2>real</a>`,
	`<head><template><title>t</title></template><title>real</title></head>`,
	`<noscript><h1>ns</h1></noscript><noembed>e</noembed><noframes>f</noframes><iframe><a href=/if>i</a></iframe>`,
	`<select><option><h2>o</h2><optgroup><a href=/sel>s</a></select><select><select>x`,
	`<button><a href=/b>btn</button><button>x`,
	`<form><h1>f</form><form>y</form>z`,
	`<pre>` + "\n\n" + `<a href=/pre>p</a></pre><listing>` + "\n" + `l</listing><textarea>` + "\n" + `t</textarea>`,
	`<xmp><a href=/x>raw</a></xmp><plaintext><h1>plain`,
	`<h1><title>in body</title>h</h1><title>late</title>`,
	`<!doctype html><html><head></head><title>after head</title><body><h1>b</h1>`,
	`<html><head><title>a</title></head><body></body></html><h2>after html</h2><!-- c -->x`,
	`<frameset><frame></frameset><noframes><a href=/nf>nf</a></noframes>`,
	`<a href=/x>x</a><frameset></frameset></html> <a href=/y>y`,
	`<ruby>r<rt>t<rp>p</ruby><h3>after ruby`,
	`<image alt="img alt"><a href=/i><image alt=one><img alt=two></a>`,
	`<object><a href=/o>o</object></a><applet><h1>ap</applet><marquee>m</marquee>`,
	`<h1>a<h2>b<h3>c</h1>d</h2>e</h3>f`,
	`<header><nav><a href=/n>nav</nav></header><main><h1>m</main><footer>f`,
	`<table><tr><td><a href=/1>one</td></tr><tr><td>two</a></td></tr></table>`,
	`<div><a href=/x>x</div><div><a href=/y>y</div>z`,
	`<b><p>bold</b>para</p>`,
	`<a href=/1>1<p>2</a>3`,
	`<span><a href=/1>x<b>y</span>z</b>`,
	`<table><tr><td><svg><title>t</title></svg><math><mi>m</mi></math></td></tr></table>`,
	`<body><a href=/1><h1>linked heading</h1></a><h2><a href=/2>heading link</h2>`,
	"<h1>\x00a\u0000b\r\nc\u0085d\u202ee</h1><a href=/z>\ufeffz</a>",
}

// tagVocabulary is what FuzzExtractMatchesHTML5Tags builds pages from: tags
// whose rules differ (scoping, formatting, tables, lists, forms, raw text,
// templates, foreign content, framesets), so that byte mutations turn into
// tag sequences rather than noise.
var tagVocabulary = func() []string {
	names := []string{
		"html", "head", "body", "title", "h1", "h2", "h3", "h4", "p", "div", "span", "a", "b", "i",
		"u", "s", "em", "strong", "font", "nobr", "code", "big", "table", "tbody", "thead", "tfoot",
		"tr", "td", "th", "caption", "colgroup", "col", "ul", "ol", "li", "dl", "dt", "dd", "header",
		"main", "nav", "section", "address", "button", "select", "option", "optgroup", "form", "input",
		"textarea", "pre", "listing", "xmp", "plaintext", "template", "script", "style", "noscript",
		"iframe", "noembed", "noframes", "frameset", "frame", "svg", "math", "mi", "mtext", "mglyph",
		"annotation-xml", "foreignobject", "desc", "img", "image", "object", "marquee", "applet",
		"ruby", "rt", "rp", "rb", "rtc", "br", "hr", "x-y", "menu", "summary", "details", "center",
		"blockquote", "figure", "sub", "meta", "base", "link", "area", "embed", "wbr", "param",
	}
	v := []string{"t", " ", "\n", "w ", "&amp;", "\x00", "<!-- c -->", "<!doctype html>",
		"<![CDATA[cd]]>", `<a href="/x" rel="nofollow">`, `<input type="hidden">`, `<font color="red">`,
		`<annotation-xml encoding="text/html">`, `<img alt="alt">`, `<b class="c">`, "</>", "<br/>"}
	for _, n := range names {
		v = append(v, "<"+n+">", "</"+n+">")
	}
	return v
}()

// FuzzExtractMatchesHTML5Tags is FuzzExtractMatchesHTML5 on pages built
// from tagVocabulary: every byte picks a piece; links get distinct hrefs and
// texts distinct words, so that text landing in the wrong element shows.
func FuzzExtractMatchesHTML5Tags(f *testing.F) {
	f.Add([]byte{0, 1, 2})
	f.Add([]byte("\x20\x21\x22\x23\x24\x25\x26\x27\x28\x29\x2a\x2b\x2c\x2d\x2e\x2f"))
	f.Add([]byte("\x50\x30\x03\x31\x52\x80\x03\x81\x90\x91\x03"))
	noWorkBudget(f)
	f.Fuzz(func(t *testing.T, program []byte) {
		var b strings.Builder
		for i, c := range program {
			switch piece := tagVocabulary[int(c)%len(tagVocabulary)]; piece {
			case "<a>":
				fmt.Fprintf(&b, `<a href="/%d">`, i)
			case "t":
				fmt.Fprintf(&b, "w%d", i)
			default:
				b.WriteString(piece)
			}
		}
		doc := []byte(b.String())
		ref, linksOK, err := referencePage(doc)
		if err != nil {
			return
		}
		got, err := extract(bytes.NewReader(doc), "LohiSoftBot")
		if err != nil {
			t.Fatal(err)
		}
		if d := comparePages(got, ref, linksOK); d != "" {
			t.Fatalf("%q: %s", doc, d)
		}
	})
}

// noWorkBudget lets the builder do all the work html.Parse does, for the
// differential targets (TestWorkBudget covers the budget).
func noWorkBudget(f *testing.F) {
	saved := workPerByte
	workPerByte = 0
	f.Cleanup(func() { workPerByte = saved })
}
