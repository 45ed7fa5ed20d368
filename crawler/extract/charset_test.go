package extract

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

func titleOf(t *testing.T, doc []byte, ct string) string {
	t.Helper()
	p, err := Extract(bytes.NewReader(doc), ct, "LohiSoftBot")
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	return p.Title
}

// encode encodes s with e, failing the test if a character has no code in e
// (charmap encoders report those instead of escaping them).
func encode(t *testing.T, e encoding.Encoding, s string) []byte {
	t.Helper()
	b, err := e.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encoding %q: %v", s, err)
	}
	return b
}

// The failing case of issue 8, item 4: a windows-1251 page that declares its
// encoding only in a <meta charset>, fetched without a Content-Type header
// (""), or with one that has no charset.
func TestWindows1251TitleWithoutHeader(t *testing.T) {
	const title = "LohiSoftBot, уеб роботът на LohiSoft s.r.o."
	doc := append([]byte(`<!doctype html><html lang="bg"><head><meta charset="windows-1251"><title>`),
		encode(t, charmap.Windows1251, title)...)
	doc = append(doc, "</title></head><body></body></html>"...)
	for _, ct := range []string{"", "text/html"} {
		if got := titleOf(t, doc, ct); got != title {
			t.Errorf("Content-Type %q: title %q, want %q", ct, got, title)
		}
	}
	// What the engine used to pass for a missing header was
	// http.DetectContentType's guess, "text/html; charset=utf-8". A
	// charset in the header rightly beats the meta (the server's word comes
	// first), so the guess turned the Cyrillic into U+FFFD, which the
	// cleaning drops: the engine must pass the header as sent.
	if got := titleOf(t, doc, "text/html; charset=utf-8"); got != "LohiSoftBot, LohiSoft s.r.o." {
		t.Errorf("with a (wrong) utf-8 header the header should win: %q", got)
	}
}

// An undeclared UTF-8 page whose first 1,024 bytes are ASCII: the bytes
// that follow decide (x/net/html/charset looked only at the first 1,024
// and chose windows-1252).
func TestUndeclaredUTF8AfterLongHead(t *testing.T) {
	const title = "LohiSoftBot, уеб роботът на LohiSoft s.r.o."
	doc := []byte(`<!doctype html><html><head><script>` + strings.Repeat("var a = 1;\n", 150) +
		`</script><title>` + title + `</title></head></html>`)
	for _, ct := range []string{"", "text/html"} {
		if got := titleOf(t, doc, ct); got != title {
			t.Errorf("Content-Type %q: title %q, want %q", ct, got, title)
		}
	}
}

// A legacy page of each language of the bot page, in one encoding, with a
// title that uses the letters that encoding is there for.
type sample struct {
	name  string // for the subtest
	label string // as declared
	enc   encoding.Encoding
	title string
}

// Titles from the bot page (index/botpage/text.go), with the characters of
// each language and encoding the tests are about: é è ë à ò € and curly
// quotes in western European, č ľ ž ô ä ň in Slovak, Cyrillic in
// Bulgarian. ISO-8859-1/-2/-5 and KOI8-R have no curly quotes, dashes or
// euro sign, so their titles go without.
var legacySamples = []sample{
	{"en/windows-1252", "windows-1252", charmap.Windows1252,
		"“LohiSoftBot”, the web crawler of LohiSoft s.r.o. – ‘What it keeps’: €0, naïve café résumé à la carte…"},
	{"en/iso-8859-1", "iso-8859-1", charmap.ISO8859_1,
		"LohiSoftBot, the web crawler of LohiSoft s.r.o. (naïve café résumé à la carte)"},
	{"en/iso-8859-15", "iso-8859-15", charmap.ISO8859_15,
		"LohiSoftBot, the web crawler of LohiSoft s.r.o. (€0, naïve café résumé)"},

	{"nl/windows-1252", "windows-1252", charmap.Windows1252,
		"„LohiSoftBot”, de webcrawler van LohiSoft s.r.o. – hij stuurt één verzoek tegelijk; ideeën? €0"},
	{"nl/iso-8859-1", "iso-8859-1", charmap.ISO8859_1,
		"LohiSoftBot, de webcrawler van LohiSoft s.r.o.: hij stuurt één verzoek tegelijk; ideeën, café"},
	{"nl/iso-8859-15", "iso-8859-15", charmap.ISO8859_15,
		"LohiSoftBot, de webcrawler van LohiSoft s.r.o.: één verzoek tegelijk; ideeën (€0)"},

	{"it/windows-1252", "windows-1252", charmap.Windows1252,
		"“LohiSoftBot”, il crawler web di LohiSoft s.r.o. – È la verifica più affidabile, perciò… perché? €0"},
	{"it/iso-8859-1", "iso-8859-1", charmap.ISO8859_1,
		"LohiSoftBot, il crawler web di LohiSoft s.r.o.: È la verifica più affidabile, perciò, perché, già"},
	{"it/iso-8859-15", "iso-8859-15", charmap.ISO8859_15,
		"LohiSoftBot, il crawler web di LohiSoft s.r.o.: la forma più vecchia è in via di sostituzione (€0)"},

	{"sk/windows-1250", "windows-1250", charmap.Windows1250,
		"„LohiSoftBot“, webový prehľadávač spoločnosti LohiSoft s.r.o. – môžete ho zablokovať; odkazuje späť, kôň, žiadne"},
	{"sk/iso-8859-2", "iso-8859-2", charmap.ISO8859_2,
		"LohiSoftBot, webový prehľadávač spoločnosti LohiSoft s.r.o.: môžete ho zablokovať; odkazuje späť, kôň, žiadne"},

	{"bg/windows-1251", "windows-1251", charmap.Windows1251,
		"„LohiSoftBot“, уеб роботът на LohiSoft s.r.o. – Никога не заобикаля защита срещу ботове; заявки, юли, €0"},
	{"bg/iso-8859-5", "iso-8859-5", charmap.ISO8859_5,
		"LohiSoftBot, уеб роботът на LohiSoft s.r.o.: Никога не заобикаля защита срещу ботове; заявки, юли"},
	{"bg/koi8-r", "koi8-r", charmap.KOI8R,
		"LohiSoftBot, уеб роботът на LohiSoft s.r.o.: Никога не заобикаля защита срещу ботове; заявки, юли"},
}

// utf8Samples are the richest title of each language, in UTF-8.
func utf8Samples() []sample {
	var out []sample
	for _, s := range legacySamples {
		if strings.HasPrefix(s.label, "windows-") {
			lang, _, _ := strings.Cut(s.name, "/")
			out = append(out, sample{lang + "/utf-8", "utf-8", unicode.UTF8, s.title})
		}
	}
	return out
}

// wrongLabel is a label other than s's that would decode its title
// differently.
func wrongLabel(s sample) string {
	if s.label == "koi8-r" {
		return "windows-1250"
	}
	return "koi8-u"
}

func page(t *testing.T, s sample, head string) []byte {
	t.Helper()
	doc := []byte(`<!doctype html><html><head>` + head + `<title>`)
	doc = append(doc, encode(t, s.enc, s.title)...)
	return append(doc, "</title></head><body><p>x</p></body></html>"...)
}

// TestEncodingOrder pins the order of the sources of the encoding (see
// charset.go and docs/crawler.md, "Character encodings") for every
// language of the bot page in its common encodings.
func TestEncodingOrder(t *testing.T) {
	samples := append(append([]sample{}, legacySamples...), utf8Samples()...)
	padding := "<!-- " + strings.Repeat("x", prescanLen) + " -->"
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			wrong := wrongLabel(s)
			// The test is only worth something if the wrong label reads
			// the title differently.
			if we, _ := lookupLabel(wrong); titleOf(t, page(t, s, `<meta charset="`+wrong+`">`), "") == s.title || we == nil {
				t.Fatalf("%s does not tell %s apart", wrong, s.label)
			}
			cases := []struct {
				name, head, ct string
			}{
				{"meta charset, no header", `<meta charset="` + s.label + `">`, ""},
				{"meta charset, header without charset", `<meta charset="` + s.label + `">`, "text/html"},
				{"meta http-equiv, no header",
					`<meta http-equiv="Content-Type" content="text/html; charset=` + s.label + `">`, ""},
				{"header overrides meta", `<meta charset="` + wrong + `">`, "text/html; charset=" + s.label},
				{"unknown header label ignored", `<meta charset="` + s.label + `">`, "text/html; charset=x-no-such-encoding"},
				{"unknown meta label ignored", `<meta charset="x-no-such-encoding"><meta charset="` + s.label + `">`, ""},
				{"label case and spaces", `<meta charset=" ` + strings.ToUpper(s.label) + ` ">`, ""},
			}
			for _, c := range cases {
				if got := titleOf(t, page(t, s, c.head), c.ct); got != s.title {
					t.Errorf("%s: title %q, want %q", c.name, got, s.title)
				}
			}

			// A meta after the first 1,024 bytes is not seen: the bytes
			// are guessed, UTF-8 when valid, else windows-1252.
			doc := page(t, s, padding+`<meta charset="`+s.label+`">`)
			want := s.title
			if s.label != "utf-8" {
				d, err := charmap.Windows1252.NewDecoder().Bytes(encode(t, s.enc, s.title))
				if err != nil {
					t.Fatal(err)
				}
				want = clean(string(d))
			}
			if got := titleOf(t, doc, ""); got != want {
				t.Errorf("meta after 1,024 bytes: title %q, want the guess %q", got, want)
			}
			if s.label != "utf-8" && s.label != "windows-1252" && s.label != "iso-8859-1" && want == s.title {
				t.Errorf("meta after 1,024 bytes: the guess should not read %s right", s.label)
			}

			// A BOM beats both the header and the meta.
			if s.label == "utf-8" {
				doc := append([]byte{0xEF, 0xBB, 0xBF}, page(t, s, `<meta charset="`+wrong+`">`)...)
				if got := titleOf(t, doc, "text/html; charset="+wrong); got != s.title {
					t.Errorf("UTF-8 BOM: title %q, want %q", got, s.title)
				}
			}
		})
	}
}

// TestUTF16 covers pages in UTF-16, which only a BOM, the header or a
// UTF-16 XML declaration can announce: a UTF-16 page cannot be prescanned
// as ASCII.
func TestUTF16(t *testing.T) {
	for _, s := range utf8Samples() {
		lang, _, _ := strings.Cut(s.name, "/")
		for _, u := range []struct {
			name  string
			enc   encoding.Encoding
			bom   []byte
			label string
		}{
			{"utf-16le", unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), []byte{0xFF, 0xFE}, "utf-16le"},
			{"utf-16be", unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), []byte{0xFE, 0xFF}, "utf-16be"},
		} {
			t.Run(lang+"/"+u.name, func(t *testing.T) {
				body := encode(t, u.enc, `<!doctype html><html><head><meta charset="windows-1251"><title>`+s.title+`</title></head></html>`)
				withBOM := append(append([]byte{}, u.bom...), body...)
				for _, ct := range []string{"", "text/html", "text/html; charset=windows-1251"} {
					if got := titleOf(t, withBOM, ct); got != s.title {
						t.Errorf("BOM, Content-Type %q: title %q, want %q", ct, got, s.title)
					}
				}
				if got := titleOf(t, body, "text/html; charset="+u.label); got != s.title {
					t.Errorf("no BOM, charset in header: title %q, want %q", got, s.title)
				}
				xml := encode(t, u.enc, `<?xml version="1.0"?><html><head><title>`+s.title+`</title></head></html>`)
				if got := titleOf(t, xml, ""); got != s.title {
					t.Errorf("no BOM, UTF-16 XML declaration: title %q, want %q", got, s.title)
				}
			})
		}
	}
}

func TestLabels(t *testing.T) {
	const title = "„LohiSoftBot“, уеб роботът на LohiSoft s.r.o."
	b := encode(t, charmap.Windows1251, title)
	for _, label := range []string{"windows-1251", "cp1251", "x-cp1251", "WINDOWS-1251", "\twindows-1251 "} {
		doc := append([]byte(`<meta charset="`+label+`"><title>`), b...)
		if got := titleOf(t, doc, ""); got != title {
			t.Errorf("meta %q: %q", label, got)
		}
		if got := titleOf(t, append([]byte("<title>"), b...), `text/html; charset="`+label+`"`); got != title {
			t.Errorf("header %q: %q", label, got)
		}
	}
	// iso-8859-1 and latin1 are windows-1252 in the Encoding Standard: 0x93
	// and 0x94 are curly quotes.
	for _, label := range []string{"iso-8859-1", "latin1", "l1", "us-ascii", "ascii"} {
		doc := []byte(`<meta charset="` + label + "\"><title>caf\xe9 \x93q\x94</title>")
		if got := titleOf(t, doc, ""); got != "café “q”" {
			t.Errorf("meta %q: %q", label, got)
		}
	}
}

func TestDetermineEncoding(t *testing.T) {
	long := strings.Repeat(" ", prescanLen-10)
	for _, c := range []struct {
		name, head, ct string
		want           string // encoding name, "" for none
		bom            int
	}{
		{"nothing", "", "", "", 0},
		{"plain page", "<html><head><title>x</title>", "", "", 0},
		{"UTF-8 BOM beats header and meta", "\xEF\xBB\xBF<meta charset=windows-1251>", "text/html; charset=windows-1250", "utf-8", 3},
		{"UTF-16BE BOM", "\xFE\xFF\x00<", "text/html; charset=windows-1250", "utf-16be", 2},
		{"UTF-16LE BOM", "\xFF\xFE<\x00", "", "utf-16le", 2},
		{"header beats meta", "<meta charset=iso-8859-2>", "text/html; charset=windows-1251", "windows-1251", 0},
		{"unknown header label", "<meta charset=iso-8859-2>", "text/html; charset=bogus", "iso-8859-2", 0},
		{"header replacement label", "", "text/html; charset=iso-2022-kr", "replacement", 0},
		{"header name 'replacement' is no label", "", "text/html; charset=replacement", "", 0},
		{"header x-user-defined", "", "text/html; charset=x-user-defined", "x-user-defined", 0},
		{"header utf-16 stays utf-16", "", "text/html; charset=utf-16", "utf-16le", 0},
		{"meta x-user-defined is windows-1252", "<meta charset=x-user-defined>", "", "windows-1252", 0},
		{"meta utf-16 is utf-8", `<meta charset="utf-16">`, "", "utf-8", 0},
		{"meta UTF-16BE is utf-8", `<meta charset="UTF-16BE">`, "", "utf-8", 0},
		{"meta 'replacement' is no label", `<meta charset="replacement"><meta charset=koi8-r>`, "", "koi8-r", 0},
		{"meta replacement label", `<meta charset="csiso2022kr">`, "", "replacement", 0},
		{"content without pragma", `<meta content="text/html; charset=windows-1251">`, "", "", 0},
		{"pragma other than content-type", `<meta http-equiv="refresh" content="0; charset=windows-1251">`, "", "", 0},
		{"pragma after content, upper case", `<META CONTENT="text/html; charset=windows-1251" HTTP-EQUIV="CONTENT-TYPE">`, "", "windows-1251", 0},
		{"single-quoted in content", `<meta http-equiv=content-type content="text/html; charset='koi8-r'">`, "", "koi8-r", 0},
		{"unmatched quote in content", `<meta http-equiv=content-type content="text/html; charset='koi8-r">`, "", "", 0},
		{"charset word without '='", `<meta http-equiv=content-type content="charsetx; charset = koi8-r;x">`, "", "koi8-r", 0},
		{"charset attribute beats content", `<meta http-equiv=content-type content="charset=koi8-r" charset=iso-8859-2>`, "", "iso-8859-2", 0},
		{"unknown charset attribute", `<meta http-equiv=content-type content="charset=koi8-r" charset=bogus><meta charset=iso-8859-5>`, "", "iso-8859-5", 0},
		{"repeated attribute: first counts", `<meta charset=koi8-r charset=iso-8859-2>`, "", "koi8-r", 0},
		{"unquoted, upper case", `<META CHARSET=KOI8-R>`, "", "koi8-r", 0},
		{"slash after meta", `<meta/charset=koi8-r>`, "", "koi8-r", 0},
		{"spaces around '='", "<meta charset \n= \t'koi8-r'>", "", "koi8-r", 0},
		{"not a meta", `<metadata charset=koi8-r>`, "", "", 0},
		{"in a comment", `<!-- <meta charset=koi8-r> --><meta charset=iso-8859-2>`, "", "iso-8859-2", 0},
		{"shortest comment", `<!--><meta charset=koi8-r>`, "", "koi8-r", 0},
		{"unclosed comment", `<!-- <meta charset=koi8-r>`, "", "", 0},
		{"in an attribute value", `<div title='<meta charset=koi8-r>'><meta charset=iso-8859-2>`, "", "iso-8859-2", 0},
		{"after an end tag and a doctype", `<!DOCTYPE html></x a="<meta charset=koi8-r>"><?pi?><meta charset=iso-8859-2>`, "", "iso-8859-2", 0},
		// The prescan does not know <script>: a meta in it counts, as in
		// browsers.
		{"in a script", `<script>document.write('<meta charset="koi8-r">')</script>`, "", "koi8-r", 0},
		{"XML declaration", `<?xml version="1.0" encoding="windows-1251"?><html>`, "", "windows-1251", 0},
		{"XML declaration, single quotes", `<?xml version='1.0' encoding = 'koi8-r'?>`, "", "koi8-r", 0},
		{"XML declaration utf-16 is utf-8", `<?xml version="1.0" encoding="utf-16"?>`, "", "utf-8", 0},
		{"meta beats XML declaration", `<?xml version="1.0" encoding="koi8-r"?><meta charset=iso-8859-2>`, "", "iso-8859-2", 0},
		{"UTF-16LE XML declaration", "<\x00?\x00x\x00m\x00l\x00", "", "utf-16le", 0},
		{"UTF-16BE XML declaration", "\x00<\x00?\x00x\x00m\x00l", "", "utf-16be", 0},
		{"meta across byte 1,024", long + `<meta charset=koi8-r>`, "", "", 0},
		{"meta ending at byte 1,024", long[:prescanLen-len(`<meta charset=koi8-r>`)] + `<meta charset=koi8-r>`, "", "koi8-r", 0},
	} {
		e, name, bom := determineEncoding([]byte(c.head), c.ct)
		if name != c.want || bom != c.bom || (e == nil) != (c.want == "") {
			t.Errorf("%s: got %q (bom %d, %v), want %q (bom %d)", c.name, name, bom, e, c.want, c.bom)
		}
	}
}

func TestHeaderCharset(t *testing.T) {
	for _, c := range []struct {
		ct, want string
		ok       bool
	}{
		{"", "", false},
		{"text/html", "", false},
		{"text/html; charset=windows-1251", "windows-1251", true},
		{`text/html;charset="windows-1251"`, "windows-1251", true},
		{`text/html; charset="win\dows-1251"`, "windows-1251", true},
		{"Text/HTML; CHARSET=KOI8-R", "KOI8-R", true},
		{"text/html; charset=windows-1251; charset=utf-8", "windows-1251", true},
		{"text/html; foo; charset=windows-1251", "windows-1251", true},
		{"text/html;; charset=windows-1251;", "windows-1251", true},
		{"text/html; charset=windows-1251 ", "windows-1251", true},
		{"text/html; charset=", "", false},
		{"text/html; charset=;charset=koi8-r", "koi8-r", true},
		{"text/html; charset = windows-1251", "", false},
		{"text/html charset=windows-1251", "", false},
		{"charset=windows-1251", "", false},
		{"/html; charset=windows-1251", "", false},
		{"text/html; charset=windows-1251, text/html", "windows-1251", true},
		{"text/html; charset=windows-1250, text/html; charset=windows-1251", "windows-1251", true},
		{"text/html; charset=windows-1251, text/plain", "", false},
		{"text/html; charset=windows-1251, */*", "windows-1251", true},
		{"text/html; charset=windows-1251, bogus", "windows-1251", true},
		{`text/html; charset="a,b"`, "a,b", true},
	} {
		got, ok := headerCharset(c.ct)
		if got != c.want || ok != c.ok {
			t.Errorf("%q: got %q %v, want %q %v", c.ct, got, ok, c.want, c.ok)
		}
	}
}

// TestGuess covers step 4, for pages that declare nothing.
func TestGuess(t *testing.T) {
	ascii := "<html><head><title>"
	for _, c := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"ASCII only", []byte(ascii + "plain</title>"), "plain"},
		{"UTF-8", []byte(ascii + "één € ľ ж</title>"), "één € ľ ж"},
		{"windows-1252", []byte(ascii + "\xe9\xe9n \x80 \x93q\x94</title>"), "één € “q”"},
		{"UTF-8 that turns invalid after the window", append([]byte(ascii+"ж"+strings.Repeat("a", guessLen)+"\xe9"), "</title>"...),
			"ж" + strings.Repeat("a", MaxTextLen-2)},
		{"windows-1252 at the very end", []byte(ascii + "caf\xe9"), "café"},
		{"UTF-8 cut at the very end", []byte(ascii + "caf\xc3"), "cafÃ"},
	} {
		if got := titleOf(t, c.doc, ""); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// A sequence cut by the end of the look-ahead is not held against
	// UTF-8, unless it is the end of the input.
	if !looksUTF8([]byte("ж\xd0"), false) || looksUTF8([]byte("ж\xd0"), true) || looksUTF8([]byte("\xe9t"), false) {
		t.Error("looksUTF8")
	}
}

func readAll(t *testing.T, r io.Reader, ct string) []byte {
	t.Helper()
	rd, err := decodeHTML(r, ct)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeStreams checks that the decoding reader reads the same however
// the input arrives, behaves as an io.Reader should, and passes on errors.
func TestDecodeStreams(t *testing.T) {
	long := strings.Repeat("<p>ascii text</p>\n", 400)
	docs := []struct {
		doc, ct, want string
	}{
		{"", "", ""},
		{"<p>x", "", "<p>x"},
		{long + "<p>ж</p>" + long, "", long + "<p>ж</p>" + long},
		{long + "<p>\xe9</p>" + long, "", long + "<p>é</p>" + long},
		{"<p>\xe9</p>" + long, "text/html; charset=iso-8859-1", "<p>é</p>" + long},
		{"\xef\xbb\xbf<p>ж</p>", "", "<p>ж</p>"},
		{"<p>\xff</p>", "text/html; charset=utf-8", "<p>\uFFFD</p>"},
	}
	for i, d := range docs {
		for _, wrap := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.HalfReader,
			iotest.DataErrReader,
		} {
			if got := readAll(t, wrap(strings.NewReader(d.doc)), d.ct); string(got) != d.want {
				t.Errorf("doc %d: got %.80q…, want %.80q…", i, got, d.want)
			}
		}
		rd, err := decodeHTML(strings.NewReader(d.doc), d.ct)
		if err != nil {
			t.Fatal(err)
		}
		if err := iotest.TestReader(rd, []byte(d.want)); err != nil {
			t.Errorf("doc %d: %v", i, err)
		}
	}

	boom := errors.New("boom")
	if _, err := decodeHTML(iotest.ErrReader(boom), ""); err != boom {
		t.Errorf("error in the first bytes: %v", err)
	}
	for _, ct := range []string{"", "text/html; charset=windows-1251"} {
		rd, err := decodeHTML(io.MultiReader(strings.NewReader(long+"\xe9"), iotest.ErrReader(boom)), ct)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(rd); err != boom {
			t.Errorf("Content-Type %q: error after the first bytes: %v", ct, err)
		}
	}

	p, err := Extract(strings.NewReader(""), "", "")
	if err != nil || p.Title != "" || p.H1 == nil {
		t.Errorf("empty page: %+v %v", p, err)
	}
}

// FuzzDecodeHTML: the decoded text is valid UTF-8 and does not depend on how
// the bytes arrive.
func FuzzDecodeHTML(f *testing.F) {
	f.Add([]byte("<meta charset=windows-1251><title>\xcf\xf0</title>"), "")
	f.Add([]byte("<title>caf\xe9</title>"), "text/html")
	f.Add([]byte("<title>кот</title>"), "")
	f.Add([]byte("\xff\xfe<\x00p\x00"), "")
	f.Add([]byte(`<meta http-equiv="Content-Type" content="text/html; charset='koi8-r'">x`), `text/html; charset="bogus"`)
	f.Add([]byte("<?xml version='1.0' encoding='utf-16'?><p>\xc3"), "text/html, text/html")
	f.Fuzz(func(t *testing.T, doc []byte, ct string) {
		whole := readAll(t, bytes.NewReader(doc), ct)
		if !utf8.Valid(whole) {
			t.Fatalf("invalid UTF-8 out: %q", whole)
		}
		if bytewise := readAll(t, iotest.OneByteReader(bytes.NewReader(doc)), ct); !bytes.Equal(whole, bytewise) {
			t.Fatalf("byte by byte %q, whole %q", bytewise, whole)
		}
	})
}
