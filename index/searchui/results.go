package searchui

import (
	"net/url"
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

// Paginate splits ranked results into pages of at most perPage results with
// at most perSite results of one host on each page. A result its page has
// no room for, because its host is full there, moves on to the next page
// in rank order, so nothing is lost and each host's best results come
// first. Every page but the last holds at least min(perPage, perSite)
// results. A perPage or perSite below 1 counts as 1.
func Paginate(results []store.Result, perPage, perSite int) [][]store.Result {
	perPage, perSite = max(perPage, 1), max(perSite, 1)
	var pages [][]store.Result
	for rest := results; len(rest) > 0; {
		var page, later []store.Result
		onPage := map[string]int{}
		for _, r := range rest {
			host := store.Host(r.Site)
			if len(page) < perPage && onPage[host] < perSite {
				page = append(page, r)
				onPage[host]++
			} else {
				later = append(later, r)
			}
		}
		pages = append(pages, page)
		rest = later
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
