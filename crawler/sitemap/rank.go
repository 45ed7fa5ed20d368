package sitemap

import (
	"cmp"
	"slices"
)

// Ranking keeps the n entries that come first in the order the crawler
// spends its budget on sitemap URLs:
//
//  1. higher <priority> first (DefaultPriority when absent or invalid);
//  2. on a tie, newer <lastmod> first (none counts as oldest);
//  3. then the order the entries were added in (sitemap order, the
//     sitemaps in the order they were read).
//
// An entry added again (the same Loc) keeps its better place. Memory is
// n entries whatever is added.
type Ranking struct {
	n       int
	added   int
	entries []ranked // best first, at most n
}

type ranked struct {
	Entry
	seq int
}

// NewRanking keeps the best n entries.
func NewRanking(n int) *Ranking { return &Ranking{n: max(n, 0)} }

// compare orders two entries, best first.
func compare(a, b ranked) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := b.LastMod.Compare(a.LastMod); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// Add offers an entry; Loc identifies it.
func (r *Ranking) Add(e Entry) {
	x := ranked{e, r.added}
	r.added++
	if i := slices.IndexFunc(r.entries, func(o ranked) bool { return o.Loc == e.Loc }); i >= 0 {
		if compare(x, r.entries[i]) >= 0 {
			return
		}
		r.entries = slices.Delete(r.entries, i, i+1)
	}
	i, _ := slices.BinarySearchFunc(r.entries, x, compare)
	if i >= r.n {
		return
	}
	r.entries = slices.Insert(r.entries, i, x)
	if len(r.entries) > r.n {
		r.entries = r.entries[:r.n]
	}
}

// Entries returns the kept entries, best first.
func (r *Ranking) Entries() []Entry {
	out := make([]Entry, len(r.entries))
	for i, x := range r.entries {
		out[i] = x.Entry
	}
	return out
}
