// Package hostilesite serves the inputs a hostile or merely sloppy web site
// gives a crawler: robots.txt bypasses through URL spellings that servers
// normalise, markup whose text a careless extractor would keep as a heading
// or anchor, legacy encodings without a Content-Type, control and bidi
// characters, documents as large as every cap allows, responses broken in
// ways that fail the same on every attempt, and two names of one server.
// Each scenario is its own site (the crawl budget is per site) with the
// expectations a test checks next to it; the engine tests and the
// end-to-end test of bin/crawler both crawl them.
package hostilesite

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/encoding/charmap"

	"github.com/lohisoft/crawl-operator/crawler/internal/percent"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// Marker is body text: it must appear nowhere in a crawl document or log.
const Marker = "HOSTILE-BODY-TEXT-5eaf00d"

// Dots is a site whose robots.txt disallows /disallowed, linked under every
// spelling that nginx or Apache resolve to it (percent-encoded dot
// segments, merged slashes, an encoded slash). Its server resolves paths
// the way nginx does and records which requests reached the disallowed
// content, whatever they were spelled as.
type Dots struct {
	*testsite.Site
	mu         sync.Mutex
	disallowed []string
}

// BypassSpellings are links that a server which decodes, merges slashes
// and removes dot segments serves as /disallowed/x.
var BypassSpellings = []string{
	"/%2e/disallowed/x",
	"/%2e%2e/disallowed/x",
	"/a/%2e%2e/disallowed/x",
	"/.%2e/disallowed/x",
	"/%2E%2E/disallowed/x",
	"/a/b/%2e%2e/%2e%2e/disallowed/x",
	"/./disallowed/x",
	"/a/../disallowed/x",
	"//disallowed/x",
	"/.//disallowed/x",
	"/%2fdisallowed/x",
	"/%2Fdisallowed/x",
	"/a%2f..%2fdisallowed/x",
	"/a/%2e%2e%2fdisallowed/x",
	"/../../disallowed/x",
}

// NewDots starts the Dots site.
func NewDots(t testing.TB) *Dots {
	d := &Dots{Site: testsite.New(t)}
	d.Robots("User-agent: *\nDisallow: /disallowed\n")
	var links []string
	for _, s := range BypassSpellings {
		links = append(links, s, "link")
	}
	links = append(links, "/allowed", "Allowed")
	d.HTML("/", testsite.Page("Dots home", Marker, links...))
	d.HTML("/allowed", testsite.Page("Allowed page", Marker))
	d.Fallback(func(w http.ResponseWriter, r *http.Request) {
		p := NginxPath(r.URL.EscapedPath())
		switch {
		case strings.HasPrefix(p, "/disallowed"):
			d.mu.Lock()
			d.disallowed = append(d.disallowed, r.URL.RequestURI())
			d.mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, testsite.Page("Disallowed page", Marker))
		case p == "/allowed":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, testsite.Page("Allowed page", Marker))
		default:
			http.NotFound(w, r)
		}
	})
	return d
}

// DisallowedServed lists the requests that reached the disallowed content.
func (d *Dots) DisallowedServed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.disallowed...)
}

// NginxPath resolves a request path as nginx does by default: decode every
// escape (an encoded slash included), merge slashes, remove dot segments.
func NginxPath(escaped string) string {
	var b strings.Builder
	for i := 0; i < len(escaped); i++ {
		if escaped[i] == '%' && i+2 < len(escaped) && percent.IsHex(escaped[i+1]) && percent.IsHex(escaped[i+2]) {
			b.WriteByte(percent.Unhex(escaped[i+1])<<4 | percent.Unhex(escaped[i+2]))
			i += 2
			continue
		}
		b.WriteByte(escaped[i])
	}
	p := b.String()
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	var out []string
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case ".":
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	r := strings.Join(out, "/")
	if !strings.HasPrefix(r, "/") {
		r = "/" + r
	}
	return r
}

// Messy is a site of ordinary pages that real sites get wrong: text that
// only a careless extractor scopes into a heading or a link, legacy
// encodings without a Content-Type header, control and bidi characters,
// robots directives written loosely, and responses that are broken the same
// way on every attempt. After the broken pages come good ones, which must
// still be crawled.
type Messy struct {
	*testsite.Site
	// Want maps a path to the page the crawl must keep for it.
	Want map[string]WantPage
	// Skipped maps a path to the start of the reason it must be skipped
	// with, after exactly one request.
	Skipped map[string]string
}

// WantPage is what the crawl must keep of one page; nil slices are not
// checked.
type WantPage struct {
	Title   string
	H1, H2  []string
	H3      []string
	Anchors map[string]string // link path → the anchor text kept for it
}

// NewMessy starts the Messy site. Most of it is the table of pages and
// what the crawler must keep of each, which reads best in one place.
func NewMessy(t testing.TB) *Messy {
	m := &Messy{Site: testsite.New(t), Want: map[string]WantPage{}, Skipped: map[string]string{}}
	// Its 20 pages fill the budget, and it has no sitemap: it says so,
	// and the crawler spends no request on one.
	m.Robots("User-agent: *\nAllow: /\nDisallow: /sitemap.xml\n")
	pages := []string{}
	add := func(path string, h http.HandlerFunc, want *WantPage, skip string) {
		m.Handle(path, h)
		pages = append(pages, path, "to "+strings.TrimPrefix(path, "/"))
		if want != nil {
			m.Want[path] = *want
		}
		if skip != "" {
			m.Skipped[path] = skip
		}
	}
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
	}
	// Text scoping: the HTML5 tree puts only the first words inside the
	// heading or link; the marker is page text after it.
	add("/header", html(`<!doctype html><title>Header</title><header><h1>Site name</header><main><p>`+Marker+`</p></main>`),
		&WantPage{Title: "Header", H1: []string{"Site name"}}, "")
	add("/cell", html(`<!doctype html><title>Cell</title><table><tr><td><h2>Cell</td><td>`+Marker+`</td></tr></table>`),
		&WantPage{Title: "Cell", H2: []string{"Cell"}}, "")
	add("/item", html(`<!doctype html><title>Item</title><ul><li><h3>Item</li><li>`+Marker+`</li></ul>`),
		&WantPage{Title: "Item", H3: []string{"Item"}}, "")
	add("/links", html(`<!doctype html><title>Links</title><div><a href="/header">Header link</div><p>`+Marker+`</p>`+
		`<table><tr><td><a href="/cell">Cell link</td><td>`+Marker+`</td></tr></table>`),
		&WantPage{Title: "Links"}, "")
	add("/svgtitle", html(`<!doctype html><body><svg><title>Icon label</title></svg><h1>No title here</h1><p>`+Marker+`</p>`),
		&WantPage{Title: "", H1: []string{"No title here"}}, "")
	// Legacy encodings, no Content-Type header: the page's own <meta
	// charset> decides.
	for _, c := range legacyPages {
		add(c.path, legacy(c.title, c.enc), &WantPage{Title: c.title}, "")
	}
	// Control and bidi characters go, like C0 controls.
	add("/controls", html("<!doctype html><title>Con\u0090trol\u202Eled\u2066 ti\u009Ftle\u2069</title><h1>Bi\u202Adi\u202C</h1>"),
		&WantPage{Title: "Controlled title", H1: []string{"Bidi"}}, "")
	// Robots directives as site owners write them.
	add("/noindex-spaces", html(`<!doctype html><meta name="robots" content="noindex nofollow"><title>Hidden</title>`), nil, "noindex")
	add("/noindex-agents", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Robots-Tag", "otherbot: noindex, LohiSoftBot: noindex")
		fmt.Fprint(w, `<!doctype html><title>Hidden too</title>`)
	}, nil, "noindex")
	// Broken responses: each fails the same way however often it is asked.
	add("/brotli", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "br")
		w.Write([]byte{0x1b, 0x03, 0x00, 0xf8, 0xa5, 0x9c, 0x98})
	}, nil, "broken response")
	add("/short", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", "100000")
		fmt.Fprint(w, "<title>Short</title>")
	}, nil, "broken response")
	add("/bigheaders", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for i := 0; i < 40; i++ {
			w.Header().Set(fmt.Sprintf("X-Filler-%d", i), strings.Repeat("f", 4000))
		}
		fmt.Fprint(w, "<title>Big headers</title>")
	}, nil, "broken response")
	add("/badgzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		fmt.Fprint(zw, "<title>Bad gzip</title>"+strings.Repeat("x", 1000))
		zw.Close()
		raw := b.Bytes()
		raw[len(raw)/2] ^= 0xff
		w.Write(raw)
	}, nil, "broken response")
	// The rest of the site, after the broken pages.
	add("/after", html(`<!doctype html><title>After the broken pages</title><h1>Still crawled</h1>`),
		&WantPage{Title: "After the broken pages", H1: []string{"Still crawled"}}, "")
	m.HTML("/", testsite.Page("Messy home", Marker, pages...))
	m.Want["/"] = WantPage{Title: "Messy home"}
	// The links page's anchors: exactly the text inside each <a>.
	w := m.Want["/links"]
	w.Anchors = map[string]string{"/header": "Header link", "/cell": "Cell link"}
	m.Want["/links"] = w
	return m
}

type legacyPage struct {
	path, title string
	enc         *charmap.Charmap
	label       string
}

// legacyPages are the languages of the bot's own page in the encodings
// their older sites still use.
var legacyPages = []legacyPage{
	{"/bg-1251", "Хляб и сладкиши — пекарна", charmap.Windows1251, "windows-1251"},
	{"/sk-1250", "Čerstvý chlieb, rožky a koláče", charmap.Windows1250, "windows-1250"},
	{"/sk-8859-2", "Ľahké pečivo z pece", charmap.ISO8859_2, "iso-8859-2"},
	{"/nl-1252", "Brood & gebak – één café, “vers”", charmap.Windows1252, "windows-1252"},
	{"/it-8859-15", "Pane e dolci della città: più gusto, 2 €", charmap.ISO8859_15, "iso-8859-15"},
	{"/en-8859-1", "Fresh bread · café au lait", charmap.ISO8859_1, "iso-8859-1"},
}

func legacy(title string, enc *charmap.Charmap) http.HandlerFunc {
	label := ""
	for _, c := range legacyPages {
		if c.enc == enc {
			label = c.label
		}
	}
	page := `<!doctype html><html><head><meta charset="` + label + `"><title>` + title + `</title></head><body><p>` + Marker + `</p></body></html>`
	body, err := enc.NewEncoder().String(page)
	if err != nil {
		panic(fmt.Sprintf("hostilesite: %s cannot encode %q: %v", label, title, err))
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no header at all: not even Go's sniffed one
		w.Write([]byte(body))
	}
}

// Big is a site that fills every cap of the crawl document: 20 pages with
// the longest titles, descriptions, headings and anchors the extractor
// keeps, written in characters JSON must escape, hundreds of off-site links
// with long texts and URLs, URLs past the length limit and absurd Content-Types.
type Big struct {
	*testsite.Site
	// LongURL is a link longer than result.MaxURLLength.
	LongURL string
}

// NewBig starts the Big site.
func NewBig(t testing.TB) *Big {
	b := &Big{Site: testsite.New(t)}
	b.Robots("User-agent: *\nAllow: /\n")
	b.LongURL = "/long/" + strings.Repeat("a", 3000)
	// Quotes and backslashes take two bytes each in JSON.
	escapy := func(n int) string { return strings.Repeat(`"\`, n/2) }
	page := func(i int) string {
		var p strings.Builder
		fmt.Fprintf(&p, `<!doctype html><html><head><title>%d %s</title><meta name="description" content="%s"></head><body>`,
			i, escapy(600), strings.ReplaceAll(escapy(1200), `"`, "&quot;"))
		fmt.Fprintf(&p, `<a href="%s">long</a><a href="/weird-type">weird</a>`, b.LongURL)
		for l := 1; l <= 3; l++ {
			for h := 0; h < 60; h++ {
				fmt.Fprintf(&p, "<h%d>%d %s</h%d>", l, h, escapy(600), l)
			}
		}
		for j := 0; j < 30; j++ {
			fmt.Fprintf(&p, `<a href="/p%d">%d %s</a>`, j, j, escapy(600))
		}
		for j := 0; j < 60; j++ {
			fmt.Fprintf(&p, `<a href="https://other%d.example/?q=%s">%d %s</a>`, j, strings.Repeat("&quot;", 1900), j, escapy(600))
		}
		fmt.Fprintf(&p, `<p>%s</p></body></html>`, Marker)
		return p.String()
	}
	b.HTML("/", page(0))
	for i := 0; i < 30; i++ {
		b.HTML(fmt.Sprintf("/p%d", i), page(i+1))
	}
	b.Handle("/weird-type", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-"+strings.Repeat("z", 3000))
		fmt.Fprint(w, Marker)
	})
	return b
}

// Names is a site reached under two names of one address: robots.txt on
// 127.0.0.1 redirects to the same server as localhost, so a crawler that
// paces by host name alone sends two requests back to back.
type Names struct {
	*testsite.Site
	Start string // http://127.0.0.1:PORT/
}

// NewNames starts the Names site.
func NewNames(t testing.TB) *Names {
	n := &Names{Site: testsite.New(t)}
	u, err := url.Parse(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(u.Host)
	n.Start = "http://127.0.0.1:" + port + "/"
	n.Handle("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "127.0.0.1") {
			http.Redirect(w, r, "http://localhost:"+port+"/robots.txt", http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "User-agent: *\nAllow: /\n")
	})
	n.HTML("/", testsite.Page("Names home", Marker, "/a", "A"))
	n.HTML("/a", testsite.Page("A", Marker))
	return n
}
