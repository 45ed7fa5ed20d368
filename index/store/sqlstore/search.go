package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lohisoft/crawl-operator/index/store"
)

// How a search reads postings. Every list is read best first from the
// (term, score DESC, page_id) index, so a word on every page costs what a
// rare one does: the first rows of one index range, never all matches.
const (
	// firstBound is how many postings of each query term a multi-word
	// search reads first; if they cannot prove the answer, it reads
	// boundGrowth times more, until the lists are complete.
	firstBound  = 1000
	boundGrowth = 8
	// idsPerQuery bounds the IN lists of one lookup.
	idsPerQuery = 500
)

// SetFirstBound replaces firstBound (0 restores it). Tests use a small one
// to drive every multi-word search through the threshold algorithm's later
// rounds on a corpus small enough to rank by brute force.
func (s *Store) SetFirstBound(n int) { s.firstBound.Store(int64(n)) }

// hit is a page and its score for a query.
type hit struct{ id, score int64 }

// better orders hits best first: higher score, then the older page (lower
// id), which both engines number in insertion order.
func better(a, b hit) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// termList is what was read of one query term: the best postings of each
// of its tokens, merged (a page scores the best of its tokens).
type termList struct {
	scores map[int64]int64
	// tokens are those with at least one posting.
	tokens []string
	// complete means every posting of the term was read.
	complete bool
	// ceiling bounds the score of any page not in scores.
	ceiling int64
}

// Search implements store.Store. A query term matches a page holding its
// folded word or, on a page in a stemmed language, its stem; every term
// must match. Pages are ranked by the sum of their terms' scores
// (store.Postings), ties by URL.
func (s *Store) Search(ctx context.Context, query string, limit int) ([]store.Result, error) {
	if err := store.CheckLimit(limit); err != nil {
		return nil, err
	}
	if len(query) > store.MaxQueryLength {
		return nil, fmt.Errorf("%w: query is longer than %d bytes", store.ErrBadQuery, store.MaxQueryLength)
	}
	terms := store.Terms(query)
	if len(terms) == 0 {
		return []store.Result{}, nil
	}
	tokens := make([][]string, len(terms))
	for i, t := range terms {
		tokens[i] = store.QueryTokens(t)
	}
	hits, err := s.rank(ctx, tokens, limit)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", terms, err)
	}
	out, err := s.results(ctx, hits)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", terms, err)
	}
	return out, nil
}

// rank returns the best k pages holding every term, exactly: the same
// pages as scoring every matching page would give. One term is the union
// of the top k of each of its tokens. Several terms follow the threshold
// algorithm: read the top of every list, score the pages seen exactly, and
// stop when the k-th of them beats the best any unseen page could reach
// (the sum of the lists' ceilings), or when one list is complete, since
// every match is then in it.
func (s *Store) rank(ctx context.Context, tokens [][]string, k int) ([]hit, error) {
	bound := k
	if len(tokens) > 1 {
		bound = max(k, firstBound)
		if b := s.firstBound.Load(); b > 0 {
			bound = max(k, int(b))
		}
	}
	for ; ; bound *= boundGrowth {
		lists := make([]termList, len(tokens))
		for i, alts := range tokens {
			l, err := s.top(ctx, alts, bound)
			if err != nil {
				return nil, err
			}
			lists[i] = l
		}
		if len(lists) == 1 {
			return best(lists[0].scores, k), nil
		}
		candidates, exact := candidatesOf(lists)
		scores, err := s.scoreAll(ctx, candidates, lists, k)
		if err != nil {
			return nil, err
		}
		top := best(scores, k)
		var threshold int64
		for _, l := range lists {
			threshold += l.ceiling
		}
		if exact || len(top) == k && top[k-1].score > threshold {
			return top, nil
		}
	}
}

// top reads the best bound postings of each token.
func (s *Store) top(ctx context.Context, alts []string, bound int) (termList, error) {
	l := termList{scores: map[int64]int64{}, complete: true}
	for _, t := range alts {
		rows, err := s.db.QueryContext(ctx, s.q("SELECT page_id, score FROM postings WHERE term = ? ORDER BY score DESC, page_id LIMIT ?"), t, bound)
		if err != nil {
			return termList{}, err
		}
		n, last := 0, int64(0)
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.id, &h.score); err != nil {
				rows.Close()
				return termList{}, err
			}
			l.scores[h.id] = max(l.scores[h.id], h.score)
			n, last = n+1, h.score
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return termList{}, err
		}
		if n > 0 {
			l.tokens = append(l.tokens, t)
		}
		if n == bound {
			l.complete = false
			l.ceiling = max(l.ceiling, last)
		}
	}
	return l, nil
}

// candidatesOf returns the pages to score exactly and whether they are
// certain to hold every match: the smallest complete list if there is
// one, else every page seen.
func candidatesOf(lists []termList) ([]int64, bool) {
	var smallest *termList
	for i := range lists {
		if lists[i].complete && (smallest == nil || len(lists[i].scores) < len(smallest.scores)) {
			smallest = &lists[i]
		}
	}
	seen := map[int64]bool{}
	for i := range lists {
		if smallest != nil && &lists[i] != smallest {
			continue
		}
		for id := range lists[i].scores {
			seen[id] = true
		}
	}
	ids := make([]int64, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, smallest != nil
}

// scoreAll returns the exact score of every candidate that holds all
// terms and could still make the top k, looking up on the primary key the
// postings the lists did not reach. A candidate whose score, with the
// ceiling of every list it is missing from, stays below the k-th of the
// candidates seen in every list is dropped unread: it cannot make the top
// k, and most of a common word's top pages lack the other words.
func (s *Store) scoreAll(ctx context.Context, candidates []int64, lists []termList, k int) (map[int64]int64, error) {
	known := make(map[int64]int64, len(candidates))
	var partial []int64
	var full []hit
	for _, id := range candidates {
		var sum int64
		complete, matches := true, true
		for _, l := range lists {
			sc, ok := l.scores[id]
			switch {
			case ok:
				sum += sc
			case l.complete:
				matches = false // the term is not on the page
			default:
				complete = false
			}
		}
		if !matches {
			continue
		}
		known[id] = sum
		if complete {
			full = append(full, hit{id, sum})
		} else {
			partial = append(partial, id)
		}
	}
	kth := int64(-1)
	if len(full) >= k {
		slices.SortFunc(full, better)
		kth = full[k-1].score
	}
	total := make(map[int64]int64, len(full)+len(partial))
	for _, h := range full {
		total[h.id] = h.score
	}
	missing := make([][]int64, len(lists))
	for _, id := range partial {
		ceiling := known[id]
		for _, l := range lists {
			if _, ok := l.scores[id]; !ok {
				ceiling += l.ceiling
			}
		}
		if ceiling < kth {
			continue
		}
		total[id] = known[id]
		for i, l := range lists {
			if _, ok := l.scores[id]; !ok {
				missing[i] = append(missing[i], id)
			}
		}
	}
	lacking := map[int64]bool{}
	for i, l := range lists {
		found, err := s.lookup(ctx, l.tokens, missing[i])
		if err != nil {
			return nil, err
		}
		for _, id := range missing[i] {
			if sc, ok := found[id]; ok {
				total[id] += sc
			} else {
				lacking[id] = true
			}
		}
	}
	for id := range lacking {
		delete(total, id)
	}
	return total, nil
}

// lookup returns the best score of tokens on each of ids that has one.
func (s *Store) lookup(ctx context.Context, tokens []string, ids []int64) (map[int64]int64, error) {
	out := map[int64]int64{}
	if len(tokens) == 0 {
		return out, nil
	}
	for chunk := range slices.Chunk(ids, idsPerQuery) {
		args := make([]any, 0, len(tokens)+len(chunk))
		for _, t := range tokens {
			args = append(args, t)
		}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.db.QueryContext(ctx, s.q("SELECT page_id, score FROM postings WHERE term IN ("+placeholders(len(tokens))+
			") AND page_id IN ("+placeholders(len(chunk))+")"), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.id, &h.score); err != nil {
				rows.Close()
				return nil, err
			}
			out[h.id] = max(out[h.id], h.score)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// best returns the k best hits of scores, best first.
func best(scores map[int64]int64, k int) []hit {
	hits := make([]hit, 0, len(scores))
	for id, sc := range scores {
		hits = append(hits, hit{id, sc})
	}
	slices.SortFunc(hits, better)
	return hits[:min(k, len(hits))]
}

// results reads the pages of hits, ordered by score, ties by URL. A page
// deleted since it was ranked is left out.
func (s *Store) results(ctx context.Context, hits []hit) ([]store.Result, error) {
	out := []store.Result{}
	if len(hits) == 0 {
		return out, nil
	}
	args := make([]any, len(hits))
	score := map[int64]int64{}
	for i, h := range hits {
		args[i] = h.id
		score[h.id] = h.score
	}
	rows, err := s.db.QueryContext(ctx, s.q("SELECT id, url, title, description, site, lang FROM pages WHERE id IN ("+placeholders(len(hits))+")"), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := map[string]int64{}
	for rows.Next() {
		var id int64
		var r store.Result
		if err := rows.Scan(&id, &r.URL, &r.Title, &r.Description, &r.Site, &r.Lang); err != nil {
			return nil, err
		}
		ids[r.URL] = id
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b store.Result) int {
		if c := cmp.Compare(score[ids[b.URL]], score[ids[a.URL]]); c != 0 {
			return c
		}
		return strings.Compare(a.URL, b.URL)
	})
	return out, rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
