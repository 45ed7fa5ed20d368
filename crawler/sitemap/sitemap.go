// Package sitemap reads the sitemaps a site owner writes to say which pages
// matter (the sitemaps.org protocol 0.9: XML url sets and sitemap indexes,
// plain text lists of URLs, either of them gzip-compressed), and ranks the
// URLs they list in the order the crawler spends its budget on them.
//
// A sitemap is read as a stream: an entry at a time, each token of the XML
// at most MaxToken bytes, the document at most MaxBytes uncompressed and
// MaxURLs entries (the protocol's limits), nesting at most maxDepth
// elements. Memory is bounded whatever the input, and reading stops at the
// first fault with the entries before it already delivered.
package sitemap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/htmlindex"

	"github.com/lohisoft/crawl-operator/crawler/internal/limit"
	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
)

// Limits. MaxURLs and MaxBytes are the protocol's: a sitemap "must have no
// more than 50,000 URLs and must be no larger than 50MB (52,428,800 bytes)"
// uncompressed.
const (
	MaxURLs  = 50000
	MaxBytes = 50 << 20
	// MaxToken bounds one XML token (a tag with its attributes, a text, a
	// comment, a DOCTYPE) and one line of a text sitemap: the XML decoder
	// holds a whole token in memory, and no sitemap needs more.
	MaxToken = 64 << 10
	// maxDepth bounds element nesting: the decoder keeps a stack of open
	// elements, and a sitemap with extensions nests four deep.
	maxDepth = 16
	// maxValue is what is kept of a <loc>, <lastmod> or <priority> (and of
	// a text line): more than any URL the crawler takes (2,048 bytes).
	// A longer value is returned empty.
	maxValue = 4096
)

// MaxLocLength bounds a <loc> as written: the protocol's URLs "must be
// less than 2,048 characters".
const MaxLocLength = 2048

// DefaultPriority is a URL's priority when its sitemap gives none, or one
// outside 0.0–1.0 (the protocol's default).
const DefaultPriority = 0.5

// Kind is the form of a sitemap.
type Kind int

const (
	// Unknown: nothing read yet, or not a sitemap.
	Unknown Kind = iota
	// URLSet is an XML <urlset>: its entries are pages.
	URLSet
	// Index is an XML <sitemapindex>: its entries are sitemaps.
	Index
	// Text is a plain list of URLs, one per line.
	Text
)

func (k Kind) String() string {
	switch k {
	case URLSet:
		return "sitemap"
	case Index:
		return "sitemap index"
	case Text:
		return "text sitemap"
	}
	return "unknown"
}

// Entry is one <url> (or <sitemap> of an index, or line of a text sitemap).
type Entry struct {
	// Loc is the URL as written, trimmed; "" when the entry had none, or
	// one longer than the decoder keeps, or one holding an entity
	// reference that was not expanded. It may be relative or not a web URL
	// at all: Named says which URL, if any, it names.
	Loc string
	// Priority is 0.0–1.0; DefaultPriority when absent or invalid.
	Priority float64
	// LastMod is zero when absent or not a W3C date.
	LastMod time.Time
}

// Errors that end reading early. Others are the XML decoder's syntax
// errors and the reader's own.
var (
	ErrNotSitemap  = errors.New("not a sitemap")
	ErrTooManyURLs = fmt.Errorf("more than %d URLs (the protocol's limit): the rest not read", MaxURLs)
	ErrTooLarge    = fmt.Errorf("larger than %d bytes uncompressed (the protocol's limit): the rest not read", MaxBytes)
	ErrTokenTooBig = fmt.Errorf("an XML token over %d bytes", MaxToken)
	ErrTooDeep     = fmt.Errorf("elements nested over %d deep", maxDepth)
)

// Decoder reads one sitemap.
type Decoder struct {
	// MaxURLs and MaxBytes default to the protocol's limits; tests lower
	// them.
	MaxURLs  int
	MaxBytes int64

	src   io.Reader
	kind  Kind
	err   error // sticky: the reason reading ended
	count int   // entries returned

	// XML
	xd    *xml.Decoder
	g     *guard
	space string // the root's namespace: the protocol's elements are in it
	depth int
	// Text
	lines   *bufio.Reader
	crLines [][]byte // the rest of a line that CRs alone divide
}

// NewDecoder reads a sitemap from r: XML or text, gzip-compressed or not
// (told by the gzip magic number, whatever the file is called).
func NewDecoder(r io.Reader) *Decoder { return &Decoder{src: r} }

// Kind is the sitemap's form, known after the first call to Next.
func (d *Decoder) Kind() Kind { return d.kind }

// Next returns the next entry, in document order. At the end it returns
// io.EOF; an error ends the sitemap (the entries before it stand).
func (d *Decoder) Next() (Entry, error) {
	if d.err != nil {
		return Entry{}, d.err
	}
	if d.xd == nil && d.lines == nil {
		if d.err = d.start(); d.err != nil {
			return Entry{}, d.err
		}
	}
	var e Entry
	if d.lines != nil {
		e, d.err = d.nextLine()
	} else {
		e, d.err = d.nextElement()
	}
	if d.err != nil {
		return Entry{}, d.err
	}
	if d.count++; d.count > d.maxURLs() {
		d.err = ErrTooManyURLs
		return Entry{}, d.err
	}
	return e, nil
}

func (d *Decoder) maxURLs() int {
	if d.MaxURLs > 0 {
		return d.MaxURLs
	}
	return MaxURLs
}

// start undoes gzip, caps the size, and tells XML from text by the first
// byte that is not white space or a byte order mark.
func (d *Decoder) start() error {
	max := d.MaxBytes
	if max <= 0 {
		max = MaxBytes
	}
	br := bufio.NewReader(d.src)
	var r io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("corrupt gzip: %w", err)
		}
		r = zr
	}
	br = bufio.NewReaderSize(limit.Reader(r, max, ErrTooLarge), 4096)
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			d.kind = Text // empty: no entries
			d.lines = br
			return nil
		}
		if err != nil {
			return err
		}
		if !isSpace(c) && c != 0xEF && c != 0xBB && c != 0xBF {
			br.UnreadByte()
			break
		}
	}
	if c, _ := br.Peek(1); c[0] != '<' {
		d.kind, d.lines = Text, br
		return nil
	}
	d.g = &guard{r: br, max: MaxToken}
	d.xd = xml.NewDecoder(d.g)
	// Sloppy sitemaps are still sitemaps: an unescaped "&" in a URL stays
	// as written, a mismatched end tag closes what is open. An entity a DTD
	// declares is never expanded (no "billion laughs"): the decoder leaves
	// "&e;" as written, and a <loc> holding one names nothing (unexpanded).
	d.xd.Strict = false
	d.xd.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		enc, err := htmlindex.Get(label)
		if err != nil {
			return nil, err
		}
		// The guard moves above the decoding, next to the XML decoder.
		d.g.max = math.MaxInt
		d.g = &guard{r: bufio.NewReader(enc.NewDecoder().Reader(in)), max: MaxToken}
		return d.g, nil
	}
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

// nextElement walks the XML to the end of the next <url> (or <sitemap>).
func (d *Decoder) nextElement() (Entry, error) {
	var (
		e       Entry
		inEntry bool
		field   string // loc, lastmod or priority being read
		text    []byte
		long    bool
		haveLoc bool
	)
	for {
		tok, err := d.xd.Token()
		d.g.n = 0
		if err != nil {
			switch {
			case !errors.Is(err, io.EOF):
				return Entry{}, err
			case d.kind == Unknown:
				return Entry{}, fmt.Errorf("%w (no root element)", ErrNotSitemap)
			case d.depth > 0:
				return Entry{}, io.ErrUnexpectedEOF
			}
			return Entry{}, io.EOF
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if d.depth++; d.depth > maxDepth {
				return Entry{}, ErrTooDeep
			}
			switch {
			case d.depth == 1 && d.kind == Unknown:
				switch t.Name.Local {
				case "urlset":
					d.kind = URLSet
				case "sitemapindex":
					d.kind = Index
				default:
					return Entry{}, fmt.Errorf("%w (root element <%s>)", ErrNotSitemap, cut(t.Name.Local, 40))
				}
				d.space = t.Name.Space
			case t.Name.Space != d.space:
			case d.depth == 2:
				inEntry = t.Name.Local == "url" && d.kind == URLSet || t.Name.Local == "sitemap" && d.kind == Index
				e, haveLoc = Entry{Priority: DefaultPriority}, false
			case d.depth == 3 && inEntry:
				field, text, long = t.Name.Local, text[:0], false
			}
		case xml.CharData:
			if field != "" && !long {
				if len(text)+len(t) > maxValue {
					long = true
				} else {
					text = append(text, t...)
				}
			}
		case xml.EndElement:
			d.depth--
			switch {
			case d.depth == 0:
				// What follows the root element is not part of the
				// sitemap.
				return Entry{}, io.EOF
			case d.depth == 2 && field == "loc":
				// The first <loc> is the entry's; one too long to keep,
				// or holding an entity that was not expanded, names no
				// URL that can be known.
				if !haveLoc && !long && !unexpanded.Match(text) {
					e.Loc = string(bytes.TrimSpace(text))
				}
				field, haveLoc = "", true
			case d.depth == 2 && field != "":
				if !long {
					e.set(field, string(bytes.TrimSpace(text)))
				}
				field = ""
			case d.depth == 1 && inEntry:
				return e, nil
			}
		}
	}
}

// unexpanded matches an entity reference left as written: the decoder
// expands the five XML predefines and character references, never one a
// DTD declares (a "billion laughs" costs nothing), so "&e;" stands for text
// that is not there.
var unexpanded = regexp.MustCompile(`&[A-Za-z_:\x80-\xff][-A-Za-z0-9._:\x80-\xff]*;`)

// decimal is the lexical form of xsd:decimal, the type of <priority> in
// the protocol's schema: no exponent, no hexadecimal, no "Inf" or "NaN"
// (which strconv.ParseFloat would read).
var decimal = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)

// set records a <priority> or <lastmod> of an entry: the first
// <lastmod> counts, and the last valid <priority>.
func (e *Entry) set(field, v string) {
	switch field {
	case "priority":
		if !decimal.MatchString(v) {
			return
		}
		if p, err := strconv.ParseFloat(v, 64); err == nil && p >= 0 && p <= 1 {
			e.Priority = p
		}
	case "lastmod":
		if e.LastMod.IsZero() {
			e.LastMod = ParseLastMod(v)
		}
	}
}

// nextLine returns the next non-empty line of a text sitemap; CR alone
// ends a line too, as LF and CRLF do. A line longer than maxValue is
// returned empty (counted, never used), without being held in memory.
func (d *Decoder) nextLine() (Entry, error) {
	for {
		if len(d.crLines) > 0 {
			v := d.crLines[0]
			d.crLines = d.crLines[1:]
			return lineEntry(v, false), nil
		}
		line, err := d.lines.ReadSlice('\n')
		long := false
		for errors.Is(err, bufio.ErrBufferFull) {
			long = true
			_, err = d.lines.ReadSlice('\n')
		}
		if len(line) > maxValue {
			long = true
		}
		if err != nil && err != io.EOF {
			return Entry{}, err
		}
		if v := bytes.TrimSpace(line); len(v) > 0 || long {
			if !long && bytes.IndexByte(v, '\r') >= 0 {
				for _, part := range bytes.Split(v, []byte{'\r'}) {
					if part = bytes.TrimSpace(part); len(part) > 0 {
						d.crLines = append(d.crLines, bytes.Clone(part))
					}
				}
				continue
			}
			return lineEntry(v, long), nil
		}
		if err == io.EOF {
			return Entry{}, io.EOF
		}
	}
}

// lineEntry is the entry of one line of a text sitemap.
func lineEntry(v []byte, long bool) Entry {
	e := Entry{Priority: DefaultPriority}
	if !long && isText(v) {
		e.Loc = string(v)
	}
	return e
}

// isText reports whether a line of a text sitemap can be a URL at all:
// valid UTF-8 (the protocol's encoding) without control characters.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// w3cDatetime is the protocol's date format (W3C Datetime): a year, a
// month, a date, or a date and a time with its time zone.
var w3cDatetime = regexp.MustCompile(`^[0-9]{4}(-[0-9]{2}(-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2}))?)?)?$`)

// ParseLastMod reads a W3C Datetime. Anything else is the zero time: a
// time without its zone, or with a space for the T, is not a moment the
// protocol defines, and a made-up one would move the entry up the budget.
func ParseLastMod(s string) time.Time {
	s = strings.TrimSpace(s)
	if !w3cDatetime.MatchString(s) {
		return time.Time{}
	}
	for _, layout := range []string{
		time.RFC3339Nano, "2006-01-02T15:04Z07:00",
		"2006-01-02", "2006-01", "2006",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// guard counts the bytes the XML decoder reads for one token (Next resets
// it after each) and fails past max: the decoder buffers a whole token, so
// this bounds its memory whatever the input. The decoder reads through
// ReadByte, so the count is exact.
type guard struct {
	r   *bufio.Reader
	n   int
	max int
}

func (g *guard) ReadByte() (byte, error) {
	if g.n >= g.max {
		return 0, ErrTokenTooBig
	}
	g.n++
	return g.r.ReadByte()
}

func (g *guard) Read(p []byte) (int, error) {
	if g.n >= g.max {
		return 0, ErrTokenTooBig
	}
	p = p[:min(len(p), g.max-g.n)]
	n, err := g.r.Read(p)
	g.n += n
	return n, err
}

// Named returns the URL a sitemap entry's Loc (or a robots.txt Sitemap
// line) names, as the crawler requests it (normalised, without tracking
// parameters): only a URL written in full, "http://" or "https://" and the
// rest, shorter than MaxLocLength, which is what the protocol requires
// ("must begin with the protocol", "must be less than 2,048 characters"). A relative reference, a line of text or markup that is no
// such URL names nothing: the crawler makes no URL up from it.
func Named(loc string) (*url.URL, bool) {
	if len(strings.TrimSpace(loc)) >= MaxLocLength {
		return nil, false
	}
	u, ok := urlnorm.Absolute(loc)
	if !ok {
		return nil, false
	}
	return urlnorm.Clean(u), true
}
