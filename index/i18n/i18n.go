// Package i18n is the one home of the index port's interface languages and
// of how a request chooses one: the /bot page and the search pages speak
// the same five languages and pick them by the same rule, so a visitor who
// switches language on one sees the same choice on the other.
package i18n

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/text/language"
)

// Language is one interface language.
type Language struct {
	Tag  string // BCP 47
	Name string // the language's own name, for the language links
}

// Lang returns l; a text type that embeds Language gets it, which is what
// Pick and Check look texts up by.
func (l Language) Lang() Language { return l }

// The interface languages.
var (
	English   = Language{Tag: "en", Name: "English"}
	Dutch     = Language{Tag: "nl", Name: "Nederlands"}
	Slovak    = Language{Tag: "sk", Name: "Slovenčina"}
	Bulgarian = Language{Tag: "bg", Name: "Български"}
	Italian   = Language{Tag: "it", Name: "Italiano"}
)

// Languages in the order of the language links; the first is the default.
var Languages = []Language{English, Dutch, Slovak, Bulgarian, Italian}

var matcher = language.NewMatcher(tags())

func tags() []language.Tag {
	out := make([]language.Tag, len(Languages))
	for i, l := range Languages {
		out[i] = language.MustParse(l.Tag)
	}
	return out
}

// Lookup returns the language whose tag is tag (in any letter case).
func Lookup(tag string) (Language, bool) {
	for _, l := range Languages {
		if strings.EqualFold(tag, l.Tag) {
			return l, true
		}
	}
	return Language{}, false
}

// Negotiate picks the interface language: ?lang= when it names one of the
// five, otherwise the best match of Accept-Language, otherwise English. An
// unknown ?lang= is not an error: a visitor still gets a page they can read.
func Negotiate(lang, acceptLanguage string) Language {
	if l, ok := Lookup(lang); ok {
		return l
	}
	wanted, _, err := language.ParseAcceptLanguage(acceptLanguage)
	if err != nil || len(wanted) == 0 {
		return Languages[0]
	}
	_, i, conf := matcher.Match(wanted...)
	if conf == language.No {
		return Languages[0]
	}
	return Languages[i]
}

// Localized is a text in one language: a struct that embeds Language.
type Localized interface{ Lang() Language }

// Pick returns the text of texts in language l, or the first when texts has
// none in l (Check makes sure that never happens).
func Pick[T Localized](texts []T, l Language) T {
	for _, t := range texts {
		if t.Lang() == l {
			return t
		}
	}
	return texts[0]
}

// Check reports whether texts holds exactly one text per language, in the
// order of Languages, so every package's translations stay complete.
func Check[T Localized](texts []T) error {
	if len(texts) != len(Languages) {
		return fmt.Errorf("%d texts for %d languages", len(texts), len(Languages))
	}
	for i, t := range texts {
		if t.Lang() != Languages[i] {
			return fmt.Errorf("text %d is in %q, want %q", i, t.Lang().Tag, Languages[i].Tag)
		}
	}
	return nil
}

// CheckTranslations reports, for texts that Check accepts, every string
// (and string in an array) that is empty in some language or has other fmt
// verbs than in the first language's text: a verb lost in translation
// would print %!s(MISSING) or drop a fact the page must state.
func CheckTranslations[T Localized](texts []T) []error {
	if err := Check(texts); err != nil {
		return []error{err}
	}
	var errs []error
	first := reflect.Indirect(reflect.ValueOf(texts[0]))
	for _, tx := range texts {
		v := reflect.Indirect(reflect.ValueOf(tx))
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Anonymous || !f.IsExported() {
				continue
			}
			want := strs(first.Field(i))
			for j, s := range strs(v.Field(i)) {
				if strings.TrimSpace(s) == "" {
					errs = append(errs, fmt.Errorf("%s: %s is empty", tx.Lang().Tag, f.Name))
				}
				if verbs(s) != verbs(want[j]) {
					errs = append(errs, fmt.Errorf("%s: %s has verbs %q, %s has %q", tx.Lang().Tag, f.Name, verbs(s), Languages[0].Tag, verbs(want[j])))
				}
			}
		}
	}
	return errs
}

func strs(v reflect.Value) []string {
	switch v.Kind() {
	case reflect.Array, reflect.Slice:
		var out []string
		for i := range v.Len() {
			out = append(out, strs(v.Index(i))...)
		}
		return out
	case reflect.String:
		return []string{v.String()}
	}
	return nil
}

// verbs lists the fmt verbs of s, sorted: a language may put indexed
// verbs in another order.
func verbs(s string) string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(s) && strings.IndexByte("[]0123456789", s[j]) >= 0 {
			j++
		}
		if j < len(s) {
			out = append(out, s[i:j+1])
		}
		i = j
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
