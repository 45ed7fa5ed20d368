package storetest

import (
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/index/store"
)

// The bot meets pages in Dutch, Slovak, Bulgarian, Italian and English.
// Both backends must find them with or without accents, in any case, and
// through inflections where the page's language has a stemmer.

func testFolding(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/f", "https://f.example:443",
		store.Page{URL: "https://f.example/sk", Title: "Káva a čaj", Lang: "sk"},
		store.Page{URL: "https://f.example/it", Title: "La città eterna", Lang: "it"},
		store.Page{URL: "https://f.example/bg", Title: "Хляб и сол", Lang: "bg"},
		store.Page{URL: "https://f.example/nl", Title: "Één café", Lang: "nl"},
		// The same word decomposed (e + combining acute), as some editors
		// write it, and without a language.
		store.Page{URL: "https://f.example/nfd", Title: "cafe\u0301 NOIR"},
		store.Page{URL: "https://f.example/plain", Title: "kava"},
	))
	for q, want := range map[string][]string{
		"kava":       {"https://f.example/plain", "https://f.example/sk"},
		"KÁVA":       {"https://f.example/plain", "https://f.example/sk"},
		"caj":        {"https://f.example/sk"},
		"citta":      {"https://f.example/it"},
		"CITTÀ":      {"https://f.example/it"},
		"città":      {"https://f.example/it"},
		"хляб":       {"https://f.example/bg"},
		"ХЛЯБ":       {"https://f.example/bg"},
		"een":        {"https://f.example/nl"},
		"cafe":       {"https://f.example/nfd", "https://f.example/nl"},
		"café":       {"https://f.example/nfd", "https://f.example/nl"},
		"cafe\u0301": {"https://f.example/nfd", "https://f.example/nl"},
		"noir":       {"https://f.example/nfd"},
		// A word of marks alone searches for nothing rather than for all.
		"\u0301": nil,
	} {
		wantURLs(t, s, q, want...)
	}
}

func testStemming(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/st", "https://st.example:443",
		store.Page{URL: "https://st.example/en", Title: "Running shoes", Lang: "en-GB"},
		store.Page{URL: "https://st.example/nl", Title: "Boeken lezen", Lang: "nl"},
		store.Page{URL: "https://st.example/it", Title: "Gatti e cani", Lang: "it"},
		// No language, and a language without a stemmer: words match
		// exactly (after folding) and only so.
		store.Page{URL: "https://st.example/none", Title: "Runs shoe"},
		store.Page{URL: "https://st.example/sk", Title: "Mačky", Lang: "sk"},
	))
	for q, want := range map[string][]string{
		"run":          {"https://st.example/en"},
		"runs":         {"https://st.example/en", "https://st.example/none"},
		"RUNNING":      {"https://st.example/en"},
		"shoe":         {"https://st.example/en", "https://st.example/none"},
		"running shoe": {"https://st.example/en"},
		"boek":         {"https://st.example/nl"},
		"boeken":       {"https://st.example/nl"},
		"gatto":        {"https://st.example/it"},
		"cane":         {"https://st.example/it"},
		"macky":        {"https://st.example/sk"},
		"macka":        nil,
		// The language tag is metadata, not text.
		"en": nil, "gb": nil, "nl": nil,
	} {
		wantURLs(t, s, q, want...)
	}
	// A stem in the title still outranks the exact word in the description.
	replace(t, s, doc("ns/r2", "https://r2.example:443",
		store.Page{URL: "https://r2.example/desc", Title: "Shop", Description: "runners", Lang: "en"},
		store.Page{URL: "https://r2.example/title", Title: "The runner", Description: "x", Lang: "en"},
	))
	wantURLs(t, s, "runners", "https://r2.example/title", "https://r2.example/desc")
}

func testLanguageIsKept(t *testing.T, s store.Store) {
	replace(t, s, doc("ns/l", "https://l.example:443",
		store.Page{URL: "https://l.example/a", Title: "Alpha", Lang: "NL-be"},
		store.Page{URL: "https://l.example/b", Title: "Alpha", Lang: `en"><script>`},
		store.Page{URL: "https://l.example/c", Title: "Alpha", Lang: strings.Repeat("a", store.MaxLangLength+1)},
		store.Page{URL: "https://l.example/d", Title: "Alpha"},
	))
	want := map[string]string{"https://l.example/a": "nl-be", "https://l.example/b": "", "https://l.example/c": "", "https://l.example/d": ""}
	for _, p := range pagesOf(t, s, "l.example") {
		if p.Lang != want[p.URL] {
			t.Errorf("Pages: %s has lang %q, want %q", p.URL, p.Lang, want[p.URL])
		}
	}
	res, err := s.Search(ctx, "alpha", 10)
	if err != nil || len(res) != 4 {
		t.Fatalf("Search(alpha) = %+v, %v; want 4 results", res, err)
	}
	for _, r := range res {
		if r.Lang != want[r.URL] {
			t.Errorf("Search: %s has lang %q, want %q", r.URL, r.Lang, want[r.URL])
		}
	}
}
