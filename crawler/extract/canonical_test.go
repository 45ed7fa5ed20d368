package extract

import (
	"strings"
	"testing"
)

func TestCanonicalLink(t *testing.T) {
	for _, c := range []struct{ name, page, want string }{
		{"in the head", `<!doctype html><html><head><link rel="canonical" href=" /a "><title>T</title></head><body></body></html>`, "/a"},
		{"rel list, any case", `<link rel="alternate CANONICAL" href="/a">`, "/a"},
		{"implied head", `<link rel=canonical href=/a><p>text`, "/a"},
		{"after the head, before the body (moved into the head)", `<html><head></head><link rel=canonical href=/a><body>`, "/a"},
		{"in the body", `<html><head><title>T</title></head><body><p>x</p><link rel=canonical href=/a></body></html>`, ""},
		{"after body text that closed the head", `<head><title>T</title>text<link rel=canonical href=/a>`, ""},
		{"in a template", `<head><template><link rel=canonical href=/a></template></head>`, ""},
		{"in a noscript (raw text)", `<head><noscript><link rel=canonical href=/a></noscript></head>`, ""},
		{"in svg", `<body><svg><link rel=canonical href=/a /></svg>`, ""},
		{"no href", `<link rel=canonical>`, ""},
		{"other rel", `<link rel=stylesheet href=/a.css>`, ""},
		{"the same twice", `<link rel=canonical href=/a><link rel=canonical href=/a>`, "/a"},
		{"two different", `<link rel=canonical href=/a><link rel=canonical href=/b>`, ""},
		{"two different, then the first again", `<link rel=canonical href=/a><link rel=canonical href=/b><link rel=canonical href=/a>`, ""},
	} {
		p, err := Extract(strings.NewReader(c.page), "text/html", "LohiSoftBot")
		if err != nil {
			t.Fatal(err)
		}
		if p.Canonical != c.want {
			t.Errorf("%s: canonical %q, want %q", c.name, p.Canonical, c.want)
		}
	}
}

func TestLinkCanonical(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []string
		want   string
	}{
		{"plain", []string{`<https://a.test/x>; rel="canonical"`}, "https://a.test/x"},
		{"token rel", []string{`</x>; rel=canonical`}, "/x"},
		{"among others", []string{`</s.css>; rel=preload; as=style, </x>; rel="canonical", </y>; rel=alternate; hreflang=de`}, "/x"},
		{"rel list", []string{`</x>; rel="alternate canonical"`}, "/x"},
		{"case", []string{`</x>; REL="Canonical"`}, "/x"},
		{"comma in the URI and in a quoted parameter", []string{`</a,b>; title="x, y; z"; rel=canonical`}, "/a,b"},
		{"escaped quote", []string{`</x>; title="a \" ; rel=canonical"; rel=next`}, ""},
		{"first rel counts", []string{`</x>; rel=next; rel=canonical`}, ""},
		{"two values", []string{`</x>; rel=next`, `</y>; rel=canonical`}, "/y"},
		{"the same twice", []string{`</x>; rel=canonical`, `</x>; rel=canonical`}, "/x"},
		{"two different", []string{`</x>; rel=canonical, </y>; rel=canonical`}, ""},
		{"broken after a good one", []string{`</x>; rel=canonical, garbage`}, "/x"},
		{"broken", []string{`<x; rel=canonical`, `x; rel=canonical`, ``}, ""},
	} {
		if got := LinkCanonical(c.values); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
