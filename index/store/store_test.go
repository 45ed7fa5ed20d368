package store

import (
	"reflect"
	"strings"
	"testing"
)

func TestWordsAndTerms(t *testing.T) {
	for in, want := range map[string][]string{
		"":                            nil,
		`"hello" OR -world*`:          {"hello", "or", "world"},
		"e-mail message@lohisoft.com": {"e", "mail", "message", "lohisoft", "com"},
		"NEAR(a b) title:x ^y":        {"near", "a", "b", "title", "x", "y"},
		"Търсачка Vyhľadávač café":    {"търсачка", "vyhľadávač", "café"},
		"'; DROP TABLE pages; --":     {"drop", "table", "pages"},
		"a\x00b\u00a0c":               {"a", "b", "c"},
		"abc123 4.5":                  {"abc123", "4", "5"},
	} {
		if got := Words(in); len(got)+len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Terms("Otter otter OTTER beaver"); !reflect.DeepEqual(got, []string{"otter", "beaver"}) {
		t.Errorf("Terms dedup = %q", got)
	}
	if got := Terms(strings.Repeat("a b c d e f g h i j k l m n o p q r s t ", 3)); len(got) != MaxTerms {
		t.Errorf("Terms kept %d words, want %d", len(got), MaxTerms)
	}
}

func TestMergeAnchors(t *testing.T) {
	got := MergeAnchors([]string{"home"}, []string{"home", "a", "", "b", "a"})
	if !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("MergeAnchors = %q", got)
	}
	many := make([]string, 200)
	for i := range many {
		many[i] = strings.Repeat("x", i+1)
	}
	if got := MergeAnchors(nil, many); len(got) != MaxExternalAnchors {
		t.Errorf("MergeAnchors kept %d, want %d", len(got), MaxExternalAnchors)
	}
}

func TestClean(t *testing.T) {
	d := SiteDoc{Pages: []Page{{Title: "a\x00b", H1: []string{"\xff"}, ExternalAnchors: []string{"x"}}},
		Links: []Link{{URL: "https://b.example/\x00", Anchors: []string{"c\x00"}}}}
	got := d.Clean()
	if got.Pages[0].Title != "ab" || got.Pages[0].H1[0] != "\uFFFD" || got.Pages[0].ExternalAnchors != nil ||
		got.Links[0].URL != "https://b.example/" || got.Links[0].Anchors[0] != "c" {
		t.Errorf("Clean = %+v", got)
	}
	if d.Pages[0].Title != "a\x00b" {
		t.Error("Clean changed its input")
	}
}
