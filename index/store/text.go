package store

import (
	"strings"
	"sync"
	"unicode"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/dutch"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/italian"
	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Both backends index and query the same normalised words, produced here,
// rather than each running its own tokenizer over raw text: SQLite's and
// PostgreSQL's parsers disagree on e-mail addresses, host names, hyphens and
// diacritics, and raw user input would reach their query syntax.

// MaxTerms is how many words of a query are used.
const MaxTerms = 16

// Words splits text into lower-case words: runs of letters, digits and
// combining marks. Everything else separates words, so no operator or quote
// of any query language survives.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))
	})
}

// Terms returns the distinct folded words of a query, at most MaxTerms of
// them. An empty result means the query has nothing to search for.
func Terms(query string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range Words(query) {
		w = Fold(w)
		if w == "" || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == MaxTerms {
			break
		}
	}
	return out
}

// Fold makes a word case- and accent-insensitive, the same way for every
// script: Unicode case folding (ß → ss, Σ/ς → σ), then canonical
// decomposition with the combining marks dropped (káva → kava, città →
// citta, й → и). A word made only of marks folds to "".
func Fold(w string) string {
	if isASCIILower(w) {
		return w // the common case, without the transformer's allocations
	}
	t := transform.Chain(cases.Fold(), norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, w)
	if err != nil {
		// Only on invalid input, which Clean has already replaced.
		return strings.ToLower(w)
	}
	return out
}

func isASCIILower(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// stemmers are the Snowball stemmers of the bot's languages that have one.
// Slovak and Bulgarian have none in Snowball; their pages are folded only.
// More languages would cost every query one more index lookup per word
// (see QueryTokens), so only languages the bot meets are here.
var stemmers = map[string]func(*snowballstem.Env) bool{
	"en": english.Stem,
	"nl": dutch.Stem,
	"it": italian.Stem,
}

// StemLanguages lists the languages with a stemmer, in the order their
// tokens are tried.
var StemLanguages = []string{"en", "it", "nl"}

// StemLanguage returns the stemmer language of a page language tag
// ("en-gb" → "en"), or "" when it has none.
func StemLanguage(lang string) string {
	base, _, _ := strings.Cut(strings.ToLower(lang), "-")
	if _, ok := stemmers[base]; ok {
		return base
	}
	return ""
}

var envs = sync.Pool{New: func() any { return snowballstem.NewEnv("") }}

// Stem returns the Snowball stem of a folded word in language lang (a
// StemLanguages entry), folded again: stemming folded words on both sides
// means a query without accents stems exactly like the page's word.
func Stem(lang, folded string) string {
	env := envs.Get().(*snowballstem.Env)
	defer envs.Put(env)
	env.SetCurrent(folded)
	stemmers[lang](env)
	return Fold(env.Current())
}

// Token is what the index keys on: a folded word, or on pages of a stemmed
// language a language-tagged stem ("en:run"). The colon can never be part
// of a word, so the two kinds cannot collide.
func stemToken(lang, folded string) string { return lang + ":" + Stem(lang, folded) }

// QueryTokens returns the tokens a folded query term matches: the word
// itself (on pages without a stemmer) and its stem in every stemmed
// language (a query has no language of its own).
func QueryTokens(term string) []string {
	out := []string{term}
	for _, l := range StemLanguages {
		out = append(out, stemToken(l, term))
	}
	return out
}

// Field weights: each is larger than all lighter ones together, so a word
// in the title outranks one in headings, anchors and description at once.
const (
	WeightTitle       = 8
	WeightHeadings    = 4
	WeightAnchors     = 2
	WeightDescription = 1
	// scoreShift leaves room below the field bits for the tie-breaker.
	scoreShift = 20
)

// Postings returns the index entries of a page, external anchors
// included: token → score. The score is precomputed so that a search reads
// the best pages of a token in index order. Its high bits are the sum of
// the weights of the fields holding the token; below them, the share of
// the heaviest such field that the token fills, so "Otter" outranks
// "Otter habitats in the north".
func Postings(p Page) map[string]int64 {
	lang := StemLanguage(p.Lang)
	token := func(w string) string {
		f := Fold(w)
		if f == "" || lang == "" {
			return f
		}
		return stemToken(lang, f)
	}
	fields := []struct {
		weight int64
		texts  [][]string
	}{
		{WeightTitle, [][]string{{p.Title}}},
		{WeightHeadings, [][]string{p.H1, p.H2, p.H3}},
		{WeightAnchors, [][]string{p.Anchors, p.ExternalAnchors}},
		{WeightDescription, [][]string{{p.Description}}},
	}
	out := map[string]int64{}
	for _, f := range fields {
		count, total := map[string]int{}, 0
		for _, l := range f.texts {
			for _, s := range l {
				for _, w := range Words(s) {
					if t := token(w); t != "" {
						count[t]++
						total++
					}
				}
			}
		}
		for t, n := range count {
			if _, seen := out[t]; !seen {
				// Fields come heaviest first: the first one holding t
				// sets the tie-breaker.
				out[t] = int64(n) * (1<<scoreShift - 1) / int64(total)
			}
			out[t] += f.weight << scoreShift
		}
	}
	return out
}

// MergeAnchors returns the distinct texts of external, in order, without
// those the page already has from its own site, capped at
// MaxExternalAnchors.
func MergeAnchors(own, external []string) []string {
	seen := map[string]bool{}
	for _, a := range own {
		seen[a] = true
	}
	var out []string
	for _, a := range external {
		if seen[a] || a == "" {
			continue
		}
		seen[a] = true
		out = append(out, a)
		if len(out) == MaxExternalAnchors {
			break
		}
	}
	return out
}
