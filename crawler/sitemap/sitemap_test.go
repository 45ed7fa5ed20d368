package sitemap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/testutil/heap"
)

// readAll decodes a whole sitemap: its kind, entries and the error that
// ended it (nil at a clean end).
func readAll(d *Decoder) (Kind, []Entry, error) {
	var out []Entry
	for {
		e, err := d.Next()
		if err == io.EOF {
			return d.Kind(), out, nil
		}
		if err != nil {
			return d.Kind(), out, err
		}
		out = append(out, e)
	}
}

// gzipWriters are reused: a new gzip.Writer allocates about a megabyte,
// which would dominate the fuzz target.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func gz(s string) string {
	var b bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&b)
	io.WriteString(zw, s)
	zw.Close()
	return b.String()
}

// e is an entry with the default priority.
func e(loc string) Entry { return Entry{Loc: loc, Priority: DefaultPriority} }

func day(s string) time.Time { t, _ := time.Parse("2006-01-02", s); return t }

func TestDecode(t *testing.T) {
	const ns = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"`
	urlset := `<?xml version="1.0" encoding="UTF-8"?>
<urlset ` + ns + ` xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc> https://a.test/one </loc>
    <lastmod>2026-05-01</lastmod>
    <priority>0.8</priority>
    <image:image><image:loc>https://a.test/img.png</image:loc></image:image>
    <xhtml:link rel="alternate" hreflang="de" href="https://a.test/de/one"/>
  </url>
  <url><loc><![CDATA[https://a.test/two?a=1&b=2]]></loc><priority>1.5</priority></url>
  <url><loc>https://a.test/three?a=1&amp;b=2</loc><priority>NaN</priority><lastmod>yesterday</lastmod></url>
</urlset>`
	want := []Entry{
		{Loc: "https://a.test/one", Priority: 0.8, LastMod: day("2026-05-01")},
		e("https://a.test/two?a=1&b=2"),
		e("https://a.test/three?a=1&b=2"),
	}
	for _, c := range []struct {
		name string
		in   string
		kind Kind
		want []Entry
		err  string // "" for a clean end; else a substring of the error
	}{
		{"url set", urlset, URLSet, want, ""},
		{"gzip", gz(urlset), URLSet, want, ""},
		{"binary lines are no URLs", "\x00\x01\n\xff\xfe\n/ok\n", Text, []Entry{e(""), e(""), e("/ok")}, ""},
		{"no namespace, sloppy", "\ufeff\n <urlset><url><loc>/rel</loc></url><url><loc>a&b&amp;c</loc></url><url><loc>a&nbsp;</loc></url></urlset>", URLSet, []Entry{e("/rel"), e("a&b&c"), e("")}, ""},
		{"index", `<sitemapindex ` + ns + `><sitemap><loc>https://a.test/s1.xml</loc><lastmod>2026-01-02T03:04:05+02:00</lastmod></sitemap><sitemap><loc>https://a.test/s2.xml</loc></sitemap></sitemapindex>`, Index,
			[]Entry{{Loc: "https://a.test/s1.xml", Priority: DefaultPriority, LastMod: time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC)}, e("https://a.test/s2.xml")}, ""},
		{"url in an index and sitemap in a url set are not entries", `<sitemapindex><url><loc>x</loc></url></sitemapindex><!-- --><urlset><sitemap><loc>y</loc></sitemap></urlset>`, Index, nil, ""},
		{"elements of another namespace", `<urlset ` + ns + `><url><loc>a</loc><x:loc xmlns:x="urn:x">b</x:loc></url><x:url xmlns:x="urn:x"><loc>c</loc></x:url></urlset>`, URLSet, []Entry{e("a")}, ""},
		{"first loc counts", `<urlset><url><loc>a</loc><loc>b</loc></url></urlset>`, URLSet, []Entry{e("a")}, ""},
		{"empty loc is an entry", `<urlset><url></url><url><loc> </loc></url></urlset>`, URLSet, []Entry{e(""), e("")}, ""},
		{"loc over the kept length", `<urlset><url><loc>` + strings.Repeat("x", maxValue+1) + `</loc></url><url><loc>b</loc></url></urlset>`, URLSet, []Entry{e(""), e("b")}, ""},
		{"text", "https://a.test/1\r\n\n  https://a.test/2  \n\nhttps://a.test/3", Text, []Entry{e("https://a.test/1"), e("https://a.test/2"), e("https://a.test/3")}, ""},
		{"text, CR alone ends a line", "https://a.test/1\rhttps://a.test/2\r\n\r\rhttps://a.test/3\r", Text, []Entry{e("https://a.test/1"), e("https://a.test/2"), e("https://a.test/3")}, ""},
		{"text, gzip", gz("https://a.test/1\n"), Text, []Entry{e("https://a.test/1")}, ""},
		{"text line over the kept length", "a\n" + strings.Repeat("x", 3*maxValue) + "\nb\n", Text, []Entry{e("a"), e(""), e("b")}, ""},
		{"empty", "", Text, nil, ""},
		{"white space", " \n\t\r\n", Text, nil, ""},
		{"declared latin-1", `<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>/caf` + "\xe9" + `</loc></url></urlset>`, URLSet, []Entry{e("/café")}, ""},
		{"unknown encoding", `<?xml version="1.0" encoding="x-klingon"?><urlset><url><loc>/a</loc></url></urlset>`, Unknown, nil, "x-klingon"},
		{"HTML page", "<!DOCTYPE html><html><head><title>Not found</title></head><body><a href=/x>x</a></body></html>", Unknown, nil, "not a sitemap (root element <html>)"},
		{"RSS", `<?xml version="1.0"?><rss version="2.0"><channel><item><link>https://a.test/x</link></item></channel></rss>`, Unknown, nil, "not a sitemap (root element <rss>)"},
		{"comment only", "<!-- nothing -->", Unknown, nil, "not a sitemap (no root element)"},
		{"malformed after two", `<urlset><url><loc>a</loc></url><url><loc>b</loc></url><url><<loc>c</loc></url></urlset>`, URLSet, []Entry{e("a"), e("b")}, "XML syntax error"},
		{"cut off", `<urlset><url><loc>a</loc></url><url><loc>b`, URLSet, []Entry{e("a")}, "unexpected EOF"},
		{"entities are never expanded", `<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><urlset><url><loc>/&b;</loc></url></urlset>`, URLSet, []Entry{e("")}, ""},
		{"external entity is not fetched", `<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><urlset><url><loc>/&e;</loc><loc>/second</loc></url></urlset>`, URLSet, []Entry{e("")}, ""},
		{"token over MaxToken", `<urlset><url><loc>a</loc></url><url><loc>` + strings.Repeat("x", MaxToken) + `</loc></url></urlset>`, URLSet, []Entry{e("a")}, ErrTokenTooBig.Error()},
		{"attributes over MaxToken", `<urlset><url><loc>a</loc></url><url ` + strings.Repeat(`a="b" `, MaxToken/6+1) + `>`, URLSet, []Entry{e("a")}, ErrTokenTooBig.Error()},
		{"nested too deep", `<urlset><url><loc>a</loc></url>` + strings.Repeat("<url>", maxDepth), URLSet, []Entry{e("a")}, ErrTooDeep.Error()},
		{"corrupt gzip", "\x1f\x8bjunk", Unknown, nil, "corrupt gzip"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
				kind, got, err := readAll(NewDecoder(r))
				if kind != c.kind {
					t.Errorf("kind %v, want %v", kind, c.kind)
				}
				if fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("entries\n got  %v\n want %v", got, c.want)
				}
				switch {
				case c.err == "" && err != nil:
					t.Errorf("error %v", err)
				case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
					t.Errorf("error %v, want one with %q", err, c.err)
				}
			}
		})
	}
}

func TestLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("<urlset>")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, "<url><loc>/%d</loc></url>", i)
	}
	b.WriteString("</urlset>")
	kind, got, err := readAll(&Decoder{src: strings.NewReader(b.String()), MaxURLs: 3})
	if kind != URLSet || len(got) != 3 || !errors.Is(err, ErrTooManyURLs) {
		t.Errorf("MaxURLs 3: %v %v %v", kind, got, err)
	}
	_, got, err = readAll(&Decoder{src: strings.NewReader("/a\n/b\n/c\n/d\n"), MaxURLs: 3})
	if len(got) != 3 || !errors.Is(err, ErrTooManyURLs) {
		t.Errorf("MaxURLs 3, text: %v %v", got, err)
	}
	_, got, err = readAll(&Decoder{src: strings.NewReader(b.String()), MaxBytes: 60})
	if len(got) != 2 || !errors.Is(err, ErrTooLarge) {
		t.Errorf("MaxBytes 60: %v %v", got, err)
	}
	// The size limit is of the uncompressed sitemap; the text line cut by
	// it is not taken.
	_, got, err = readAll(&Decoder{src: strings.NewReader(gz("/aaaa\n/bbbb\n")), MaxBytes: 8})
	if fmt.Sprint(got) != fmt.Sprint([]Entry{e("/aaaa")}) || !errors.Is(err, ErrTooLarge) {
		t.Errorf("MaxBytes 8, gzip text: %v %v", got, err)
	}
	if _, got, err = readAll(&Decoder{src: strings.NewReader(b.String()), MaxBytes: int64(b.Len())}); len(got) != 10 || err != nil {
		t.Errorf("exactly MaxBytes: %d entries, %v", len(got), err)
	}
}

// generated streams a sitemap of n bytes without holding it: head, then
// repeats of unit, then tail.
type generated struct {
	head, unit, tail string
	n, read          int64
	pos              int64
}

func (g *generated) Read(p []byte) (int, error) {
	total := int64(len(g.head)) + g.n*int64(len(g.unit)) + int64(len(g.tail))
	if g.pos >= total {
		return 0, io.EOF
	}
	i := 0
	for i < len(p) && g.pos < total {
		var c byte
		switch body := g.pos - int64(len(g.head)); {
		case g.pos < int64(len(g.head)):
			c = g.head[g.pos]
		case body < g.n*int64(len(g.unit)):
			c = g.unit[body%int64(len(g.unit))]
		default:
			c = g.tail[body-g.n*int64(len(g.unit))]
		}
		p[i] = c
		i++
		g.pos++
	}
	g.read += int64(i)
	return i, nil
}

// Hostile sitemaps at the real limits: each stops where the protocol says,
// having read no more than it must, with the heap bounded.
func TestHostileSitemapsBounded(t *testing.T) {
	comment := "<!--" + strings.Repeat("z", 60<<10) + "-->"
	for _, c := range []struct {
		name    string
		src     func() (io.Reader, *generated)
		entries int
		err     error
	}{
		{"60,000 URLs", func() (io.Reader, *generated) {
			g := &generated{head: "<urlset>", unit: "<url><loc>https://a.test/p</loc><priority>0.5</priority></url>\n", n: 60000, tail: "</urlset>"}
			return g, g
		}, MaxURLs, ErrTooManyURLs},
		{"60 MiB of comments", func() (io.Reader, *generated) {
			g := &generated{head: "<urlset><url><loc>/a</loc></url>", unit: comment, n: 1024, tail: "</urlset>"}
			return g, g
		}, 1, ErrTooLarge},
		{"gzip bomb: 60 MiB in", func() (io.Reader, *generated) {
			g := &generated{head: "<urlset><url><loc>/a</loc></url>", unit: comment, n: 1024, tail: "</urlset>"}
			pr, pw := io.Pipe()
			go func() {
				zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
				_, err := io.Copy(zw, g)
				zw.Close()
				pw.CloseWithError(err)
			}()
			return pr, g
		}, 1, ErrTooLarge},
		{"one 2 MiB text token", func() (io.Reader, *generated) {
			g := &generated{head: "<urlset><url><loc>/a</loc></url><url><loc>", unit: "x", n: 2 << 20, tail: "</loc></url></urlset>"}
			return g, g
		}, 1, ErrTokenTooBig},
		{"2 MiB lines of text", func() (io.Reader, *generated) {
			g := &generated{head: "/a\n", unit: strings.Repeat("y", 2<<20) + "\n", n: 30, tail: "/b\n"}
			return g, g
		}, 25, ErrTooLarge}, // "/a", then the 2 MiB lines that end within 50 MiB
		{"a million open elements", func() (io.Reader, *generated) {
			g := &generated{head: "<urlset><url><loc>/a</loc></url>", unit: "<url>", n: 1 << 20}
			return g, g
		}, 1, ErrTooDeep},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, g := c.src()
			var n int
			var err error
			peak := heap.Peak(func() {
				d := NewDecoder(src)
				for {
					if _, err = d.Next(); err != nil {
						break
					}
					n++
				}
			})
			if n != c.entries || !errors.Is(err, c.err) {
				t.Errorf("%d entries, %v; want %d, %v", n, err, c.entries, c.err)
			}
			// Beyond the limit, at most a buffer's worth is read (the
			// gzip writer runs ahead by its own buffers).
			if g.read > MaxBytes+(1<<20) {
				t.Errorf("read %d MiB", g.read>>20)
			}
			if peak > 8<<20 {
				t.Errorf("heap grew by %d MiB", peak>>20)
			}
		})
	}
}

func TestParseLastMod(t *testing.T) {
	utc := func(y int, m time.Month, d, h, min, s int) time.Time {
		return time.Date(y, m, d, h, min, s, 0, time.UTC)
	}
	for in, want := range map[string]time.Time{
		"2026":                        utc(2026, 1, 1, 0, 0, 0),
		"2026-05":                     utc(2026, 5, 1, 0, 0, 0),
		"2026-05-07":                  utc(2026, 5, 7, 0, 0, 0),
		" 2026-05-07 ":                utc(2026, 5, 7, 0, 0, 0),
		"2026-05-07T10:20+01:00":      utc(2026, 5, 7, 9, 20, 0),
		"2026-05-07T10:20:30Z":        utc(2026, 5, 7, 10, 20, 30),
		"2026-05-07T10:20:30.5-02:00": time.Date(2026, 5, 7, 12, 20, 30, 5e8, time.UTC),
		// A time without its zone is no moment: which entry is newer
		// would be made up.
		"2026-05-07T10:20:30":           {},
		"2026-05-07 10:20:30":           {},
		"2026-05-07T10:20":              {},
		"2026-05-07t10:20:30z":          {},
		"2026-5-7":                      {},
		"+2026-05-07":                   {},
		"2026-05-07T10:20:30+0100":      {},
		"2026-05-07T24:00:00Z":          {},
		"":                              {},
		"yesterday":                     {},
		"07/05/2026":                    {},
		"2026-13-01":                    {},
		"Thu, 07 May 2026 10:20:30 GMT": {},
	} {
		if got := ParseLastMod(in); !got.Equal(want) {
			t.Errorf("ParseLastMod(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestRanking(t *testing.T) {
	at := func(loc string, p float64, mod string) Entry {
		m, _ := time.Parse("2006-01-02", mod)
		return Entry{Loc: loc, Priority: p, LastMod: m}
	}
	for _, c := range []struct {
		name string
		n    int
		add  []Entry
		want []string
	}{
		{"priority first", 10, []Entry{at("a", 0.1, ""), at("b", 0.9, ""), at("c", 0.5, "")}, []string{"b", "c", "a"}},
		{"then newer lastmod, none oldest", 10, []Entry{at("none", 0.5, ""), at("old", 0.5, "2020-01-01"), at("new", 0.5, "2026-01-01"), at("top", 0.6, "1999-01-01")}, []string{"top", "new", "old", "none"}},
		{"then the order added", 10, []Entry{at("1", 0.5, "2026-01-01"), at("2", 0.5, "2026-01-01"), at("3", 0.5, "2026-01-01")}, []string{"1", "2", "3"}},
		{"the best n", 2, []Entry{at("a", 0.1, ""), at("b", 0.2, ""), at("c", 0.3, ""), at("d", 0.0, "")}, []string{"c", "b"}},
		{"listed twice keeps its better place", 3, []Entry{at("a", 0.5, ""), at("b", 0.6, ""), at("a", 0.9, ""), at("b", 0.1, "")}, []string{"a", "b"}},
		{"better place after being pushed out", 1, []Entry{at("a", 0.5, ""), at("b", 0.6, ""), at("a", 0.9, "")}, []string{"a"}},
		{"none kept", 0, []Entry{at("a", 1, "")}, nil},
	} {
		r := NewRanking(c.n)
		for _, e := range c.add {
			r.Add(e)
		}
		var got []string
		for _, e := range r.Entries() {
			got = append(got, e.Loc)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A <priority> is an xsd:decimal from 0.0 to 1.0 (the protocol's schema);
// anything else, which strconv.ParseFloat would read, leaves the default,
// so it cannot move an entry up the budget.
func TestPriority(t *testing.T) {
	for in, want := range map[string]float64{
		"0.8": 0.8, " 1.0 ": 1, "1": 1, "0": 0, ".5": 0.5, "1.": 1, "+0.3": 0.3, "-0.0": 0, "0.30000": 0.3,
		"1e-1": DefaultPriority, "5E-1": DefaultPriority, "0x1p-1": DefaultPriority, "Inf": DefaultPriority,
		"NaN": DefaultPriority, "1.5": DefaultPriority, "-0.1": DefaultPriority, "0,8": DefaultPriority,
		"0.8abc": DefaultPriority, "": DefaultPriority, "high": DefaultPriority, "0_5": DefaultPriority,
	} {
		_, got, err := readAll(NewDecoder(strings.NewReader("<urlset><url><loc>a</loc><priority>" + in + "</priority></url></urlset>")))
		if err != nil || len(got) != 1 || got[0].Priority != want {
			t.Errorf("priority %q: %v %v, want %v", in, got, err, want)
		}
	}
}

// Named takes only a URL written in full: the rule behind every URL the
// crawler takes from a sitemap.
func TestNamed(t *testing.T) {
	for in, want := range map[string]string{
		"https://a.test/x":               "https://a.test/x",
		"  HTTP://A.test/x?utm_source=y": "http://a.test/x",
		"http://a.test/a b#frag":         "http://a.test/a%20b",
		"/relative":                      "",
		"//a.test/x":                     "",
		"a.test/x":                       "",
		"http:/a.test/x":                 "",
		"http:a.test":                    "",
		"http:\\\\a.test\\x":             "",
		"ftp://a.test/x":                 "",
		"javascript:alert(1)":            "",
		"User-agent: *":                  "",
		"{\"loc\": \"http://a.test/\"}":  "",
		"<loc>http://a.test/</loc>":      "",
		"http://":                        "",
		"http://user:pw@a.test/":         "",
		"":                               "",
	} {
		got := ""
		if u, ok := Named(in); ok {
			got = u.String()
		}
		if got != want {
			t.Errorf("Named(%q) = %q, want %q", in, got, want)
		}
	}
}
