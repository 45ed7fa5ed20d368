package store

import (
	"maps"
	"slices"
	"testing"
)

func TestFold(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kava", "kava"},
		{"káva", "kava"},
		{"KÁVA", "kava"},
		{"città", "citta"},
		{"Хляб", "хляб"},
		{"ХЛЯБ", "хляб"},
		{"vyhľadávač", "vyhladavac"},
		{"ĽUBOŠ", "lubos"},
		{"één", "een"},
		{"Straße", "strasse"},
		{"ΣΟΦΟΣ", "σοφοσ"},
		{"σοφος", "σοφοσ"},
		{"İstanbul", "istanbul"},
		{"e\u0301", "e"},             // decomposed accent
		{"e\u0301\u0301\u0301", "e"}, // stacked marks (a hostile title's zalgo)
		{"\u0301\u0301", ""},         // marks only: nothing to search for
		{"йод", "иод"},               // the breve is a mark too: one rule for every script
		{"abc123", "abc123"},
	} {
		if got := Fold(tc.in); got != tc.want {
			t.Errorf("Fold(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTermsAreFolded(t *testing.T) {
	if got := Terms("Káva KAVA kava \u0301 Città"); !slices.Equal(got, []string{"kava", "citta"}) {
		t.Errorf("Terms = %q, want [kava citta]", got)
	}
}

func TestStemLanguage(t *testing.T) {
	for in, want := range map[string]string{
		"en": "en", "en-gb": "en", "EN-US": "en", "nl-be": "nl", "it": "it",
		"sk": "", "bg": "", "": "", "english": "", "e": "", "de": "",
	} {
		if got := StemLanguage(in); got != want {
			t.Errorf("StemLanguage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQueryTokens(t *testing.T) {
	got := QueryTokens("running")
	if want := []string{"running", "en:run", "it:running", "nl:running"}; !slices.Equal(got, want) {
		t.Errorf("QueryTokens(running) = %q, want %q", got, want)
	}
}

func TestPostings(t *testing.T) {
	const unit = 1 << scoreShift
	for _, tc := range []struct {
		name string
		page Page
		want map[string]int64 // field bits only; the tie-breaker is checked below
	}{
		{"no language: folded words", Page{Title: "Káva Otter", Description: "otter"},
			map[string]int64{"kava": 8, "otter": 9}},
		{"every field", Page{Title: "a", H2: []string{"b"}, Anchors: []string{"c"}, ExternalAnchors: []string{"d"}, Description: "e a"},
			map[string]int64{"a": 9, "b": 4, "c": 2, "d": 2, "e": 1}},
		{"English: stems only", Page{Lang: "en-gb", Title: "Running runners", H1: []string{"run"}},
			map[string]int64{"en:run": 12, "en:runner": 8}},
		{"Italian folds before stemming", Page{Lang: "it", Title: "Città"},
			map[string]int64{"it:citt": 8}},
		{"Slovak has no stemmer", Page{Lang: "sk", Title: "Káva"},
			map[string]int64{"kava": 8}},
		{"marks only are no word", Page{Title: "\u0301 x"},
			map[string]int64{"x": 8}},
	} {
		got := Postings(tc.page)
		bits := map[string]int64{}
		for k, v := range got {
			bits[k] = v / unit
		}
		if !maps.Equal(bits, tc.want) {
			t.Errorf("%s: Postings field bits = %v, want %v", tc.name, bits, tc.want)
		}
	}
	// Below the field bits: the share of the field the word fills.
	short := Postings(Page{Title: "Otter"})["otter"]
	long := Postings(Page{Title: "Otter habitats in the north"})["otter"]
	twice := Postings(Page{Title: "Otter otter habitats in the north"})["otter"]
	if !(short > twice && twice > long && long > WeightTitle*unit) {
		t.Errorf("tie-breakers: short title %d, twice %d, long title %d; want short > twice > long > bare weight", short, twice, long)
	}
	// A word in the title alone beats one in every other field at once,
	// whatever the tie-breakers.
	title := Postings(Page{Title: "x " + "y y y y y y y y y"})["x"]
	rest := Postings(Page{H1: []string{"x"}, Anchors: []string{"x"}, Description: "x"})["x"]
	if title <= rest {
		t.Errorf("title-only score %d <= headings+anchors+description %d", title, rest)
	}
}
