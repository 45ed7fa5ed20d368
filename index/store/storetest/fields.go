package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/index/store"
)

// storedColumns is every column a backend may have, per table. The bot page
// promises that per page only the title, meta description, h1–h3
// headings, URL and the texts of links pointing to it are kept; everything
// else here is bookkeeping. A new column must be added here on purpose, and
// a column for page text must never be.
var storedColumns = map[string][]string{
	"sites": {"site", "host", "source", "crawled_at", "run",
		"bytes_received", "pages_unchanged"}, // the crawl's stats
	"pages": {"id", "site", "url", "status_code", "title", "description", "h1", "h2", "h3",
		"anchors", "ext_anchors", "fetched_at",
		"lang",                   // the page's language tag: metadata, never searched
		"etag", "last_modified"}, // the page's validators, sent back by the next crawl
	"links": {"source_site", "target_site", "target_url", "ord", "anchor"},
	// The search index: folded words (or language-tagged stems) of the
	// fields above, with a score.
	"postings": {"term", "page_id", "score"},
	// PostgreSQL: which migrations ran.
	"index_schema_migrations": {"version", "applied_at"},
}

// bodyMarker stands for a page's body text. It is in no field a SiteDoc
// can carry, so it can only reach the database if something stores page
// text through a side door; the test feeds it in every way a caller could
// (as a page's neighbour fields) and looks for it everywhere.
const bodyMarker = "zqxbodytextmarker"

func testOnlyPromisedFields(t *testing.T, b Backend) {
	s := b.Open(t)
	a := store.SiteDoc{Source: "crawl/a", Site: "https://a.example:443", CrawledAt: t0, Pages: []store.Page{{
		URL: "https://a.example/page", StatusCode: 200, Title: "Titleword", Description: "Descriptionword",
		H1: []string{"Hone"}, H2: []string{"Htwo"}, H3: []string{"Hthree"}, Anchors: []string{"Ownanchor"},
		// The store must ignore what callers put here: it computes them.
		ExternalAnchors: []string{bodyMarker},
		FetchedAt:       t0,
		Lang:            "en",
	}}, Links: []store.Link{{URL: "https://b.example/", Anchors: []string{"Linkanchor"}}}}
	replace(t, s, a)
	replace(t, s, store.SiteDoc{Source: "crawl/b", Site: "https://b.example:443", Pages: []store.Page{{URL: "https://b.example/", Title: "Btitle"}}})

	allowed := map[string]bool{}
	for _, text := range []string{a.Source, a.Site, "crawl/b", "https://b.example:443", "https://a.example/page", "https://b.example/",
		"Titleword Descriptionword Hone Htwo Hthree Ownanchor Linkanchor Btitle"} {
		for _, w := range store.Words(text) {
			// The postings hold the word as English stems it ("en:hone").
			allowed[w], allowed[store.Stem("en", w)] = true, true
		}
	}
	allowed["en"] = true // the page's language tag
	dump := b.Dump(t, s)
	for _, want := range []string{"sites", "pages", "links"} {
		if _, ok := dump[want]; !ok {
			t.Errorf("dump has no table %s; tables: %v", want, keys(dump))
		}
	}
	for name, table := range dump {
		cols, known := storedColumns[name]
		if !known {
			t.Errorf("table %s is not among the tables a backend may have", name)
			continue
		}
		for _, c := range table.Columns {
			if !slices.Contains(cols, c) {
				t.Errorf("column %s.%s is not among the promised fields", name, c)
			}
		}
		for _, row := range table.Rows {
			for i, v := range row {
				text := fmt.Sprint(v)
				if strings.Contains(strings.ToLower(text), bodyMarker) {
					t.Errorf("%s.%s holds the body text marker: %q", name, table.Columns[i], text)
				}
				str, isString := v.(string)
				if !isString {
					continue
				}
				for _, w := range store.Words(str) {
					if !allowed[w] && !isNumber(w) {
						t.Errorf("%s.%s holds %q, which comes from no promised field (value %q)", name, table.Columns[i], w, str)
					}
				}
			}
		}
	}
}

func isNumber(w string) bool {
	return strings.Trim(w, "0123456789") == ""
}

func keys(d Dump) []string {
	var out []string
	for k := range d {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TableNames returns the first column of every row of query: how a
// backend's Dump, or a test reading a whole database, lists its tables.
func TableNames(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	return tables
}

// DumpTables reads tables of db with the query selectAll returns for each,
// for a backend's Dump.
func DumpTables(t *testing.T, db *sql.DB, tables []string, selectAll func(table string) string) Dump {
	t.Helper()
	out := Dump{}
	for _, name := range tables {
		rows, err := db.QueryContext(context.Background(), selectAll(name))
		if err != nil {
			t.Fatalf("dump %s: %v", name, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		tab := Table{Columns: cols}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("dump %s: %v", name, err)
			}
			tab.Rows = append(tab.Rows, vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("dump %s: %v", name, err)
		}
		rows.Close()
		out[name] = tab
	}
	return out
}
