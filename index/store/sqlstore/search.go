package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
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
	boundGrowth = 2
	// idsPerQuery bounds the pages of one lookup.
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
	// byLang holds the tokens with at least one posting, by language tag.
	byLang map[string]tokenRead
	// complete means every posting of the term was read.
	complete bool
	// ceiling bounds the score of any page not in scores.
	ceiling int64
}

// tokenRead is what was read of one token.
type tokenRead struct {
	token    string
	complete bool
	// ceiling bounds the token's score on any page not read.
	ceiling int64
}

// tagOf is the language tag of a token: "en" of "en:run", "" of a word.
// A page is indexed in one language's tokens, or in plain words when its
// language has no stemmer, so the token a page matched one term by tells
// which token of every other term it can hold.
func tagOf(token string) string {
	tag, _, found := strings.Cut(token, ":")
	if !found {
		return ""
	}
	return tag
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
		langs := map[int64]string{}
		for i, alts := range tokens {
			l, err := s.top(ctx, alts, bound, langs)
			if err != nil {
				return nil, err
			}
			lists[i] = l
		}
		if len(lists) == 1 {
			return best(lists[0].scores, k), nil
		}
		candidates, exact := candidatesOf(lists)
		scores, err := s.scoreAll(ctx, candidates, lists, langs, k)
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

// top reads the best bound postings of each token, noting in langs the
// language of every page read.
func (s *Store) top(ctx context.Context, alts []string, bound int, langs map[int64]string) (termList, error) {
	l := termList{scores: map[int64]int64{}, byLang: map[string]tokenRead{}, complete: true}
	for _, t := range alts {
		rows, err := s.db.QueryContext(ctx, s.q("SELECT page_id, score FROM postings WHERE term = ? ORDER BY score DESC, page_id LIMIT ?"), t, bound)
		if err != nil {
			return termList{}, err
		}
		n, last := 0, int64(0)
		tag := tagOf(t)
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.id, &h.score); err != nil {
				rows.Close()
				return termList{}, err
			}
			l.scores[h.id] = max(l.scores[h.id], h.score)
			langs[h.id] = tag
			n, last = n+1, h.score
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return termList{}, err
		}
		r := tokenRead{token: t, complete: n < bound}
		if !r.complete {
			r.ceiling = last
			l.complete = false
			l.ceiling = max(l.ceiling, last)
		}
		if n > 0 {
			l.byLang[tag] = r
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
// postings the lists did not reach: for each page only the token of its
// own language, and none where that token was read to the end (the page
// lacks the term). A candidate whose score, with the ceiling of every
// token it is missing from, stays below the k-th of the candidates seen
// in every list is dropped unread: it cannot make the top k, and most of
// a common word's top pages lack the other words.
func (s *Store) scoreAll(ctx context.Context, candidates []int64, lists []termList, langs map[int64]string, k int) (map[int64]int64, error) {
	type partialHit struct {
		id, known, ceiling int64
	}
	var full []hit
	var partial []partialHit
	for _, id := range candidates {
		var sum, ceiling int64
		complete, matches := true, true
		for _, l := range lists {
			if sc, ok := l.scores[id]; ok {
				sum += sc
				continue
			}
			r, ok := l.byLang[langs[id]]
			if !ok || r.complete {
				matches = false // the term is not on the page
				break
			}
			complete = false
			ceiling += r.ceiling
		}
		switch {
		case !matches:
		case complete:
			full = append(full, hit{id, sum})
		default:
			partial = append(partial, partialHit{id, sum, sum + ceiling})
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
	// The lookups, by token: each page needs the token of its language.
	missing := map[string][]int64{}
	for _, p := range partial {
		if p.ceiling < kth {
			continue
		}
		total[p.id] = p.known
		for _, l := range lists {
			if _, ok := l.scores[p.id]; !ok {
				t := l.byLang[langs[p.id]].token
				missing[t] = append(missing[t], p.id)
			}
		}
	}
	lacking := map[int64]bool{}
	for t, ids := range missing {
		found, err := s.lookup(ctx, t, ids)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
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

// lookup returns the score of token on each of ids that has it: one
// primary-key probe per page, as a correlated subquery over a VALUES
// list. The plainer "term = ? AND page_id IN (...)" makes PostgreSQL's
// planner scan the term's whole range of the other index (62 ms against
// 6.8 ms for 500 pages of a common word, measured on 1,000,000 pages), and
// an OR of (page_id, term) pairs costs it milliseconds of planning.
func (s *Store) lookup(ctx context.Context, token string, ids []int64) (map[int64]int64, error) {
	out := map[int64]int64{}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, idsPerQuery) {
		args := make([]any, 0, 1+len(chunk))
		args = append(args, token)
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.db.QueryContext(ctx, s.q("SELECT v.column1, (SELECT p.score FROM postings p WHERE p.page_id = v.column1 AND p.term = ?) FROM (VALUES "+
			strings.TrimSuffix(strings.Repeat("(CAST(? AS BIGINT)), ", len(chunk)), ", ")+") v"), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var score sql.NullInt64
			if err := rows.Scan(&id, &score); err != nil {
				rows.Close()
				return nil, err
			}
			if score.Valid {
				out[id] = score.Int64
			}
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
