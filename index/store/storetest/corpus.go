package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/lohisoft/crawl-operator/index/store"
)

// Corpus is a generated web in the bot's five languages: sites of
// PagesPerSite pages, each site in one language, with page fields of
// realistic lengths, words drawn with Zipf frequencies from a vocabulary
// per language (inflected, accented, Cyrillic as the language has it),
// links between sites, and one word ("online") on 99 % of pages. The same
// Seed gives the same corpus on every machine.
type Corpus struct {
	Sites, PagesPerSite int
	Seed                uint64
}

// Corpus1M is the large benchmark's corpus: 1,000,000 pages.
var Corpus1M = Corpus{Sites: 50000, PagesPerSite: 20, Seed: 1}

// CorpusSmall is the same generator at 20,000 pages, small enough for the
// contract tests.
var CorpusSmall = Corpus{Sites: 1000, PagesPerSite: 20, Seed: 1}

// Pages is the number of pages of the corpus.
func (c Corpus) Pages() int { return c.Sites * c.PagesPerSite }

// CorpusVersion changes whenever the generator's output does, so a cached
// corpus built by an older generator is rebuilt.
const CorpusVersion = "corpus-v1"

// CommonWord is on 99 % of pages, in a field chosen at random.
const CommonWord = "online"

// language is how one language's words are made.
type language struct {
	tag         string
	cons, vows  []string
	inflections []string // endings, the first the most frequent
}

var languages = []language{
	{"en", split("b c d f g h k l m n p r s t v w"), split("a e i o u"), []string{"", "s", "ing", "ed"}},
	{"nl", split("b d f g h j k l m n p r s t v w z"), split("a e i o u oe ij"), []string{"", "en", "je"}},
	{"sk", split("b c č d ď f h j k l ľ m n ň p r s š t ť v z ž"), split("a á ä e é i í o ó ô u ú y ý"), []string{"", "y", "ou"}},
	{"bg", split("б в г д ж з к л м н п р с т ф х ц ч ш"), split("а е и о у ъ ю я"), []string{"", "а", "и", "ът"}},
	{"it", split("b c d f g l m n p r s t v z"), split("a e i o u à è ì ò ù"), []string{"o", "i", "a", "e"}},
}

func split(s string) []string { return strings.Fields(s) }

// VocabularySize is the number of distinct stems per language.
const VocabularySize = 50000

// Word returns the n-th stem of language lang ("en", "nl", "sk", "bg",
// "it"): distinct for distinct n, pronounceable in its script.
func Word(lang string, n int) string {
	for _, l := range languages {
		if l.tag == lang {
			return l.word(n)
		}
	}
	panic("storetest: no language " + lang)
}

func (l language) word(n int) string {
	var b strings.Builder
	for {
		b.WriteString(l.cons[n%len(l.cons)])
		n /= len(l.cons)
		b.WriteString(l.vows[n%len(l.vows)])
		n /= len(l.vows)
		if n == 0 {
			return b.String()
		}
	}
}

// Generate calls fn with each site document, in order.
func (c Corpus) Generate(fn func(store.SiteDoc) error) error {
	rng := rand.New(rand.NewPCG(c.Seed, 0x636f72707573))
	zipfs := make([]*rand.Zipf, len(languages))
	for i := range zipfs {
		zipfs[i] = rand.NewZipf(rng, 1.07, 2, VocabularySize-1)
	}
	for i := range c.Sites {
		li := i % len(languages)
		l, z := languages[li], zipfs[li]
		text := func(minWords, maxWords int) string {
			n := minWords + rng.IntN(maxWords-minWords+1)
			w := make([]string, n)
			for j := range w {
				w[j] = l.word(int(z.Uint64())) + l.inflections[inflection(rng, len(l.inflections))]
				if j == 0 && rng.IntN(2) == 0 {
					w[j] = strings.ToUpper(w[j]) // shouted, as some titles are
				}
			}
			return strings.Join(w, " ")
		}
		list := func(minItems, maxItems, minWords, maxWords int) []string {
			out := make([]string, minItems+rng.IntN(maxItems-minItems+1))
			for j := range out {
				out[j] = text(minWords, maxWords)
			}
			return out
		}
		host := fmt.Sprintf("site%d.%s.example", i, l.tag)
		d := store.SiteDoc{Source: "bench/" + host, Site: "https://" + host + ":443", CrawledAt: t0}
		for j := range c.PagesPerSite {
			p := store.Page{
				URL: fmt.Sprintf("https://%s/page/%d", host, j), StatusCode: 200, Lang: l.tag,
				Title: text(3, 10), H1: list(0, 1, 3, 8), H2: list(0, 4, 2, 6), H3: list(0, 4, 2, 5),
				Anchors: list(0, 3, 1, 4), FetchedAt: t0,
			}
			if rng.IntN(5) > 0 { // a fifth of pages have no meta description
				p.Description = text(10, 30)
			}
			if rng.IntN(100) > 0 {
				addCommonWord(rng, &p)
			}
			d.Pages = append(d.Pages, p)
		}
		for range 10 {
			other := rng.IntN(c.Sites)
			if other == i {
				continue
			}
			d.Links = append(d.Links, store.Link{
				URL: fmt.Sprintf("https://site%d.%s.example/page/%d", other, languages[other%len(languages)].tag, rng.IntN(c.PagesPerSite)),
				// Links are written in the linking site's language.
				Anchors: list(1, 1, 1, 3),
			})
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

// inflection picks an ending: the first half the time, the others evenly.
func inflection(rng *rand.Rand, n int) int {
	if n == 1 || rng.IntN(2) == 0 {
		return 0
	}
	return 1 + rng.IntN(n-1)
}

// addCommonWord puts CommonWord into one field of p: title 10 %, headings
// 20 %, anchors 20 %, description the rest (or the title when it has none).
func addCommonWord(rng *rand.Rand, p *store.Page) {
	switch r := rng.IntN(10); {
	case r == 0 || r >= 5 && p.Description == "":
		p.Title += " " + CommonWord
	case r <= 2:
		p.H2 = append(p.H2, CommonWord)
	case r <= 4:
		p.Anchors = append(p.Anchors, CommonWord)
	default:
		p.Description += " " + CommonWord
	}
}

// Query is one query of the benchmark's mix.
type Query struct{ Class, Text string }

// QueryMix is what the large benchmark measures: a rare word, a mid-
// frequency word, two words, the word on 99 % of pages, a word typed
// without its diacritics, and one typed in capitals in Cyrillic.
func QueryMix() []Query {
	return []Query{
		{"rare-word", Word("en", 30000)},
		{"mid-word", Word("nl", 300)},
		{"two-words", Word("it", 20) + "o " + Word("it", 150) + "i"},
		{"word-on-99%", CommonWord},
		{"folded-word", store.Fold(Word("sk", 1000))},
		{"cyrillic-caps", strings.ToUpper(Word("bg", 400))},
		{"no-match", "zzzzunknownword"},
	}
}
