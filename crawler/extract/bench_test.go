package extract

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html/charset"
)

// benchPage builds a realistic page of about size bytes: head with scripts
// and styles, navigation, headings, paragraphs and links.
func benchPage(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`<!doctype html><html lang="cs"><head><meta charset="utf-8"><title>Benchmark page — Příliš žluťoučký kůň</title>
<meta name="description" content="A page for measuring extraction speed.">
<style>body{font-family:sans-serif} .nav a{padding:4px}</style>
<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}</script></head><body>
<nav class="nav">`)
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, `<a href="/section/%d">Section %d</a> `, i, i)
	}
	b.WriteString("</nav><h1>Main heading of the page</h1>\n")
	for i := 0; b.Len() < size; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&b, "<h2>Chapter %d</h2>\n", i/10)
		}
		if i%5 == 0 {
			fmt.Fprintf(&b, "<h3>Part %d</h3>\n", i)
		}
		fmt.Fprintf(&b, `<p class="text">Lorem ipsum dolor sit amet, <b>consectetur</b> adipiscing elit, sed do eiusmod tempor &amp; incididunt ut labore. <a href="/article/%d?ref=p">Read article %d</a> and <a href="https://other.example/x/%d"><img src="/i.png" alt="Partner %d"></a>.</p>`+"\n", i, i, i, i)
	}
	b.WriteString("</body></html>")
	return b.Bytes()
}

// goqueryExtract is the reference implementation the benchmark compares
// with: the same fields, read from a full DOM built by goquery.
func goqueryExtract(r io.Reader, contentType string) (*Page, error) {
	rd, err := charset.NewReader(r, contentType)
	if err != nil {
		return nil, err
	}
	doc, err := goquery.NewDocumentFromReader(rd)
	if err != nil {
		return nil, err
	}
	p := &Page{H1: []string{}, H2: []string{}, H3: []string{}}
	p.Title = clean(doc.Find("head title").First().Text())
	if l, ok := doc.Find("html").First().Attr("lang"); ok {
		p.Lang = l[:min(len(l), MaxLangLen)]
	}
	doc.Find("meta").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		if n, _ := s.Attr("name"); strings.EqualFold(n, "description") {
			c, _ := s.Attr("content")
			p.Description = clean(c)
			return false
		}
		return true
	})
	doc.Find("h1, h2, h3").Each(func(_ int, s *goquery.Selection) {
		t := clean(s.Text())
		if t == "" {
			return
		}
		switch goquery.NodeName(s) {
		case "h1":
			p.H1 = append(p.H1, t)
		case "h2":
			p.H2 = append(p.H2, t)
		case "h3":
			p.H3 = append(p.H3, t)
		}
	})
	doc.Find("a[href]").Each(func(_ int, s *goquery.Selection) {
		href, _ := s.Attr("href")
		rel, _ := s.Attr("rel")
		text := clean(s.Text())
		if text == "" {
			var alts []string
			s.Find("img[alt]").Each(func(_ int, img *goquery.Selection) {
				a, _ := img.Attr("alt")
				alts = append(alts, a)
			})
			text = clean(strings.Join(alts, " "))
		}
		p.Links = append(p.Links, Link{Href: href, Text: text, NoFollow: hasToken(rel, "nofollow")})
	})
	return p, nil
}

// The reference and the streaming extractor agree on the benchmark pages,
// so the benchmark compares equal work.
func TestGoqueryReferenceAgrees(t *testing.T) {
	page := benchPage(64 << 10)
	ours, err := Extract(bytes.NewReader(page), "text/html", "")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := goqueryExtract(bytes.NewReader(page), "text/html")
	if err != nil {
		t.Fatal(err)
	}
	ours.Robots = Directives{}
	if !reflect.DeepEqual(ours, ref) {
		t.Fatalf("extractors disagree:\nours %+v\nref  %+v", ours.Links[:3], ref.Links[:3])
	}
	if len(ours.Links) < 100 || len(ours.H2) == 0 || ours.Title == "" {
		t.Fatalf("benchmark page too thin: %d links", len(ours.Links))
	}
}

// BenchmarkExtraction runs both extractors on the same pages in one run.
// Compare ns/op, MB/s and allocs/op between the ours/ and goquery/ lines.
func BenchmarkExtraction(b *testing.B) {
	for _, size := range []int{50 << 10, 2 << 20} {
		page := benchPage(size)
		b.Run(fmt.Sprintf("ours/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Extract(bytes.NewReader(page), "text/html", "LohiSoftBot"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("goquery/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := goqueryExtract(bytes.NewReader(page), "text/html"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hostilePages are 2 MiB pages built to make a tree builder work hard:
// scope checks across a stack as deep as it may get, reconstruction of
// many formatting elements for every text, the adoption agency, foster
// parenting and links waiting inside a table that never closes.
func hostilePages() map[string][]byte {
	const size = 2 << 20
	fill := func(head, unit string) []byte {
		var b bytes.Buffer
		b.WriteString(head)
		for b.Len() < size {
			b.WriteString(unit)
		}
		return b.Bytes()
	}
	var fmtHead strings.Builder
	fmtHead.WriteString("<p>")
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&fmtHead, "<b id=%d>", i)
	}
	fmtHead.WriteString("</p>")
	return map[string][]byte{
		"deep-scope":   fill(strings.Repeat("<div>", 500), "</p>"),
		"button-scope": fill("<p><button>"+strings.Repeat("<div>", 500), "</p>"),
		"reconstruct":  fill(fmtHead.String(), "<div>x</div>"),
		"adoption":     fill("", `<a href="/x"><div>t</a></div>`),
		"table-links":  fill("<table>", `<tr><td><a href="/x">link text</a></td></tr>`),
		"foster":       fill("<table>", `text <b>b</b><a href="/x">l</a>`),
		"unclosed-a":   fill(`<a href="/x">`, "<p>Lorem ipsum dolor sit amet, <b>consectetur</b> adipiscing elit.</p>\n"),
	}
}

// BenchmarkHostile runs the extractor on hostilePages.
func BenchmarkHostile(b *testing.B) {
	pages := hostilePages()
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		page := pages[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Extract(bytes.NewReader(page), "text/html", "LohiSoftBot"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
