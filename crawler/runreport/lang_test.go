package runreport

import (
	"strings"
	"testing"
)

func TestLang(t *testing.T) {
	for in, want := range map[string]string{
		"en":                            "en",
		"EN-gb":                         "en-gb",
		" nl-BE ":                       "nl-be",
		"sk":                            "sk",
		"bg":                            "bg",
		"it-IT":                         "it-it",
		"sr-Latn-RS":                    "sr-latn-rs",
		"zh-Hant-TW-x-private1":         "zh-hant-tw-x-private1",
		"fil":                           "fil",
		"":                              "",
		"e":                             "",
		"english":                       "",
		"en_US":                         "",
		"en-":                           "",
		"-en":                           "",
		"en--us":                        "",
		"de, en":                        "",
		"en;q=0.8":                      "",
		`en"><script>alert(1)</script>`: "",
		"en\x00":                        "",
		"én":                            "",
		"ен":                            "",
		"12":                            "",
		"en-toolongsubtag":              "",
		"en-" + strings.Repeat("a", MaxLangLength): "",
		strings.Repeat("en-us-", 6) + "en":         "",
	} {
		if got := Lang(in); got != want {
			t.Errorf("Lang(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Lang("en-" + strings.Repeat("abcdefgh-", 3) + "abc"); len(got) > MaxLangLength {
		t.Errorf("Lang kept %d bytes, cap is %d", len(got), MaxLangLength)
	}
}
