package i18n

import (
	"strings"
	"testing"
)

func TestNegotiate(t *testing.T) {
	tests := []struct{ lang, accept, want string }{
		{"", "", "en"},
		{"nl", "", "nl"},
		{"SK", "", "sk"},
		{"bg", "it", "bg"}, // ?lang= wins
		{"xx", "it", "it"}, // unknown ?lang= is ignored
		{`"><script>alert(1)</script>`, "", "en"},
		{"nl-BE", "", "en"}, // ?lang= is exact: one of the five tags
		{"", "nl-BE,nl;q=0.9,en;q=0.8", "nl"},
		{"", "de-DE, sk;q=0.5", "sk"},
		{"", "fr-CH, fr;q=0.9", "en"},
		{"", "bg-BG", "bg"},
		{"", "it-IT,it;q=0.9", "it"},
		{"", "it;q=0, nl;q=0.5", "nl"},
		{"", "*", "en"},
		{"", "garbage;;q=x", "en"},
		{"", strings.Repeat("x,", 2000), "en"},
	}
	for _, tc := range tests {
		if got := Negotiate(tc.lang, tc.accept).Tag; got != tc.want {
			t.Errorf("Negotiate(%q, %q) = %s, want %s", tc.lang, tc.accept, got, tc.want)
		}
	}
}

type greeting struct {
	Language
	Hello string
	Items [2]string
}

func TestPickAndCheck(t *testing.T) {
	good := []*greeting{
		{English, "hello %s", [2]string{"a", "b"}},
		{Dutch, "hallo %s", [2]string{"a", "b"}},
		{Slovak, "ahoj %s", [2]string{"a", "b"}},
		{Bulgarian, "здравей %s", [2]string{"a", "b"}},
		{Italian, "ciao %s", [2]string{"a", "b"}},
	}
	if errs := CheckTranslations(good); errs != nil {
		t.Errorf("complete texts: %v", errs)
	}
	if got := Pick(good, Bulgarian).Hello; got != "здравей %s" {
		t.Errorf("Pick(bg) = %q", got)
	}
	if got := Pick(good[:1], Italian).Hello; got != "hello %s" {
		t.Errorf("Pick of a missing language = %q, want the first text", got)
	}
	for name, bad := range map[string][]*greeting{
		"missing language": good[:4],
		"wrong order":      {good[1], good[0], good[2], good[3], good[4]},
		"lost verb":        {good[0], {Dutch, "hallo", [2]string{"a", "b"}}, good[2], good[3], good[4]},
		"empty array item": {good[0], good[1], good[2], {Bulgarian, "здравей %s", [2]string{"a", " "}}, good[4]},
	} {
		if errs := CheckTranslations(bad); len(errs) == 0 {
			t.Errorf("%s: CheckTranslations found nothing", name)
		}
	}
}
