package searchui

import (
	"net/url"
	"slices"
	"strings"

	"github.com/lohisoft/crawl-operator/index/store"
)

// Pages of search results.
const (
	// PerPage is how many results a page of results shows at most.
	PerPage = 10
	// PerSite is how many results of one host a page shows at most (host
	// crowding): one site with many matching pages must not fill a page,
	// nor can it by serving them over http and https or on two ports.
	PerSite = 2
	// MaxPage is the highest ?page= accepted anywhere; search results never
	// have more than store.MaxLimit pages and the dashboard shows
	// SitesPerPage sites a page, so this covers 100,000 sites.
	MaxPage = 1000
)

// Paginate arranges ranked results on pages of perPage, with host
// crowding: a page takes results in rank order, at most perSite of a host
// (by store.Host, so http and https or two ports of a host count as one).
// Crowding only gives places to other hosts' results: when it would leave
// places of the page empty while results are left, those go to the hosts
// that still have results, one more result each in rank order (a third
// each, then a fourth, ...), until the page is full. So a host gets more
// than perSite results on a page only when no other host's result is left
// to take the place; an answer that only one host gives fills its pages
// as if there were no crowding. Each page is shown in rank order.
//
// Every page but the last is full, so the pages number
// PageCount(len(results), perPage): the count and the page numbers agree
// with what the pages show. Every result is on exactly one page. A perPage
// or perSite below 1 counts as 1.
func Paginate(results []store.Result, perPage, perSite int) [][]store.Result {
	perPage, perSite = max(perPage, 1), max(perSite, 1)
	hosts := make([]string, len(results))
	for i, r := range results {
		hosts[i] = store.Host(r.Site)
	}
	placed := make([]bool, len(results))
	first := 0 // results before it are all placed
	pages := [][]store.Result{}
	for left := len(results); left > 0; {
		var page []int
		onPage := map[string]int{}
		// Each round past the first places at least one result: what the
		// round before left is of hosts at its limit.
		for limit := perSite; len(page) < perPage && left > 0; limit++ {
			for i := first; i < len(results) && len(page) < perPage; i++ {
				if !placed[i] && onPage[hosts[i]] < limit {
					placed[i] = true
					onPage[hosts[i]]++
					page = append(page, i)
					left--
				}
			}
		}
		for first < len(results) && placed[first] {
			first++
		}
		slices.Sort(page)
		out := make([]store.Result, len(page))
		for j, i := range page {
			out[j] = results[i]
		}
		pages = append(pages, out)
	}
	return pages
}

// Window returns the bounds [from, to) of page (from 1) when n items are
// shown perPage at a time, and whether that page exists. Page 1 of no
// items exists and is empty: an empty list is still a list.
func Window(n, page, perPage int) (from, to int, ok bool) {
	perPage = max(perPage, 1)
	if page < 1 || (page > 1 && (page-1)*perPage >= n) {
		return 0, 0, false
	}
	from = (page - 1) * perPage
	return min(from, n), min(from+perPage, n), true
}

// PageCount is how many pages n items take, perPage at a time; at least 1.
func PageCount(n, perPage int) int {
	perPage = max(perPage, 1)
	return max(1, (n+perPage-1)/perPage)
}

// LinkURL returns raw when it may become a link: an absolute http or https
// URL with a host. Anything else a hostile page or a damaged row could hold
// (javascript:, data:, relative or scheme-less URLs) is shown as text only.
func LinkURL(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return raw, true
	}
	return "", false
}
