package searchui

import (
	"fmt"
	"reflect"
	"slices"
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
		{"one host's three results: one page", []string{"a/1", "a/2", "a/3"}, 10, 2,
			[][]string{{"a/1", "a/2", "a/3"}}},
		{"one host only fills its pages", many, 3, 2,
			[][]string{{"a/0", "a/1", "a/2"}, {"a/3", "a/4", "a/5"}, {"a/6"}}},
		{"a host's third waits while another host's result takes the place",
			[]string{"a/1", "a/2", "a/3", "b/1"}, 3, 2,
			[][]string{{"a/1", "a/2", "b/1"}, {"a/3"}}},
		{"a crowded host moves on, order kept",
			[]string{"a/1", "a/2", "a/3", "b/1", "a/4", "c/1", "c/2"}, 3, 2,
			[][]string{{"a/1", "a/2", "b/1"}, {"a/3", "a/4", "c/1"}, {"c/2"}}},
		{"room left after crowding goes to the hosts left, in rank order",
			[]string{"a/1", "a/2", "a/3", "b/1", "a/4", "c/1", "c/2"}, 10, 2,
			[][]string{{"a/1", "a/2", "a/3", "b/1", "a/4", "c/1", "c/2"}}},
		{"two hosts, one runs out: the other fills the page",
			[]string{"a/1", "a/2", "a/3", "a/4", "a/5", "b/1", "b/2", "b/3"}, 4, 2,
			[][]string{{"a/1", "a/2", "b/1", "b/2"}, {"a/3", "a/4", "a/5", "b/3"}}},
		{"two hosts with results left get a third each before a fourth",
			[]string{"a/1", "a/2", "a/3", "a/4", "a/5", "b/1", "b/2", "b/3", "b/4"}, 7, 2,
			[][]string{{"a/1", "a/2", "a/3", "a/4", "b/1", "b/2", "b/3"}, {"a/5", "b/4"}}},
		{"a result crowded off a page leads the next",
			[]string{"a/1", "a/2", "a/3", "b/1", "b/2", "b/3", "c/1", "c/2", "c/3"}, 4, 2,
			[][]string{{"a/1", "a/2", "b/1", "b/2"}, {"a/3", "b/3", "c/1", "c/2"}, {"c/3"}}},
		{"page full before the host is",
			[]string{"a/1", "b/1", "c/1", "d/1", "a/2"}, 2, 2,
			[][]string{{"a/1", "b/1"}, {"c/1", "d/1"}, {"a/2"}}},
		{"http and https of a host are one host",
			[]string{"a/1", "http:a/2", "a/3", "b/1"}, 3, 2,
			[][]string{{"a/1", "a/2", "b/1"}, {"a/3"}}},
		{"the same URL twice is two results",
			[]string{"a/1", "a/1", "a/1", "b/1"}, 3, 2,
			[][]string{{"a/1", "a/1", "b/1"}, {"a/1"}}},
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

// The promises of Paginate on large mixed inputs: every result exactly
// once, each page in rank order, every page but the last full (so the
// pages number PageCount and agree with the count), and a host has more
// than perSite results on a page only when every other host with results
// on later pages has at least one fewer there.
func TestPaginatePromises(t *testing.T) {
	inputs := map[string][]string{}
	for _, hosts := range []int{1, 2, 3, 7, 40} {
		var in []string
		for i := range store.MaxLimit {
			// Hosts of very different sizes, interleaved unevenly.
			in = append(in, fmt.Sprintf("s%d/%d", (i*i/7+i/(hosts+1))%hosts, i))
		}
		inputs[fmt.Sprintf("%d hosts", hosts)] = in
	}
	for name, in := range inputs {
		for _, lim := range [][2]int{{PerPage, PerSite}, {3, 1}, {4, 2}, {1, 1}} {
			perPage, perSite := lim[0], lim[1]
			rs := results(in...)
			pages := Paginate(rs, perPage, perSite)
			where := map[string]int{} // URL → page
			for p, page := range pages {
				if len(page) == 0 || len(page) > perPage || p < len(pages)-1 && len(page) != perPage {
					t.Errorf("%s, %d/%d: page %d of %d has %d results", name, perPage, perSite, p+1, len(pages), len(page))
				}
				for i, r := range page {
					if _, dup := where[r.URL]; dup {
						t.Errorf("%s: %s twice", name, r.URL)
					}
					where[r.URL] = p
					if i > 0 && slices.Index(in, trim(page[i-1].URL)) > slices.Index(in, trim(r.URL)) {
						t.Errorf("%s, %d/%d: page %d is not in rank order", name, perPage, perSite, p+1)
					}
				}
			}
			if len(where) != len(in) || len(pages) != PageCount(len(in), perPage) || len(pages) > MaxPage {
				t.Errorf("%s, %d/%d: %d results on %d pages, want %d on %d", name, perPage, perSite, len(where), len(pages), len(in), PageCount(len(in), perPage))
			}
			for p, page := range pages {
				count := map[string]int{}
				for _, r := range page {
					count[store.Host(r.Site)]++
				}
				later := map[string]bool{}
				for _, q := range pages[p+1:] {
					for _, r := range q {
						later[store.Host(r.Site)] = true
					}
				}
				for h, c := range count {
					if c <= perSite {
						continue
					}
					for g := range later {
						if g != h && count[g] < c-1 {
							t.Errorf("%s, %d/%d: page %d has %d of %s but %d of %s, which has results on later pages", name, perPage, perSite, p+1, c, h, count[g], g)
						}
					}
				}
			}
		}
	}
}

func trim(u string) string { return strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://") }

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
