package extract

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Character encodings are determined as the HTML Standard's encoding
// sniffing algorithm does
// (https://html.spec.whatwg.org/multipage/parsing.html#determining-the-character-encoding),
// in this order, the first that gives an answer deciding:
//
//  1. A byte order mark: UTF-8, UTF-16LE or UTF-16BE. The BOM is removed.
//  2. The charset parameter of the Content-Type header, parsed as Fetch and
//     MIME Sniffing do. Only a header the server actually sent counts, and a
//     label the Encoding Standard does not know is ignored.
//  3. A prescan of the first 1,024 bytes: <meta charset>, <meta
//     http-equiv="Content-Type" content="…; charset=…">, a BOM-less UTF-16
//     "<?x" and an XML declaration's encoding. A UTF-16 label found here
//     means UTF-8 and x-user-defined means windows-1252, as the standard
//     says; a meta after byte 1,024 is not looked for.
//  4. A guess from the bytes, standing in for the standard's optional
//     frequency analysis: UTF-8 if the first stretch of non-ASCII bytes (up
//     to 4 KiB from the first byte above 0x7F) is valid UTF-8, windows-1252
//     otherwise. Validity is a near-certain test (legacy text almost never
//     forms valid multi-byte UTF-8 sequences), and undeclared UTF-8 is
//     today more common than undeclared legacy text. windows-1252 is the
//     standard's fallback for most locales; it suggests windows-1250 for
//     Slovak and windows-1251 for Bulgarian users, but a crawler has no
//     user locale, so an undeclared windows-1250/1251 page still comes out
//     wrong (it always did). Bytes up to the first non-ASCII one read the
//     same in both and are passed on as they arrive, so no page is held in
//     memory whole for the guess.
//
// Labels are the Encoding Standard's (htmlindex): "latin1" and "iso-8859-1"
// are windows-1252, "utf-16" is UTF-16LE, and the labels of the replacement
// encoding (iso-2022-kr, …) decode the whole page to one U+FFFD, as in a
// browser. Invalid byte sequences become U+FFFD. A meta found later in the
// page does not restart the decoding (browsers re-parse; a crawler does not).

const (
	// prescanLen is how much of the page the <meta> prescan reads.
	prescanLen = 1024
	// guessLen is how many bytes, from the first non-ASCII one, the UTF-8
	// guess of step 4 reads before it decides.
	guessLen = 4096
)

// decodeHTML returns a reader of r's bytes decoded to UTF-8. contentType is
// the Content-Type header exactly as the server sent it, "" when there was
// none (several header fields joined with ", "); it must not be a type
// guessed from the body, since a guessed "charset=utf-8" would override the
// page's own <meta charset>. It reads the first 1,024 bytes before it
// returns; an error is returned only when that read fails (an empty body is
// not an error: the reader is then empty).
func decodeHTML(r io.Reader, contentType string) (io.Reader, error) {
	head := make([]byte, prescanLen)
	n, err := io.ReadFull(r, head)
	head = head[:n]
	switch err {
	case nil:
	case io.EOF, io.ErrUnexpectedEOF:
		r = eofReader{}
	default:
		return nil, err
	}
	e, _, bom := determineEncoding(head, contentType)
	if e == nil {
		return &guessReader{src: r, buf: head}, nil
	}
	// htmlindex's UTF-8 (unicode.UTF8) validates too: invalid sequences
	// become U+FFFD.
	rest := io.MultiReader(bytes.NewReader(head[bom:]), r)
	return transform.NewReader(rest, e.NewDecoder()), nil
}

// determineEncoding runs steps 1 to 3 on head, the first bytes of the page
// (at most 1,024 are looked at). It returns the encoding, its Encoding
// Standard name and the length of the BOM to skip, or a nil encoding when
// none of the steps decides and the bytes must be guessed from.
func determineEncoding(head []byte, contentType string) (e encoding.Encoding, name string, bom int) {
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}):
		return unicode.UTF8, "utf-8", 3
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		e, name = lookupLabel("utf-16be")
		return e, name, 2
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
		e, name = lookupLabel("utf-16le")
		return e, name, 2
	}
	if label, ok := headerCharset(contentType); ok {
		if e, name = lookupLabel(label); e != nil {
			return e, name, 0
		}
	}
	if len(head) > prescanLen {
		head = head[:prescanLen]
	}
	e, name = prescan(head)
	return e, name, 0
}

// lookupLabel is the Encoding Standard's "get an encoding": nil and "" for
// a label it does not define. ("replacement" is the name of an encoding,
// which htmlindex accepts, but not one of its labels.)
func lookupLabel(label string) (encoding.Encoding, string) {
	label = strings.Trim(label, "\t\n\f\r ")
	if strings.EqualFold(label, "replacement") {
		return nil, ""
	}
	e, err := htmlindex.Get(label)
	if err != nil {
		return nil, ""
	}
	name, err := htmlindex.Name(e)
	if err != nil {
		return nil, ""
	}
	return e, name
}

// declared maps an encoding a document declares about itself to the one
// used: a document that can be read as ASCII to find its declaration is not
// UTF-16, and x-user-defined is windows-1252 for legacy reasons.
func declared(label string) (encoding.Encoding, string) {
	e, name := lookupLabel(label)
	switch name {
	case "utf-16le", "utf-16be":
		return unicode.UTF8, "utf-8"
	case "x-user-defined":
		return charmap.Windows1252, "windows-1252"
	}
	return e, name
}

// headerCharset returns the charset parameter of a Content-Type header
// value, as Fetch's "extract a MIME type" and "legacy extract an encoding"
// find it: values are split at commas outside quoted strings, values that
// are not valid MIME types (and */*) are skipped, the last valid value
// counts, and it keeps the charset of an earlier value of the same essence
// when it has none of its own.
func headerCharset(contentType string) (string, bool) {
	var essence, kept, charset string
	var hasKept, hasCharset bool
	for _, v := range splitHeaderValues(contentType) {
		mt, cs, hasCS, valid := parseMIMEType(v)
		if !valid || mt == "*/*" {
			continue
		}
		charset, hasCharset = cs, hasCS
		if mt != essence {
			essence = mt
			kept, hasKept = cs, hasCS
		} else if !hasCS && hasKept {
			charset, hasCharset = kept, true
		}
	}
	return charset, hasCharset
}

// splitHeaderValues is Fetch's "getting, decoding, and splitting": commas
// outside double-quoted strings separate values, which are trimmed of tabs
// and spaces.
func splitHeaderValues(s string) []string {
	var out []string
	start, inQuote := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case c == ',' && !inQuote:
			out = append(out, strings.Trim(s[start:i], "\t "))
			start = i + 1
		}
	}
	return append(out, strings.Trim(s[start:], "\t "))
}

// parseMIMEType is MIME Sniffing's "parse a MIME type", reduced to what the
// charset needs: the essence (type/subtype, lowercased) and the first
// charset parameter.
func parseMIMEType(s string) (essence, charset string, hasCharset, ok bool) {
	const httpWhitespace = "\t\n\r "
	s = strings.Trim(s, httpWhitespace)
	slash := strings.IndexByte(s, '/')
	if slash < 0 {
		return "", "", false, false
	}
	typ := s[:slash]
	s = s[slash+1:]
	semi := strings.IndexByte(s, ';')
	if semi < 0 {
		semi = len(s)
	}
	sub := strings.TrimRight(s[:semi], httpWhitespace)
	if !isToken(typ) || !isToken(sub) {
		return "", "", false, false
	}
	essence = strings.ToLower(typ + "/" + sub)
	s = s[semi:]
	for len(s) > 0 {
		s = strings.TrimLeft(s[1:], httpWhitespace) // past ';'
		end := strings.IndexAny(s, ";=")
		if end < 0 {
			break // a name with no value, at the end
		}
		name := strings.ToLower(s[:end])
		if s[end] == ';' {
			s = s[end:]
			continue
		}
		s = s[end+1:] // past '='
		if len(s) == 0 {
			break
		}
		var value string
		if s[0] == '"' {
			value, s = quotedString(s)
			if i := strings.IndexByte(s, ';'); i >= 0 {
				s = s[i:]
			} else {
				s = ""
			}
		} else {
			i := strings.IndexByte(s, ';')
			if i < 0 {
				i = len(s)
			}
			value, s = strings.TrimRight(s[:i], httpWhitespace), s[i:]
			if value == "" {
				continue
			}
		}
		if name == "charset" && !hasCharset && isQuotedStringText(value) {
			charset, hasCharset = value, true
		}
	}
	return essence, charset, hasCharset, true
}

// quotedString is Fetch's "collect an HTTP quoted string" with the value
// extracted; s starts with '"'. It returns the value and what follows.
func quotedString(s string) (value, rest string) {
	var b strings.Builder
	i := 1
	for i < len(s) {
		c := s[i]
		i++
		switch c {
		case '"':
			return b.String(), s[i:]
		case '\\':
			if i == len(s) {
				b.WriteByte('\\')
				return b.String(), ""
			}
			b.WriteByte(s[i])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), ""
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func isQuotedStringText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && (c < 0x20 || c == 0x7F) {
			return false
		}
	}
	return true
}

// prescan is the HTML Standard's "prescan a byte stream to determine its
// encoding" over b (the caller limits it to 1,024 bytes), followed, when it
// runs out of bytes, by "get an XML encoding". It returns nil when neither
// finds a usable declaration.
func prescan(b []byte) (encoding.Encoding, string) {
	switch {
	case bytes.HasPrefix(b, []byte("<\x00?\x00x\x00")):
		return lookupLabel("utf-16le")
	case bytes.HasPrefix(b, []byte("\x00<\x00?\x00x")):
		return lookupLabel("utf-16be")
	}
	for pos := 0; pos < len(b); pos++ {
		rest := b[pos:]
		if rest[0] != '<' {
			continue
		}
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			// To the '>' of the first "-->", whose dashes may be those
			// of "<!--".
			i := bytes.Index(rest[2:], []byte("-->"))
			if i < 0 {
				return xmlEncoding(b)
			}
			pos += 2 + i + 2
		case len(rest) > 5 && asciiLowerEqual(rest[1:5], "meta") && (isSpaceByte(rest[5]) || rest[5] == '/'):
			e, name, next, more := metaCharset(b, pos+5)
			if e != nil {
				return e, name
			}
			if !more {
				return xmlEncoding(b)
			}
			pos = next
		case len(rest) > 1 && isASCIILetter(rest[1]),
			len(rest) > 2 && rest[1] == '/' && isASCIILetter(rest[2]):
			i := bytes.IndexAny(rest, "\t\n\f\r >")
			if i < 0 {
				return xmlEncoding(b)
			}
			pos += i
			for {
				_, _, next, found, more := attribute(b, pos)
				if !more {
					return xmlEncoding(b)
				}
				pos = next
				if !found {
					break
				}
			}
		case len(rest) > 1 && (rest[1] == '!' || rest[1] == '/' || rest[1] == '?'):
			i := bytes.IndexByte(rest, '>')
			if i < 0 {
				return xmlEncoding(b)
			}
			pos += i
		}
	}
	return xmlEncoding(b)
}

// metaCharset reads the attributes of a <meta> from pos (just after
// "<meta") and returns the encoding it declares, if it declares a usable
// one, and the position at which the prescan goes on. more is false when
// the bytes ran out.
func metaCharset(b []byte, pos int) (e encoding.Encoding, name string, next int, more bool) {
	seen := map[string]bool{}
	gotPragma := false
	needPragma := 0 // 0 null, 1 true, 2 false
	var label string
	haveLabel := false // charset is not null (it may still be unknown)
	for {
		attr, value, n, found, ok := attribute(b, pos)
		if !ok {
			return nil, "", 0, false
		}
		pos = n
		if !found {
			break
		}
		if seen[attr] {
			continue
		}
		seen[attr] = true
		switch attr {
		case "http-equiv":
			if value == "content-type" {
				gotPragma = true
			}
		case "content":
			if l, ok := charsetFromContent(value); ok && !haveLabel {
				if e, _ := lookupLabel(l); e != nil {
					label, haveLabel, needPragma = l, true, 1
				}
			}
		case "charset":
			label, haveLabel, needPragma = value, true, 2
		}
	}
	if needPragma == 0 || needPragma == 1 && !gotPragma {
		return nil, "", pos, true
	}
	e, name = declared(label)
	return e, name, pos, true
}

// attribute is the HTML Standard's "get an attribute" (for sniffing) at pos.
// found is false when there is no further attribute (pos is then at the
// '>'); ok is false when the bytes ran out. Names and values are lowercased.
func attribute(b []byte, pos int) (name, value string, next int, found, ok bool) {
	for pos < len(b) && (isSpaceByte(b[pos]) || b[pos] == '/') {
		pos++
	}
	if pos >= len(b) {
		return "", "", 0, false, false
	}
	if b[pos] == '>' {
		return "", "", pos, false, true
	}
	var nb, vb []byte
name:
	for {
		if pos >= len(b) {
			return "", "", 0, false, false
		}
		c := b[pos]
		switch {
		case c == '=' && len(nb) > 0:
			pos++
			break name
		case isSpaceByte(c):
			for pos < len(b) && isSpaceByte(b[pos]) {
				pos++
			}
			if pos >= len(b) {
				return "", "", 0, false, false
			}
			if b[pos] != '=' {
				return string(nb), "", pos, true, true
			}
			pos++
			break name
		case c == '/' || c == '>':
			return string(nb), "", pos, true, true
		default:
			nb = append(nb, asciiLower(c))
		}
		pos++
	}
	// The value.
	for pos < len(b) && isSpaceByte(b[pos]) {
		pos++
	}
	if pos >= len(b) {
		return "", "", 0, false, false
	}
	switch q := b[pos]; q {
	case '"', '\'':
		for pos++; ; pos++ {
			if pos >= len(b) {
				return "", "", 0, false, false
			}
			if b[pos] == q {
				return string(nb), string(vb), pos + 1, true, true
			}
			vb = append(vb, asciiLower(b[pos]))
		}
	case '>':
		return string(nb), "", pos, true, true
	}
	for ; ; pos++ {
		if pos >= len(b) {
			return "", "", 0, false, false
		}
		if c := b[pos]; isSpaceByte(c) || c == '>' {
			return string(nb), string(vb), pos, true, true
		}
		vb = append(vb, asciiLower(b[pos]))
	}
}

// charsetFromContent is the HTML Standard's "extracting a character
// encoding from a meta element" up to the label: s is the lowercased
// content attribute.
func charsetFromContent(s string) (string, bool) {
	for {
		i := strings.Index(s, "charset")
		if i < 0 {
			return "", false
		}
		s = strings.TrimLeft(s[i+len("charset"):], "\t\n\f\r ")
		if strings.HasPrefix(s, "=") {
			s = strings.TrimLeft(s[1:], "\t\n\f\r ")
			break
		}
	}
	if s == "" {
		return "", false
	}
	if q := s[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			return "", false
		}
		return s[1 : 1+end], true
	}
	if end := strings.IndexAny(s, "\t\n\f\r ;"); end >= 0 {
		s = s[:end]
	}
	return s, true
}

// xmlEncoding is the HTML Standard's "get an XML encoding": the encoding
// of an XML declaration at the very start of b.
func xmlEncoding(b []byte) (encoding.Encoding, string) {
	if !bytes.HasPrefix(b, []byte("<?xml")) {
		return nil, ""
	}
	end := bytes.IndexByte(b, '>')
	if end < 0 {
		return nil, ""
	}
	d := b[:end]
	i := bytes.Index(d, []byte("encoding"))
	if i < 0 {
		return nil, ""
	}
	d = d[i+len("encoding"):]
	d = bytes.TrimLeftFunc(d, func(r rune) bool { return r <= 0x20 })
	if len(d) == 0 || d[0] != '=' {
		return nil, ""
	}
	d = bytes.TrimLeftFunc(d[1:], func(r rune) bool { return r <= 0x20 })
	if len(d) == 0 || d[0] != '"' && d[0] != '\'' {
		return nil, ""
	}
	q := d[0]
	d = d[1:]
	j := bytes.IndexByte(d, q)
	if j < 0 {
		return nil, ""
	}
	label := d[:j]
	for _, c := range label {
		if c <= 0x20 {
			return nil, ""
		}
	}
	e, name := lookupLabel(string(label))
	if name == "utf-16le" || name == "utf-16be" {
		return unicode.UTF8, "utf-8"
	}
	return e, name
}

func isSpaceByte(c byte) bool {
	return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func asciiLowerEqual(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		if asciiLower(b[i]) != lower[i] {
			return false
		}
	}
	return true
}

// guessReader is step 4: it passes ASCII through as it arrives and, at the
// first byte above 0x7F, reads up to guessLen bytes ahead, decides between
// UTF-8 and windows-1252, and decodes the rest with that.
type guessReader struct {
	src   io.Reader
	buf   []byte // read from src, not yet passed on: buf[off:]
	off   int
	err   error     // src's error, once it has returned one
	out   io.Reader // the decoding reader, once decided
	empty int       // consecutive empty reads from src
}

func (g *guessReader) Read(p []byte) (int, error) {
	if g.out != nil {
		return g.out.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	for g.off == len(g.buf) {
		if g.err != nil {
			return 0, g.err
		}
		g.buf, g.off = g.buf[:0], 0
		g.fill()
	}
	pending := g.buf[g.off:]
	ascii := 0
	for ascii < len(pending) && pending[ascii] < utf8.RuneSelf {
		ascii++
	}
	if ascii > 0 {
		n := copy(p, pending[:ascii])
		g.off += n
		return n, nil
	}
	for len(g.buf)-g.off < guessLen && g.err == nil {
		g.fill()
	}
	pending = g.buf[g.off:]
	window, atEOF := pending, g.err != nil
	if len(window) > guessLen {
		window, atEOF = window[:guessLen], false
	}
	var dec *encoding.Decoder
	if looksUTF8(window, atEOF) {
		dec = unicode.UTF8.NewDecoder()
	} else {
		dec = charmap.Windows1252.NewDecoder()
	}
	var tail io.Reader = g.src
	if g.err != nil {
		tail = errReader{g.err}
	}
	g.out = transform.NewReader(io.MultiReader(bytes.NewReader(pending), tail), dec)
	g.buf = nil
	return g.out.Read(p)
}

// fill reads once from src into the free end of buf, growing it as needed.
func (g *guessReader) fill() {
	if cap(g.buf)-len(g.buf) < 512 {
		if g.off > 0 && g.off >= len(g.buf)/2 {
			n := copy(g.buf, g.buf[g.off:])
			g.buf, g.off = g.buf[:n], 0
		} else {
			nb := make([]byte, len(g.buf), 2*cap(g.buf)+512)
			copy(nb, g.buf)
			g.buf = nb
		}
	}
	n, err := g.src.Read(g.buf[len(g.buf):cap(g.buf)])
	g.buf = g.buf[:len(g.buf)+n]
	switch {
	case err != nil:
		g.err = err
	case n == 0:
		if g.empty++; g.empty >= 100 {
			g.err = io.ErrNoProgress
		}
	default:
		g.empty = 0
	}
}

// looksUTF8 reports whether b (which starts with a non-ASCII byte) is valid
// UTF-8. A sequence cut short at the end of b is forgiven unless b is the
// end of the input.
func looksUTF8(b []byte, atEOF bool) bool {
	if !atEOF {
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	return utf8.Valid(b)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
