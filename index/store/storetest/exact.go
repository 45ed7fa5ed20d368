package storetest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store"
)

// testSmallCorpus writes the 20,000-page corpus and checks every answer
// against a brute-force ranking of all pages: the bounded reads of a
// search must never change what it finds or its order.
func testSmallCorpus(t *testing.T, s store.Store) {
	var hosts []string
	start := time.Now()
	if err := CorpusSmall.Generate(func(d store.SiteDoc) error {
		hosts = append(hosts, store.Host(d.Site))
		return s.ReplaceSite(ctx, d)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pages written in %s", CorpusSmall.Pages(), time.Since(start).Round(time.Millisecond))
	// The pages as stored, external anchors included: what a search sees.
	var pages []store.SitePage
	for _, h := range hosts {
		pages = append(pages, pagesOf(t, s, h)...)
	}
	if len(pages) != CorpusSmall.Pages() {
		t.Fatalf("corpus has %d pages, want %d", len(pages), CorpusSmall.Pages())
	}
	postings := make([]map[string]int64, len(pages))
	for i, p := range pages {
		postings[i] = store.Postings(p.Page)
	}
	queries := []string{CommonWord + " " + Word("en", 3), CommonWord + " zzzznothing"}
	for _, q := range QueryMix() {
		queries = append(queries, q.Text)
	}
	// Random queries of one to three words of one language, from common
	// to rare, in every inflection.
	rng := rand.New(rand.NewPCG(7, 7))
	for range 60 {
		var words []string
		l := languages[rng.IntN(len(languages))]
		for range 1 + rng.IntN(3) {
			words = append(words, l.word(rng.IntN(1<<(1+rng.IntN(11))))+l.inflections[rng.IntN(len(l.inflections))])
		}
		queries = append(queries, strings.Join(words, " "))
	}
	refs := make([][]scored, len(queries))
	matched := 0
	for i, q := range queries {
		if refs[i] = bruteForce(pages, postings, q); len(refs[i]) > 0 {
			matched++
		}
	}
	check := func(bound string) {
		for i, q := range queries {
			for _, limit := range []int{store.DefaultLimit, store.MaxLimit} {
				res, err := s.Search(ctx, q, limit)
				if err != nil {
					t.Fatalf("Search(%q): %v", q, err)
				}
				if err := sameRanking(res, refs[i], limit); err != nil {
					t.Errorf("Search(%q, %d), %s: %v", q, limit, bound, err)
				}
			}
		}
	}
	check("default bounds")
	// At 20,000 pages most lists fit in one read; a backend that can
	// read less at first is made to, so the threshold algorithm's later
	// rounds and its pruning are checked too.
	if b, ok := s.(interface{ SetFirstBound(int) }); ok {
		for _, n := range []int{1, 30} {
			b.SetFirstBound(n)
			check(fmt.Sprintf("first bound %d", n))
		}
		b.SetFirstBound(0)
	}
	t.Logf("%d of %d queries match", matched, len(queries))
	if matched < len(queries)/3 {
		t.Errorf("only %d of %d queries match anything: the corpus or the queries are wrong", matched, len(queries))
	}
}

// scored is a page of the brute-force ranking.
type scored struct {
	url   string
	score int64
}

// bruteForce scores every page for q from its postings, as the store
// defines matching (every term, by its word or a stem in any language),
// best first, ties by URL.
func bruteForce(pages []store.SitePage, postings []map[string]int64, q string) []scored {
	var out []scored
	terms := store.Terms(q)
	for i, p := range pages {
		var total int64
		all := len(terms) > 0
		for _, term := range terms {
			var best int64
			for _, tok := range store.QueryTokens(term) {
				best = max(best, postings[i][tok])
			}
			if best == 0 {
				all = false
				break
			}
			total += best
		}
		if all {
			out = append(out, scored{p.URL, total})
		}
	}
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.url, b.url)
	})
	return out
}

// sameRanking checks res against the brute-force ranking: the same number
// of results, every page that scores above the last one returned, and
// among pages tied with it (which of them make the cut is by age in the
// index) only tied pages, all in URL order.
func sameRanking(res []store.Result, ref []scored, limit int) error {
	if want := min(limit, len(ref)); len(res) != want {
		return fmt.Errorf("%d results, want %d", len(res), want)
	}
	if len(res) == 0 {
		return nil
	}
	score := map[string]int64{}
	for _, r := range ref {
		score[r.url] = r.score
	}
	last := ref[len(res)-1].score
	got := map[string]bool{}
	for i, r := range res {
		sc, ok := score[r.URL]
		if !ok {
			return fmt.Errorf("result %d, %s, does not match the query", i, r.URL)
		}
		if sc < last {
			return fmt.Errorf("result %d, %s, scores %d, below the cut at %d", i, r.URL, sc, last)
		}
		if i > 0 {
			prev := res[i-1]
			if ps := score[prev.URL]; ps < sc || ps == sc && prev.URL > r.URL {
				return fmt.Errorf("results %d and %d out of order: %s (%d) before %s (%d)", i-1, i, prev.URL, ps, r.URL, sc)
			}
		}
		got[r.URL] = true
	}
	for _, r := range ref {
		if r.score > last && !got[r.url] {
			return fmt.Errorf("%s scores %d, above the cut at %d, and is missing", r.url, r.score, last)
		}
	}
	return nil
}
