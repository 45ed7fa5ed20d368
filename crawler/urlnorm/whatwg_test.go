package urlnorm

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// urlTestCase is one entry of the URL Standard's test data: what a browser
// makes of input against base.
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

// whatwgModule is the Go module whose parser is the test's second
// implementation of the standard, and whose testdata/urltestdata.json is
// web-platform-tests' url/resources/urltestdata.json (testdata/whatwg/README.md
// says why the file is read from the module cache rather than kept here).
const whatwgModule = "github.com/nlnwa/whatwg-url"

// urlTestDataFile finds urltestdata.json in the module cache: by
// `go list -m`, or else (no go command at hand) by the version go.mod
// requires under GOMODCACHE (a test binary's runtime/debug build info lists
// no dependencies). Without it the test fails under CI=true and is skipped
// elsewhere.
func urlTestDataFile(t *testing.T) string {
	t.Helper()
	var dirs []string
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	if out, err := exec.Command(goCmd, "list", "-m", "-f", "{{.Dir}}", whatwgModule).Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	if v := requiredVersion(whatwgModule); v != "" {
		for _, cache := range moduleCaches() {
			// The path is all lower case, so the cache spells it as is.
			dirs = append(dirs, filepath.Join(cache, whatwgModule+"@"+v))
		}
	}
	for _, d := range dirs {
		f := filepath.Join(d, "testdata", "urltestdata.json")
		if d != "" && fileExists(f) {
			return f
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s's testdata/urltestdata.json is not in the module cache (tried %q): run go mod download", whatwgModule, dirs)
	}
	t.Skipf("skipped: %s's testdata/urltestdata.json is not in the module cache (go mod download fetches it)", whatwgModule)
	return ""
}

// requiredVersion is the version of module that the go.mod above the
// working directory requires, or "".
func requiredVersion(module string) string {
	dir, err := os.Getwd()
	for err == nil {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for line := range strings.Lines(string(b)) {
				f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
				if len(f) >= 2 && f[0] == module {
					return f[1]
				}
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

func moduleCaches() []string {
	if c := os.Getenv("GOMODCACHE"); c != "" {
		return []string{c}
	}
	var out []string
	for _, p := range filepath.SplitList(os.Getenv("GOPATH")) {
		out = append(out, filepath.Join(p, "pkg", "mod"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(home, "go", "pkg", "mod"))
	}
	return out
}

func fileExists(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}

func loadURLTestData(t *testing.T) []urlTestCase {
	t.Helper()
	b, err := os.ReadFile(urlTestDataFile(t))
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
//
// nlnwa/whatwg-url's parser is a second implementation of the standard:
// on every case of the data (http(s) or not) it should give the data's
// href or failure, and where it does not the test says so and goes on (the
// data, not that parser, is the reference). Every URL the crawler requests
// must come back unchanged from that parser: what the crawler sends is
// what a browser given that URL would send. And the link forms in
// linkFormsBeyondData, which this version of the data does not cover, are
// judged as the data's cases are, with that parser's reading as the
// browser's.
func TestWHATWGURLTestData(t *testing.T) {
	applied := map[string]int{}
	n, total, nlnwaDiffers := 0, 0, 0
	for _, c := range loadURLTestData(t) {
		total++
		if nl := nlnwaCase(c.Input, c.Base); nl.Failure != c.Failure || !c.Failure && nl.Href != c.Href {
			nlnwaDiffers++
			t.Logf("%s: the data says %s, %s's parser %s (not a failure of this test: the data is the reference)",
				caseLabel(c), describe(c), whatwgModule, describe(nl))
		}
		if !isHTTP(strings.TrimSpace(c.Input)) && (c.Base == nil || !isHTTP(*c.Base)) {
			continue
		}
		n++
		judge(t, c, applied)
	}
	if n < 400 {
		t.Fatalf("only %d http(s) cases: is %s's testdata/urltestdata.json whole?", n, whatwgModule)
	}
	beyond := map[string]int{}
	for _, l := range linkFormsBeyondData {
		judge(t, nlnwaCase(l.input, l.base), beyond)
	}
	// Every listed reason is still needed: one neither the data nor the
	// link forms below call for is taken out of the lists rather than left
	// to excuse a regression.
	for _, s := range sameResource {
		if k := "same resource: " + s.name; applied[k]+beyond[k] == 0 {
			t.Errorf("normalisation %q never applied: remove it", s.name)
		}
	}
	for _, r := range refusals {
		if k := "refused: " + r.name; applied[k]+beyond[k] == 0 {
			t.Errorf("refusal %q never applied: remove it", r.name)
		}
	}
	logCounts(t, applied)
	t.Logf("%d http(s) cases of %d; %s's parser differs from the data on %d", n, total, whatwgModule, nlnwaDiffers)
	logCounts(t, beyond)
	t.Logf("%d link forms beyond the data, read by %s's parser", len(linkFormsBeyondData), whatwgModule)
}

// linkFormsBeyondData are links the crawler follows by rules of the
// standard that the data in nlnwa/whatwg-url v0.6.2 has no http(s) case
// for (wpt added some later: any number of slashes and backslashes before a
// scheme-relative host, a dot segment just before the query, a backslash
// after credentials), and forms this project's own changes turned on. The
// browser's reading is nlnwa's parser's.
var linkFormsBeyondData = []struct{ input, base string }{
	{"///other.example/x", "http://example.com/dir/page"},
	{"////other.example", "http://example.com/dir/page"},
	{`///\//\other.example/a/../b`, "http://example.com/dir/page"},
	{`/\/\//other.example/../x`, "https://example.com/dir/page"},
	{"///other.example/a/../../b/../../", "http://example.com/"},
	{`\\\other.example\a\..\b`, "http://example.com/dir/page"},
	{"https:other.example/x", "http://example.com/dir/page"},
	{"http:x/../y", "http://example.com/dir/page"},
	{"http:", "http://example.com/dir/page?q"},
	{":a", "http://example.com/dir/page"},
	{"https://other.example/a/b/%2E%2e?q", ""},
	{"https://other.example/a/b/.%2e#f", ""},
	{"http://other.example/a/b/..?", ""},
	{"http://user:pw@other.example\\", ""},
	{"http://:pw@other.example/", ""},
	{"/%7e%41x?%7e", "http://example.com/dir/page"},
	{"?'\"<> x", "http://example.com/dir/page"},
	{"//0x7f.1/", "http://example.com/dir/page"},
	{"//2130706433/x", "http://example.com/dir/page"},
	{"//1.2.3.4.5/", "http://example.com/dir/page"},
	{"//other.example:0/", "http://example.com/dir/page"},
	{"//other.example:00080/x", "http://example.com/dir/page"},
	{"//[::1]/", "http://example.com/dir/page"},
	{"/a%zz/b", "http://example.com/dir/page"},
	{"//a&b.example/", "http://example.com/dir/page"},
	{"//OTHER.%65xample/x", "http://example.com/dir/page"},
	{" \t//other.example/a\n/b\r ", "http://example.com/dir/page"},
	{"http://other.example/a\tb", ""},
	{"http:other.example/x", ""},
	{"mailto:x@example.com", "http://example.com/dir/page"},
	{"javascript:void(0)", "http://example.com/dir/page"},
}

// judge checks the crawler against one case (the data's, or nlnwa's
// parser's reading of a link form) and counts the outcome in applied.
func judge(t *testing.T, c urlTestCase, applied map[string]int) {
	t.Helper()
	var got *url.URL
	var ok bool
	if c.Base != nil && isHTTP(*c.Base) {
		b, err := url.Parse(*c.Base)
		if err != nil {
			t.Fatalf("base %q: %v", *c.Base, err)
		}
		got, ok = Resolve(b, c.Input)
	} else {
		got, ok = Absolute(c.Input)
	}
	label := caseLabel(c)
	if ok {
		if u, err := whatwg.Parse(got.String()); err != nil || u.Href(false) != got.String() {
			t.Errorf("%s: the crawler requests %s, which %s's parser reads as %v (%v)", label, got, whatwgModule, u, err)
		}
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
			return
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
			return
		}
		if len(steps) == 0 {
			applied["identical"]++
		}
		for _, s := range steps {
			applied["same resource: "+s]++
		}
	}
}

// nlnwaCase is what nlnwa/whatwg-url's parser makes of input against base
// (none if base is nil or empty), in the data's terms.
func nlnwaCase(input string, base any) urlTestCase {
	c := urlTestCase{Input: input}
	var u *whatwg.Url
	var err error
	switch b := base.(type) {
	case *string:
		c.Base = b
	case string:
		if b != "" {
			c.Base = &b
		}
	}
	if c.Base != nil {
		u, err = whatwg.ParseRef(*c.Base, input)
	} else {
		u, err = whatwg.Parse(input)
	}
	if err != nil {
		c.Failure = true
		return c
	}
	c.Href, c.Username, c.Password, c.Hostname, c.Port = u.Href(false), u.Username(), u.Password(), u.Hostname(), u.Port()
	return c
}

func caseLabel(c urlTestCase) string {
	label := "input " + strconvQuote(c.Input)
	if c.Base != nil {
		label += " against " + strconvQuote(*c.Base)
	}
	return label
}

func describe(c urlTestCase) string {
	if c.Failure {
		return "fails"
	}
	return strconvQuote(c.Href)
}

func logCounts(t *testing.T, counts map[string]int) {
	t.Helper()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%4d %s", counts[k], k)
	}
}

func isHTTP(s string) bool {
	scheme, _, ok := splitScheme(s)
	return ok && isSpecial(scheme)
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
