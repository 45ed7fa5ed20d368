package extract

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func mustExtract(t *testing.T, doc, ct string) *Page {
	t.Helper()
	p, err := Extract(strings.NewReader(doc), ct, "LohiSoftBot")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExtractBasics(t *testing.T) {
	doc := `<!doctype html><html><head>
<title>  Hello,
   world &amp; more </title>
<meta name="Description" content="  A  page
 about things ">
<meta name="description" content="second ignored">
<script>var h1 = "<h1>not a heading</h1>";</script>
<style>h2 { color: red }</style>
</head><body>
<h1>Main <em>title</em></h1>
<p>BODY-TEXT-MARKER paragraph that must never be kept.</p>
<h2>Sub one</h2><h3>Deep</h3><h2> Sub   two </h2>
<h4>not kept</h4>
<a href="/a">Link A</a>
<a href="/b"><img src="x.png" alt="Logo B"></a>
<a href="/c" rel="external nofollow">C</a>
<a name="anchor-only">no href</a>
<a href="/d"><span> D </span> text</a>
<h2><a href="/e">Heading link</a></h2>
</body></html>`
	p := mustExtract(t, doc, "text/html")
	if p.Title != "Hello, world & more" {
		t.Errorf("title %q", p.Title)
	}
	if p.Description != "A page about things" {
		t.Errorf("description %q", p.Description)
	}
	if !reflect.DeepEqual(p.H1, []string{"Main title"}) ||
		!reflect.DeepEqual(p.H2, []string{"Sub one", "Sub two", "Heading link"}) ||
		!reflect.DeepEqual(p.H3, []string{"Deep"}) {
		t.Errorf("headings %q %q %q", p.H1, p.H2, p.H3)
	}
	want := []Link{{Href: "/a", Text: "Link A"}, {Href: "/b", Text: "Logo B"}, {Href: "/c", Text: "C", NoFollow: true}, {Href: "/d", Text: "D text"}, {Href: "/e", Text: "Heading link"}}
	if !reflect.DeepEqual(p.Links, want) {
		t.Errorf("links\n got %+v\nwant %+v", p.Links, want)
	}
	if p.Robots != (Directives{}) {
		t.Errorf("robots %+v", p.Robots)
	}
}

func TestNoBodyTextRetained(t *testing.T) {
	doc := `<html><head><title>T</title></head><body><div>SECRET-BODY-MARKER</div><p>more SECRET-BODY-MARKER</p><h1>H</h1><a href="/x">A</a></body></html>`
	p := mustExtract(t, doc, "text/html")
	if s := flatten(p); strings.Contains(s, "SECRET-BODY-MARKER") {
		t.Fatalf("body text retained: %s", s)
	}
}

func flatten(p *Page) string {
	var b strings.Builder
	b.WriteString(p.Title + "|" + p.Description + "|" + p.Base + "|")
	for _, l := range [][]string{p.H1, p.H2, p.H3} {
		b.WriteString(strings.Join(l, "|"))
	}
	for _, l := range p.Links {
		b.WriteString(l.Href + "|" + l.Text + "|")
	}
	return b.String()
}

func TestMetaRobots(t *testing.T) {
	cases := []struct {
		doc  string
		want Directives
	}{
		{`<meta name="robots" content="noindex">`, Directives{NoIndex: true}},
		{`<meta name="ROBOTS" content="NoFollow, noarchive">`, Directives{NoFollow: true}},
		{`<meta name="robots" content="none">`, Directives{true, true}},
		{`<meta name="lohisoftbot" content="noindex">`, Directives{NoIndex: true}},
		{`<meta name="googlebot" content="noindex,nofollow">`, Directives{}},
		{`<meta name="robots" content="index, follow">`, Directives{}},
		{`<meta name="robots" content="noindex"><meta name="LohiSoftBot" content="nofollow">`, Directives{true, true}},
	}
	for _, c := range cases {
		if got := mustExtract(t, "<html><head>"+c.doc+"</head></html>", "text/html").Robots; got != c.want {
			t.Errorf("%s: %+v, want %+v", c.doc, got, c.want)
		}
	}
}

func TestHeaderDirectives(t *testing.T) {
	cases := []struct {
		v    []string
		want Directives
	}{
		{[]string{"noindex"}, Directives{NoIndex: true}},
		{[]string{"noindex, nofollow"}, Directives{true, true}},
		{[]string{"none"}, Directives{true, true}},
		{[]string{"googlebot: noindex"}, Directives{}},
		{[]string{"LohiSoftBot: nofollow"}, Directives{NoFollow: true}},
		{[]string{"lohisoftbot: noindex", "nofollow"}, Directives{true, true}},
		{[]string{"unavailable_after: 25 Jun 2010 15:00:00 PST"}, Directives{}},
		{[]string{"max-snippet: 20, noindex"}, Directives{NoIndex: true}},
		{nil, Directives{}},
	}
	for _, c := range cases {
		if got := HeaderDirectives(c.v, "LohiSoftBot"); got != c.want {
			t.Errorf("%q: %+v, want %+v", c.v, got, c.want)
		}
	}
}

func TestCharsets(t *testing.T) {
	// "Příliš žluťoučký" in windows-1250 (declared in the header),
	// ISO-8859-2 (declared in a meta tag) and UTF-16 with a BOM.
	cp1250 := []byte("<title>P\xf8\xedli\x9a \x9elu\x9dou\xe8k\xfd</title>")
	p, err := Extract(bytes.NewReader(cp1250), "text/html; charset=windows-1250", "")
	if err != nil || p.Title != "Příliš žluťoučký" {
		t.Errorf("windows-1250: %q %v", p.Title, err)
	}
	latin2 := append([]byte(`<meta charset="iso-8859-2"><title>`), []byte("P\xf8\xedli\xb9 \xbelu\xbbou\xe8k\xfd</title>")...)
	p, err = Extract(bytes.NewReader(latin2), "text/html", "")
	if err != nil || p.Title != "Příliš žluťoučký" {
		t.Errorf("iso-8859-2 via meta: %q %v", p.Title, err)
	}
	var u16 []byte
	u16 = append(u16, 0xFF, 0xFE)
	for _, r := range "<title>Ahoj ř</title>" {
		u16 = append(u16, byte(r), byte(r>>8))
	}
	p, err = Extract(bytes.NewReader(u16), "text/html", "")
	if err != nil || p.Title != "Ahoj ř" {
		t.Errorf("utf-16 BOM: %q %v", p.Title, err)
	}
}

func TestMalformedAndLimits(t *testing.T) {
	// Unclosed elements end at the next one of the kind or at EOF.
	p := mustExtract(t, `<title>T<h1>One<h1>Two<a href="/x">X<a href="/y">Y`, "text/html")
	// <title> is raw text up to </title>: with none, it runs to EOF.
	if p.Title == "" {
		t.Error("unclosed title lost")
	}
	p = mustExtract(t, `<h1>One<h2>Two</h2><a href="/x">X<a href="/y">Y`, "text/html")
	if !reflect.DeepEqual(p.H1, []string{"One"}) || !reflect.DeepEqual(p.H2, []string{"Two"}) {
		t.Errorf("headings %q %q", p.H1, p.H2)
	}
	if len(p.Links) != 2 || p.Links[0].Text != "X" || p.Links[1].Text != "Y" {
		t.Errorf("links %+v", p.Links)
	}
	long := strings.Repeat("word ", 10000)
	p = mustExtract(t, "<title>"+long+"</title><h1>"+long+"</h1>"+strings.Repeat(`<a href="/z">z</a><h3>h</h3>`, MaxLinks+10), "text/html")
	if len(p.Title) > MaxTextLen || len(p.H1[0]) > MaxTextLen || len(p.Links) != MaxLinks || len(p.H3) != MaxHeadings {
		t.Errorf("limits: title %d h1 %d links %d h3 %d", len(p.Title), len(p.H1[0]), len(p.Links), len(p.H3))
	}
	p = mustExtract(t, "", "text/html")
	if p.Title != "" || p.H1 == nil || p.H2 == nil || p.H3 == nil {
		t.Errorf("empty document: %+v", p)
	}
	p = mustExtract(t, `<base href=" /sub/ "><base href="/other/"><a href="x">x</a>`, "text/html")
	if p.Base != "/sub/" {
		t.Errorf("base %q", p.Base)
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"  a \n\t b  ":   "a b",
		"\u00a0x\u3000y": "x y",
		"a\x00b\x7fc":    "abc",
		"bad\xffutf8":    "badutf8",
		"":               "",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	s := clean(strings.Repeat("ž", MaxTextLen))
	if len(s) > MaxTextLen || !strings.HasPrefix(s, "ž") || strings.ContainsRune(s, '\uFFFD') {
		t.Errorf("cap not on rune boundary: %d", len(s))
	}
}

func TestIsHTML(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/html": true, "TEXT/HTML; charset=utf-8": true, "application/xhtml+xml": true,
		"application/pdf": false, "text/plain": false, "": false, "image/png": false,
	} {
		if IsHTML(ct) != want {
			t.Errorf("IsHTML(%q) != %v", ct, want)
		}
	}
}

// C1 controls and bidi embedding/override/isolate characters are dropped
// from every kept text, like C0 controls; NEL counts as a line break.
func TestCleanDropsC1AndBidi(t *testing.T) {
	for in, want := range map[string]string{
		"a\u0080b\u009fc":                    "abc",
		"x\u202ay\u202bz\u202c\u202d\u202e!": "xyz!",
		"p\u2066q\u2067r\u2068s\u2069":       "pqrs",
		"line\u0085break":                    "line break",
		"\u200eltr mark kept\u200f":          "\u200eltr mark kept\u200f",
	} {
		if got := CleanText(in); got != want {
			t.Errorf("CleanText(%q) = %q, want %q", in, got, want)
		}
	}
	evil := "\u202eevil\u0081\u2066"
	doc := `<title>T` + evil + `</title><meta name="description" content="D` + evil + `">` +
		`<h1>H` + evil + `</h1><h2>H2` + evil + `</h2><h3>H3` + evil + `</h3>` +
		`<a href="/a">A` + evil + `</a><a href="/b"><img alt="I` + evil + `"></a>`
	p := mustExtract(t, doc, "text/html; charset=utf-8")
	for _, s := range append([]string{p.Title, p.Description, p.Links[0].Text, p.Links[1].Text}, append(append(p.H1, p.H2...), p.H3...)...) {
		if !strings.HasSuffix(s, "evil") {
			t.Errorf("%q: want the control and bidi characters dropped", s)
		}
	}
}

// Robots directives as site owners write them: separated by spaces as well
// as commas, and several user agents in one X-Robots-Tag value, each agent's
// directives running to the next agent.
func TestDirectivesAsOwnersWriteThem(t *testing.T) {
	for v, want := range map[string]Directives{
		"noindex nofollow":         {true, true},
		"NOINDEX  ,  nofollow":     {true, true},
		"noarchive noindex":        {NoIndex: true},
		"index\tfollow":            {},
		"max-snippet: 20 nofollow": {NoFollow: true},
		"noindexnofollow":          {},
		" none ":                   {true, true},
	} {
		if got := ParseDirectives(v); got != want {
			t.Errorf("ParseDirectives(%q) = %+v, want %+v", v, got, want)
		}
	}
	p := mustExtract(t, `<meta name="robots" content="noindex nofollow">`, "text/html")
	if p.Robots != (Directives{true, true}) {
		t.Errorf("meta robots with spaces: %+v", p.Robots)
	}
	cases := []struct {
		v    []string
		want Directives
	}{
		{[]string{"otherbot: noindex, LohiSoftBot: noindex"}, Directives{NoIndex: true}},
		{[]string{"googlebot: nofollow, LohiSoftBot: noindex, nofollow"}, Directives{true, true}},
		{[]string{"LohiSoftBot: noindex, googlebot: nofollow"}, Directives{NoIndex: true}},
		{[]string{"googlebot: noindex, nofollow, otherbot: none"}, Directives{}},
		{[]string{"LohiSoftBot: noindex nofollow"}, Directives{true, true}},
		{[]string{"nofollow, googlebot: noindex"}, Directives{NoFollow: true}},
		{[]string{"googlebot: noindex", "LohiSoftBot:nofollow"}, Directives{NoFollow: true}},
		{[]string{"LohiSoftBot: unavailable_after: Wednesday, 03-Nov-21 15:00:00 GMT, noindex"}, Directives{NoIndex: true}},
		{[]string{"max-snippet: 20, googlebot: nofollow"}, Directives{}},
	}
	for _, c := range cases {
		if got := HeaderDirectives(c.v, "LohiSoftBot"); got != c.want {
			t.Errorf("%q: %+v, want %+v", c.v, got, c.want)
		}
	}
}

// At the cap, a space is kept only with the character after it: the
// result never ends with a space.
func TestCleanTextCapNeverEndsWithSpace(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("a", MaxTextLen-1) + " b",
		strings.Repeat("a", MaxTextLen-1) + "  \t ž",
		strings.Repeat("ab ", MaxTextLen),
	} {
		s := CleanText(in)
		if strings.TrimSpace(s) != s || len(s) > MaxTextLen {
			t.Errorf("CleanText(%q…) = …%q (%d bytes)", in[:8], s[max(0, len(s)-8):], len(s))
		}
	}
}
