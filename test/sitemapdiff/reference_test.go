// Package sitemapdiff checks the crawler's reading of sitemaps against an
// independent implementation, npm `sitemap` (testdata/npm), over a corpus of
// sitemap bodies (testdata/corpus), and crawls every body end to end.
// README.md beside this file says how.
package sitemapdiff

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/sitemap"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

const (
	corpusDir = "testdata/corpus"
	npmDir    = "testdata/npm"
	// site is the origin every corpus body is written for; the crawl tests
	// serve each body with it replaced by the test server's.
	site = "http://site.test"
)

// reading is what one reader makes of one body: its form, and the URLs it
// names where the protocol puts one, each as the crawler would request it
// (sitemap.Named), in document order.
type reading struct {
	Kind string   // "urlset", "index", "text" or "none"
	URLs []string // a URL the crawler cannot use is "unusable: " and its href
	Err  string
}

// corpus lists the corpus's files, sorted.
func corpus(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) < 60 {
		t.Fatalf("%d bodies in %s: the corpus is at least 60", len(names), corpusDir)
	}
	return names
}

// reference runs the npm reader (testdata/npm/reference.js) over every
// body in dir. Without Node or the installed package (make sitemapdiff-deps
// installs it, make test first) the test is skipped, or fails under CI=true.
func reference(t *testing.T, dir string) map[string]reading {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("cannot run: no node on PATH (Node 20 or later runs the reference reader)")
		}
		t.Skip("no node on PATH (with CI=true this is a failure)")
	}
	testutil.BuiltTool(t, ".", filepath.Join(npmDir, "node_modules", "sitemap", "package.json"), "sitemapdiff-deps")
	cmd := exec.Command(node, "reference.js", dir)
	cmd.Dir = npmDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference reader: %v\n%s", err, stderr.Bytes())
	}
	var raw map[string]struct {
		Kind  string   `json:"kind"`
		URLs  []string `json:"urls"`
		Error string   `json:"error"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatalf("reference reader's output: %v", err)
	}
	res := map[string]reading{}
	for name, r := range raw {
		got := reading{Kind: r.Kind, Err: r.Error}
		for _, href := range r.URLs {
			got.URLs = append(got.URLs, named(href))
		}
		res[name] = got
	}
	return res
}

// named is the key a URL is compared by: the URL the crawler requests for
// it. The reference's hrefs are the WHATWG parser's, which
// crawler/urlnorm's TestWHATWGURLTestData shows the crawler reads as the
// same resource.
func named(loc string) string {
	if u, ok := sitemap.Named(loc); ok {
		return u.String()
	}
	return "unusable: " + loc
}

// project reads a body as the crawler does (crawler/sitemap's decoder,
// sitemap.Named for every entry).
func project(body []byte) reading {
	d := sitemap.NewDecoder(bytes.NewReader(body))
	var r reading
	for {
		e, err := d.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.Err = err.Error()
			}
			break
		}
		if u, ok := sitemap.Named(e.Loc); ok {
			r.URLs = append(r.URLs, u.String())
		}
	}
	r.Kind = map[sitemap.Kind]string{sitemap.URLSet: "urlset", sitemap.Index: "index", sitemap.Text: "text"}[d.Kind()]
	if r.Kind == "" {
		r.Kind = "none"
	}
	return r
}

// difference is where two readings of a body part: the URLs only one of
// them names (as many times as it names them more often), and their forms.
type difference struct {
	onlyRef, onlyProject []string
	kinds                string
}

func (d difference) none() bool {
	return len(d.onlyRef) == 0 && len(d.onlyProject) == 0 && d.kinds == ""
}

func compare(ref, proj reading) difference {
	var d difference
	d.onlyRef = minus(ref.URLs, proj.URLs)
	d.onlyProject = minus(proj.URLs, ref.URLs)
	// Forms matter where both name URLs: one would request as a page
	// what the other requests as a sitemap.
	if ref.Kind != proj.Kind && len(ref.URLs) > 0 && len(proj.URLs) > 0 {
		d.kinds = "npm " + ref.Kind + ", crawler " + proj.Kind
	}
	return d
}

// minus is a without b, counting repeats.
func minus(a, b []string) []string {
	left := slices.Clone(b)
	var out []string
	for _, x := range a {
		if i := slices.Index(left, x); i >= 0 {
			left = slices.Delete(left, i, i+1)
		} else {
			out = append(out, x)
		}
	}
	return out
}
