package extract

import (
	"strings"
	"testing"
)

func TestLangAttribute(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"html lang", `<!doctype html><html lang="nl-BE"><title>x</title>`, "nl-BE"},
		{"no lang", `<html><title>x</title>`, ""},
		{"no html element", `<title>x</title>`, ""},
		{"first html with lang wins", `<html><html lang="sk"><html lang="bg"><title>x</title>`, "sk"},
		{"lang on another element is not the page's", `<html><body><p lang="it">x</p>`, ""},
		{"html after body still counts, as browsers merge it", `<body><html lang="it"><p>x`, "it"},
		{"an empty lang still counts as the first", `<html lang=""><html lang="bg">`, ""},
		{"html inside svg is an SVG element", `<svg><html lang="x"></svg>`, ""},
		{"html inside math is a MathML element", `<math><html lang="y">`, ""},
		{"html inside template is ignored", `<template><html lang="x"></template>`, ""},
		{"html in a table merges into the root", `<table><html lang="q">`, "q"},
		{"upper-case attribute name", `<HTML LANG="en">`, "en"},
		{"entity in value", `<html lang="en&#45;GB">`, "en-GB"},
		{"hostile value kept raw, cut", `<html lang="` + strings.Repeat("x", 1000) + `">`, strings.Repeat("x", MaxLangLen)},
	} {
		if got := mustExtract(t, tc.doc, "text/html").Lang; got != tc.want {
			t.Errorf("%s: Lang = %q, want %q", tc.name, got, tc.want)
		}
	}
}
