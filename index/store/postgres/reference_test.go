package postgres

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
)

// PostgreSQL ships independent implementations of what store does in Go:
// the unaccent dictionary (a hand-kept rules file) and the Snowball
// stemmers (C, from the Snowball project). These tests hold store's
// folding and stemming against them.

func referenceDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// alphabets are the letters with diacritics of the bot's Latin-script
// languages, both cases: Slovak, Italian, Dutch.
var alphabets = []string{
	"áäčďéíĺľňóôŕšťúýž ÁÄČĎÉÍĹĽŇÓÔŔŠŤÚÝŽ",
	"àèéìíîòóùú ÀÈÉÌÍÎÒÓÙÚ",
	"áéíóúàèëïöüäâêîôû ÁÉÍÓÚÀÈËÏÖÜÄÂÊÎÔÛ",
}

func TestFoldMatchesUnaccent(t *testing.T) {
	db := referenceDB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE EXTENSION unaccent"); err != nil {
		t.Fatalf("the unaccent extension (PostgreSQL contrib) is the reference: %v", err)
	}
	var letters []string
	for _, a := range alphabets {
		for _, r := range strings.ReplaceAll(a, " ", "") {
			letters = append(letters, string(r))
		}
	}
	// Whole words too, composed and decomposed.
	letters = append(letters, "Vyhľadávač", "città", "Één", "ťava", "cafe\u0301")
	for _, w := range letters {
		var want string
		if err := db.QueryRowContext(ctx, "SELECT lower(unaccent($1))", w).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got := store.Fold(w); got != want {
			t.Errorf("Fold(%q) = %q, PostgreSQL lower(unaccent()) = %q", w, got, want)
		}
	}
	// Cyrillic: case only, against PostgreSQL's lower() (the Bulgarian
	// alphabet has no letter that unaccent would change but й, which it
	// keeps and Fold does not: see docs/index.md).
	for _, w := range []string{"ХЛЯБ", "Търсачка", "ЩЪРКЕЛ", "ЮЖЕН", "ЦЪФТЯЩ"} {
		var want string
		if err := db.QueryRowContext(ctx, "SELECT lower($1)", w).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got := store.Fold(w); got != want {
			t.Errorf("Fold(%q) = %q, PostgreSQL lower() = %q", w, got, want)
		}
	}
}

// stemVocabulary are inflected words of each stemmed language, the
// English ones with the words of the bot's published page.
var stemVocabulary = map[string]string{
	"en": `running runs ran runner runners connection connections connected connecting generously generous
		happiness happily happy crawled crawling crawler crawlers indexing indexed indexes pages page
		robots allowed disallowed following followed politely politeness searching searches searched
		university universal nationality national rational relational hopeful hopefulness argued arguing`,
	"nl": `boeken boek huizen huis fietsen fietser fietsers lopen loopt gelopen zoekmachine zoekmachines
		kinderen kind mogelijkheden mogelijk gebruiken gebruikt gebruiker gebruikers pagina paginas
		bakkerij bakkerijen brood broden vriendelijk vriendelijke vriendelijkheid`,
	"it": `gatto gatti gatta gatte città cittadino cittadini cane cani pagina pagine motore motori ricerca
		ricerche cercare cercando cercato panetteria panetterie pane pani gentile gentilmente gentilezza
		velocemente veloce velocità nazionale nazionali`,
}

var pgStemmer = map[string]string{"en": "english_stem", "nl": "dutch_stem", "it": "italian_stem"}

func TestStemMatchesPostgreSQLSnowball(t *testing.T) {
	db := referenceDB(t)
	ctx := context.Background()
	vocab := stemVocabulary
	if seed, err := os.ReadFile("../../../../shared/seeds/crawler-documentation.en.txt"); err == nil {
		vocab["en"] += " " + string(seed)
	}
	for lang, text := range vocab {
		compared := 0
		seen := map[string]bool{}
		for _, w := range store.Words(text) {
			if w = store.Fold(w); seen[w] {
				continue
			}
			seen[w] = true
			var lex []string
			var raw sql.NullString
			// The words are folded first, as Postings folds before stemming.
			if err := db.QueryRowContext(ctx, "SELECT array_to_string(ts_lexize($1, $2), ' ')", pgStemmer[lang], w).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if lex = strings.Fields(raw.String); len(lex) == 0 {
				continue // a stop word: PostgreSQL drops it, the index keeps it
			}
			compared++
			if got := store.Stem(lang, w); got != lex[0] {
				t.Errorf("Stem(%s, %q) = %q, PostgreSQL %s = %q", lang, w, got, pgStemmer[lang], lex[0])
			}
		}
		if compared < 20 {
			t.Errorf("%s: only %d words compared", lang, compared)
		}
	}
}
