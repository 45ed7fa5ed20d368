package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store"
)

// Corpus size of the search benchmark: 5,000 sites of 20 pages, the most a
// crawl keeps, so 100,000 pages.
const (
	BenchSites        = 5000
	BenchPagesPerSite = 20
	benchVocabulary   = 20000
	benchLinksPerSite = 10
)

// BenchmarkSearch fills s with the 100,000-page corpus once, then measures
// searches of words of different frequency. Words follow a Zipf law like
// real text, so "common" matches thousands of pages and "rare" a few.
func BenchmarkSearch(b *testing.B, s store.Store) {
	queries := []struct{ name, q string }{
		{"common-word", word(1)},
		{"mid-word", word(200)},
		{"rare-word", word(5000)},
		{"two-words", word(3) + " " + word(40)},
		{"no-match", "zzzzunknownword"},
	}
	texts := make([]string, len(queries))
	for i, q := range queries {
		texts[i] = q.q
	}
	start := time.Now()
	matching := FillCorpus(b, s, texts...)
	b.Logf("corpus of %d pages written in %s", BenchSites*BenchPagesPerSite, time.Since(start).Round(time.Second))
	for i, q := range queries {
		res, err := s.Search(ctx, q.q, store.DefaultLimit)
		if err != nil {
			b.Fatalf("Search(%q): %v", q.q, err)
		}
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Search(ctx, q.q, store.DefaultLimit); err != nil {
					b.Fatal(err)
				}
			}
			// After the loop: b.Loop starts the measurement afresh.
			b.ReportMetric(float64(len(res)), "results")
			b.ReportMetric(float64(matching[i]), "matching-pages")
		})
	}
}

// FillCorpus writes the benchmark corpus through ReplaceSite, the way the
// syncer writes, cross-site links included, and returns for each query how
// many pages contain all its words (link texts from other sites included).
// It is long because the corpus is defined in it, page shape and link
// pattern together, so a benchmark figure can be read against one place.
func FillCorpus(tb testing.TB, s store.Store, queries ...string) []int {
	// One bit per query word, per page: a page matches when its own fields
	// and the links into it together hold every word.
	terms := make([][]string, len(queries))
	for i, q := range queries {
		terms[i] = store.Terms(q)
	}
	masks := make([]map[string]uint64, len(queries))
	for i := range masks {
		masks[i] = map[string]uint64{}
	}
	mark := func(url string, texts ...string) {
		words := map[string]bool{}
		for _, t := range texts {
			for _, w := range store.Words(t) {
				words[w] = true
			}
		}
		for i, ts := range terms {
			for j, t := range ts {
				if words[t] {
					masks[i][url] |= 1 << j
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, benchVocabulary-1)
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = word(int(zipf.Uint64()))
		}
		return strings.Join(w, " ")
	}
	list := func(items, words int) []string {
		out := make([]string, items)
		for i := range out {
			out[i] = text(words)
		}
		return out
	}
	for i := range BenchSites {
		host := fmt.Sprintf("site%d.example", i)
		d := store.SiteDoc{Source: "bench/" + host, Site: "https://" + host + ":443", CrawledAt: t0}
		for j := range BenchPagesPerSite {
			p := store.Page{
				URL: fmt.Sprintf("https://%s/page/%d", host, j), StatusCode: 200,
				Title: text(6), Description: text(25),
				H1: list(1, 5), H2: list(3, 5), H3: list(2, 4), Anchors: list(2, 3),
				FetchedAt: t0,
			}
			mark(p.URL, slices.Concat([]string{p.Title, p.Description}, p.H1, p.H2, p.H3, p.Anchors)...)
			d.Pages = append(d.Pages, p)
		}
		for range benchLinksPerSite {
			other := rng.IntN(BenchSites)
			if other == i {
				continue
			}
			l := store.Link{
				URL:     fmt.Sprintf("https://site%d.example/page/%d", other, rng.IntN(BenchPagesPerSite)),
				Anchors: list(1, 3),
			}
			mark(l.URL, l.Anchors...)
			d.Links = append(d.Links, l)
		}
		if err := s.ReplaceSite(ctx, d); err != nil {
			tb.Fatalf("fill corpus: %v", err)
		}
	}
	counts := make([]int, len(queries))
	for i, ts := range terms {
		for _, m := range masks[i] {
			if len(ts) > 0 && m == 1<<len(ts)-1 {
				counts[i]++
			}
		}
	}
	return counts
}

// word returns the n-th word of the synthetic vocabulary: pronounceable,
// distinct, and made only of letters.
func word(n int) string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	var b strings.Builder
	for {
		b.WriteByte(cons[n%len(cons)])
		n /= len(cons)
		b.WriteByte(vows[n%len(vows)])
		n /= len(vows)
		if n == 0 {
			return b.String()
		}
	}
}
