package searchui

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/index/store"
)

// results builds ranked results from "host/n" names: the host is the part
// before the slash; "http:host/n" is on the http site of the host.
func results(names ...string) []store.Result {
	out := make([]store.Result, len(names))
	for i, n := range names {
		scheme, port := "https", "443"
		if rest, ok := strings.CutPrefix(n, "http:"); ok {
			scheme, port, n = "http", "80", rest
		}
		host, _, _ := strings.Cut(n, "/")
		out[i] = store.Result{URL: scheme + "://" + n, Site: scheme + "://" + host + ":" + port}
	}
	return out
}

func names(pages [][]store.Result) [][]string {
	out := [][]string{}
	for _, p := range pages {
		var page []string
		for _, r := range p {
			page = append(page, strings.TrimPrefix(strings.TrimPrefix(r.URL, "https://"), "http://"))
		}
		out = append(out, page)
	}
	return out
}

func TestPaginate(t *testing.T) {
	many := make([]string, 7)
	for i := range many {
		many[i] = fmt.Sprintf("a/%d", i)
	}
	tests := []struct {
		name             string
		in               []string
		perPage, perSite int
		want             [][]string
	}{
		{"nothing", nil, 3, 2, [][]string{}},
		{"fewer than a page", []string{"a/1", "b/1"}, 3, 2, [][]string{{"a/1", "b/1"}}},
		{"a crowded site moves on, order kept",
			[]string{"a/1", "a/2", "a/3", "b/1", "a/4", "c/1", "c/2"}, 3, 2,
			[][]string{{"a/1", "a/2", "b/1"}, {"a/3", "a/4", "c/1"}, {"c/2"}}},
		{"one site only: PerSite a page, nothing lost", many, 10, 2,
			[][]string{{"a/0", "a/1"}, {"a/2", "a/3"}, {"a/4", "a/5"}, {"a/6"}}},
		{"page full before the site is",
			[]string{"a/1", "b/1", "c/1", "d/1", "a/2"}, 2, 2,
			[][]string{{"a/1", "b/1"}, {"c/1", "d/1"}, {"a/2"}}},
		{"http and https of a host are one host",
			[]string{"a/1", "http:a/2", "a/3", "b/1"}, 10, 2,
			[][]string{{"a/1", "a/2", "b/1"}, {"a/3"}}},
		{"the same URL twice is two results",
			[]string{"a/1", "a/1", "a/1"}, 10, 2,
			[][]string{{"a/1", "a/1"}, {"a/1"}}},
		{"zero limits count as one", []string{"a/1", "a/2", "b/1"}, 0, 0,
			[][]string{{"a/1"}, {"a/2"}, {"b/1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Paginate(results(tt.in...), tt.perPage, tt.perSite)
			if !reflect.DeepEqual(names(got), tt.want) {
				t.Errorf("Paginate(%v, %d, %d) = %v, want %v", tt.in, tt.perPage, tt.perSite, names(got), tt.want)
			}
		})
	}
}

// The promises of Paginate on a large mixed input: every result exactly
// once, no page over perPage or perSite of a site, store.MaxLimit results
// never take more pages than MaxPage.
func TestPaginateKeepsEveryResult(t *testing.T) {
	var in []string
	for i := range store.MaxLimit {
		in = append(in, fmt.Sprintf("s%d/%d", i%3+(i/50)*i%7, i))
	}
	pages := Paginate(results(in...), PerPage, PerSite)
	seen := 0
	for i, p := range pages {
		count := map[string]int{}
		for _, r := range p {
			count[store.Host(r.Site)]++
			if count[store.Host(r.Site)] > PerSite {
				t.Errorf("page %d has %d results of %s", i+1, count[r.Site], r.Site)
			}
		}
		if len(p) == 0 || len(p) > PerPage {
			t.Errorf("page %d has %d results", i+1, len(p))
		}
		seen += len(p)
	}
	if seen != len(in) || len(pages) > MaxPage {
		t.Errorf("%d results on %d pages, want %d on at most %d", seen, len(pages), len(in), MaxPage)
	}
}

func TestWindow(t *testing.T) {
	tests := []struct {
		n, page, perPage int
		from, to         int
		ok               bool
	}{
		{0, 1, 10, 0, 0, true},
		{0, 2, 10, 0, 0, false},
		{25, 1, 10, 0, 10, true},
		{25, 3, 10, 20, 25, true},
		{25, 4, 10, 0, 0, false},
		{20, 3, 10, 0, 0, false},
		{25, 0, 10, 0, 0, false},
		{25, -1, 10, 0, 0, false},
		{5, 5, 0, 4, 5, true},
	}
	for _, tt := range tests {
		from, to, ok := Window(tt.n, tt.page, tt.perPage)
		if from != tt.from || to != tt.to || ok != tt.ok {
			t.Errorf("Window(%d, %d, %d) = %d, %d, %v, want %d, %d, %v", tt.n, tt.page, tt.perPage, from, to, ok, tt.from, tt.to, tt.ok)
		}
	}
	for _, tt := range []struct{ n, perPage, want int }{{0, 10, 1}, {1, 10, 1}, {10, 10, 1}, {11, 10, 2}, {3, 0, 3}} {
		if got := PageCount(tt.n, tt.perPage); got != tt.want {
			t.Errorf("PageCount(%d, %d) = %d, want %d", tt.n, tt.perPage, got, tt.want)
		}
	}
}

func TestLinkURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://example.com/a?b=c#d":              true,
		"http://127.0.0.1:8090/":                   true,
		"HTTPS://example.com/":                     true,
		"javascript:alert(1)":                      false,
		"JavaScript:alert(1)":                      false,
		" javascript:alert(1)":                     false,
		"javascript://example.com/%0Aalert(1)":     false,
		"data:text/html,<script>alert(1)</script>": false,
		"vbscript:msgbox(1)":                       false,
		"//example.com/":                           false,
		"/relative":                                false,
		"mailto:a@example.com":                     false,
		"http:opaque":                              false,
		"https://":                                 false,
		"":                                         false,
	} {
		if _, ok := LinkURL(raw); ok != want {
			t.Errorf("LinkURL(%q) ok = %v, want %v", raw, ok, want)
		}
	}
}
