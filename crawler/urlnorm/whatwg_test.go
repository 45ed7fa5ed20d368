package urlnorm

import (
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// urlTestCase is one entry of the URL Standard's test data
// (testdata/whatwg/README.md): what a browser makes of input against base.
type urlTestCase struct {
	Input    string  `json:"input"`
	Base     *string `json:"base"`
	Href     string  `json:"href"`
	Failure  bool    `json:"failure"`
	Username string  `json:"username"`
	Password string  `json:"password"`
	Hostname string  `json:"hostname"`
	Port     string  `json:"port"`
}

func loadURLTestData(t *testing.T) []urlTestCase {
	t.Helper()
	b, err := os.ReadFile("testdata/whatwg/urltestdata.json")
	if err != nil {
		t.Fatal(err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	var out []urlTestCase
	for _, e := range entries {
		var c urlTestCase
		if json.Unmarshal(e, &c) == nil { // strings are the file's comments
			out = append(out, c)
		}
	}
	return out
}

// Where the crawler's URL and the browser's differ as text but name the same
// resource: each normalisation the crawler applies beyond the standard, and
// why it cannot change what the server is asked for.
var sameResource = []struct {
	name, why string
	apply     func(string) string // to the browser's href
}{
	{"fragment dropped", "a fragment is never sent: browsers strip it from the request (RFC 9110 §7.1)",
		func(h string) string { h, _, _ = strings.Cut(h, "#"); return h }},
	{"empty query dropped", `"?" with nothing after it carries no parameter; servers parse the same (empty) query either way`,
		func(h string) string { return strings.TrimSuffix(h, "?") }},
	{"escapes made canonical", "an escaped unreserved character is that character, and hex digits are case-insensitive (RFC 3986 §6.2.2.1–2)",
		canonicalEscapes},
}

// And the URLs the crawler refuses although a browser would request them:
// the crawler never sends those requests, so it can name no other resource.
type refusal struct {
	name, why string
	applies   func(c urlTestCase) bool
}

var refusals = []refusal{
	{"credentials", "the bot never logs in: a URL with a user name or password is not requested (docs/crawler.md)",
		func(c urlTestCase) bool { return c.Username != "" || c.Password != "" }},
	{"IPv6 host", "LohiSoftBot connects over IPv4 only",
		func(c urlTestCase) bool { return strings.HasPrefix(c.Hostname, "[") }},
	{"port 0", "no server listens on port 0: connecting to it fails",
		func(c urlTestCase) bool { return c.Port == "0" }},
	{"stray %", "a \"%\" that starts no escape in the path: servers refuse such a request target (400, RFC 3986 §2.1), and sending it as %25 would name another resource",
		func(c urlTestCase) bool {
			p, _, _ := strings.Cut(c.Href, "?")
			_, err := url.PathUnescape(p)
			return err != nil
		}},
	{"not a DNS name", "a host with characters no DNS name has (\"&a\", \"!\") can be resolved by no resolver the crawler uses",
		func(c urlTestCase) bool { return !validHost(strings.TrimSuffix(c.Hostname, ".")) }},
	{"control character inside", "urlnorm.Absolute reads sitemap <loc>s, whose URLs the protocol requires escaped (RFC 3986) and free of line breaks; the standard drops tabs and line breaks and escapes other controls, a URL not written in the sitemap",
		func(c urlTestCase) bool {
			return c.Base == nil && strings.ContainsFunc(strings.TrimSpace(c.Input), isControl)
		}},
	{"not written in full", "urlnorm.Absolute reads sitemap <loc>s, which the protocol requires to begin with the scheme and \"//\"; the standard reads \"http:x\" without a base as http://x/",
		func(c urlTestCase) bool {
			_, rest, _ := splitScheme(strings.TrimSpace(c.Input))
			return c.Base == nil && !strings.HasPrefix(rest, "//")
		}},
}

// Every http and https case of the URL Standard's test data, resolved as
// the crawler resolves a link (Resolve, against an http(s) page) or reads a
// sitemap's <loc> (Absolute, for an absolute input without an http(s)
// base). The crawler must request what a browser requests, up to the
// normalisations above, or refuse for one of the reasons above; and where
// a browser makes no URL of a link, neither may the crawler.
func TestWHATWGURLTestData(t *testing.T) {
	applied := map[string]int{}
	n := 0
	for _, c := range loadURLTestData(t) {
		var got *url.URL
		var ok bool
		switch {
		case c.Base != nil && isHTTP(*c.Base):
			b, err := url.Parse(*c.Base)
			if err != nil {
				t.Fatalf("base %q: %v", *c.Base, err)
			}
			got, ok = Resolve(b, c.Input)
		case isHTTP(strings.TrimSpace(c.Input)):
			got, ok = Absolute(c.Input)
		default:
			continue
		}
		n++
		label := "input " + strconvQuote(c.Input)
		if c.Base != nil {
			label += " against " + strconvQuote(*c.Base)
		}
		switch {
		case c.Failure || !isHTTP(c.Href):
			if ok {
				t.Errorf("%s: a browser requests nothing (%q), the crawler %s", label, c.Href, got)
			}
			applied["no http(s) URL either way"]++
		case !ok:
			i := slices.IndexFunc(refusals, func(r refusal) bool { return r.applies(c) })
			if i < 0 {
				t.Errorf("%s: a browser requests %s, the crawler refuses it for no listed reason", label, c.Href)
				continue
			}
			applied["refused: "+refusals[i].name]++
		default:
			want, steps := c.Href, []string{}
			for _, s := range sameResource {
				if want == got.String() {
					break
				}
				if next := s.apply(want); next != want {
					want = next
					steps = append(steps, s.name)
				}
			}
			if want != got.String() {
				t.Errorf("%s: a browser requests %s, the crawler %s", label, c.Href, got)
				continue
			}
			if len(steps) == 0 {
				applied["identical"]++
			}
			for _, s := range steps {
				applied["same resource: "+s]++
			}
		}
	}
	if n < 400 {
		t.Fatalf("only %d http(s) cases: is testdata/whatwg/urltestdata.json whole?", n)
	}
	// Every listed reason is still needed: one the data no longer calls for
	// is taken out of the lists rather than left to excuse a regression.
	for _, s := range sameResource {
		if applied["same resource: "+s.name] == 0 {
			t.Errorf("normalisation %q never applied: remove it", s.name)
		}
	}
	for _, r := range refusals {
		if applied["refused: "+r.name] == 0 {
			t.Errorf("refusal %q never applied: remove it", r.name)
		}
	}
	keys := make([]string, 0, len(applied))
	for k := range applied {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%4d %s", applied[k], k)
	}
	t.Logf("%d http(s) cases", n)
}

func isHTTP(s string) bool {
	scheme, _, ok := splitScheme(s)
	return ok && isSpecial(scheme)
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
