package sitemapdiff

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docsPath is where the differences that stay are listed, with the
// protocol's reason for each.
const docsPath = "../../docs/crawler.md"

// documented reads the table of deliberate differences from docs/crawler.md:
// body → the two URL columns as written there.
func documented(t *testing.T) map[string][2]string {
	t.Helper()
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start, end := strings.Index(doc, "<!-- sitemapdiff -->"), strings.Index(doc, "<!-- /sitemapdiff -->")
	if start < 0 || end < start {
		t.Fatalf("%s has no <!-- sitemapdiff --> table", docsPath)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| (.*) \\| (.*) \\| (.*) \\|$")
	out := map[string][2]string{}
	for _, line := range strings.Split(doc[start:end], "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if strings.TrimSpace(m[4]) == "" {
			t.Errorf("%s: the difference for %s gives no reason", docsPath, m[1])
		}
		if _, dup := out[m[1]]; dup {
			t.Errorf("%s lists %s twice", docsPath, m[1])
		}
		out[m[1]] = [2]string{m[2], m[3]}
	}
	return out
}

// cell writes URLs as the table does.
func cell(urls []string) string {
	if len(urls) == 0 {
		return "—"
	}
	return "`" + strings.Join(urls, "` `") + "`"
}

// Every body of the corpus through the crawler's reader and npm `sitemap`:
// each URL one of them names where the other does not is either gone (the
// crawler fixed) or listed in docs/crawler.md with the protocol's reason.
// A new difference fails, and so does a listed one that no longer happens.
func TestSitemapDifferential(t *testing.T) {
	names := corpus(t)
	abs, err := filepath.Abs(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	ref := reference(t, abs)
	docs := documented(t)
	agree, differ := 0, 0
	var rows []string
	for _, name := range names {
		r, ok := ref[name]
		if !ok {
			t.Errorf("%s: the reference reader did not read it", name)
			continue
		}
		body, err := os.ReadFile(filepath.Join(corpusDir, name))
		if err != nil {
			t.Fatal(err)
		}
		d := compare(r, project(body))
		if d.kinds != "" {
			t.Errorf("%s: read as different forms (%s): a URL would be taken as a page by one and as a sitemap by the other", name, d.kinds)
		}
		want, listed := docs[name]
		delete(docs, name)
		got := [2]string{cell(d.onlyRef), cell(d.onlyProject)}
		switch {
		case d.none() && listed:
			t.Errorf("%s: listed in %s, but the readers now agree: take the row out", name, docsPath)
		case d.none():
			agree++
		case !listed || got != want:
			t.Errorf("%s: a difference %s does not list:\n  npm sitemap only: %s\n  crawler only:     %s", name, docsPath, got[0], got[1])
		default:
			differ++
		}
		if !d.none() {
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | |", name, got[0], got[1]))
		}
	}
	for name := range docs {
		t.Errorf("%s lists %s, which is not in the corpus", docsPath, name)
	}
	if t.Failed() {
		t.Logf("the rows as they are now (the reasons to be written):\n%s", strings.Join(rows, "\n"))
	}
	t.Logf("%d bodies: %d read alike, %d with a listed difference", len(names), agree, differ)
}
