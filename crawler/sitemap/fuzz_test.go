package sitemap

import (
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzDecoder checks, for any bytes: no panic; at most MaxURLs entries;
// values within their bounds; the same entries and the same error whether
// the bytes arrive at once or one at a time; and the same entries when the
// sitemap is gzip-compressed.
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{
		`<urlset><url><loc>/a</loc><priority>0.3</priority><lastmod>2026-01-02</lastmod></url></urlset>`,
		`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>/s.xml</loc></sitemap></sitemapindex>`,
		"https://a.test/1\nhttps://a.test/2\r\n",
		`<?xml version="1.0" encoding="windows-1252"?><urlset><url><loc>/caf` + "\xe9</loc></url></urlset>",
		`<!DOCTYPE x [<!ENTITY a "b">]><urlset><url><loc>&a;&amp;&lt;<![CDATA[x]]></loc></url></urlset>`,
		"<html><body>not a sitemap</body></html>",
		"<urlset><url><loc>a</url></loc><url><<",
		"\ufeff  <urlset/>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		read := func(r io.Reader) ([]Entry, error) {
			d := &Decoder{src: r, MaxURLs: 20}
			var out []Entry
			for {
				e, err := d.Next()
				if err != nil {
					if err == io.EOF {
						err = nil
					}
					return out, err
				}
				if len(e.Loc) > maxValue || math.IsNaN(e.Priority) || e.Priority < 0 || e.Priority > 1 {
					t.Fatalf("entry out of bounds: %d-byte loc, priority %v", len(e.Loc), e.Priority)
				}
				out = append(out, e)
			}
		}
		whole, err := read(strings.NewReader(string(in)))
		if len(whole) > 20 {
			t.Fatalf("%d entries past MaxURLs", len(whole))
		}
		bytewise, err2 := read(iotest.OneByteReader(strings.NewReader(string(in))))
		if fmt.Sprint(whole) != fmt.Sprint(bytewise) || fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("arrival changes the result: %v %v / %v %v", whole, err, bytewise, err2)
		}
		if len(in) >= 2 && in[0] == 0x1f && in[1] == 0x8b {
			return
		}
		zipped, _ := read(strings.NewReader(gz(string(in))))
		if fmt.Sprint(whole) != fmt.Sprint(zipped) {
			t.Fatalf("gzip changes the entries: %v / %v", whole, zipped)
		}
	})
}
