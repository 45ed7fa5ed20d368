package extract

import (
	"bytes"
	"strings"
	"testing"
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
