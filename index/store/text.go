package store

import (
	"strings"
	"unicode"
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

// Terms returns the distinct words of a query, at most MaxTerms of them.
// An empty result means the query has nothing to search for.
func Terms(query string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range Words(query) {
		if seen[w] {
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

// Document is a page's searchable text by weight class, each field a
// space-separated list of Words.
type Document struct {
	Title, Headings, Anchors, Description string
}

// DocumentOf builds the searchable text of a page, its external anchors
// included.
func DocumentOf(p Page) Document {
	return Document{
		Title:       joinWords([]string{p.Title}),
		Headings:    joinWords(p.H1, p.H2, p.H3),
		Anchors:     joinWords(p.Anchors, p.ExternalAnchors),
		Description: joinWords([]string{p.Description}),
	}
}

func joinWords(lists ...[]string) string {
	var words []string
	for _, l := range lists {
		for _, s := range l {
			words = append(words, Words(s)...)
		}
	}
	return strings.Join(words, " ")
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
