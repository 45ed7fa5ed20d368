package runreport

import "strings"

// MaxLangLength caps a page's language tag: RFC 5646 §4.4.1 asks to keep
// tags of up to 35 characters, longer ones are rare and never needed to
// pick a stemmer.
const MaxLangLength = 35

// Lang returns the language tag a page declares (its <html lang> or,
// failing that, its Content-Language header) in the form the index keeps
// it, or "" when raw does not look like a BCP 47 tag. A hostile page can
// put anything into lang; only ASCII letters, digits and hyphens in the
// shape of a tag pass, lower-cased: a primary subtag of 2–3 letters
// followed by subtags of 1–8 letters or digits ("en", "nl-BE",
// "sr-Latn-RS"). A Content-Language that lists several languages ("de,
// en") names no single one and yields "".
func Lang(raw string) string {
	tag := strings.ToLower(strings.TrimSpace(raw))
	if len(tag) > MaxLangLength {
		return ""
	}
	sub := strings.Split(tag, "-")
	if len(sub[0]) < 2 || len(sub[0]) > 3 || !isAlnum(sub[0], false) {
		return ""
	}
	for _, s := range sub[1:] {
		if len(s) < 1 || len(s) > 8 || !isAlnum(s, true) {
			return ""
		}
	}
	return tag
}

func isAlnum(s string, digits bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || digits && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
