package searchui

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/testutil/browser"
)

// screenshots is where the README's pictures of the pages come from.
const screenshots = "../../docs/screenshots"

// sampleSite is what the crawler keeps of the demo's sample bakery
// (hack/samplesite), as the syncer writes it.
func sampleSite() store.SiteDoc {
	const site = "http://127.0.0.1:8090"
	page := func(path, title, desc string, h1, h2, h3, anchors []string) store.Page {
		return store.Page{URL: site + path, StatusCode: 200, Title: title, Description: desc, H1: h1, H2: h2, H3: h3, Anchors: anchors, FetchedAt: t0}
	}
	return store.SiteDoc{Source: "default/harbour-bakery", Site: site, CrawledAt: t0, Pages: []store.Page{
		page("/", "Harbour Bakery — sourdough by the sea", "A small bakery by the harbour baking sourdough, rye and cinnamon buns every morning.",
			[]string{"Harbour Bakery"}, []string{"Fresh every morning"}, []string{"Opening hours"}, []string{"Home"}),
		page("/breads.html", "Breads — Harbour Bakery", "Sourdough, rye and seeded loaves baked with long fermentation.",
			[]string{"Our breads"}, []string{"Sourdough", "Rye"}, []string{"Dark rye with seeds"}, []string{"Breads"}),
		page("/breads/sourdough-guide.html", "A guide to sourdough — Harbour Bakery", "How we feed the starter, shape the loaves and bake them in a stone oven.",
			[]string{"A guide to sourdough"}, []string{"The starter", "Shaping"}, []string{"Baking in a stone oven"}, []string{"our sourdough guide"}),
		page("/pastries.html", "Pastries — Harbour Bakery", "Cinnamon buns, cardamom knots and seasonal fruit tarts.",
			[]string{"Pastries"}, []string{"Cinnamon buns", "Cardamom knots"}, []string{"Seasonal tarts"}, []string{"Pastries"}),
		page("/visit.html", "Visit us — Harbour Bakery", "Find the bakery at the harbour: address, opening hours and parking.",
			[]string{"Visit the bakery"}, []string{"Address", "Opening hours"}, nil, []string{"Visit us"}),
	}}
}

// The pages in a real browser: a visitor types a query, submits the form,
// gets results that lead to the original pages, switches language, and
// opens the dashboard and a site's pages. Screenshots go to the README.
func TestInBrowser(t *testing.T) {
	mill := doc("https://mill.example:443", "Stone-ground flour for sourdough", "Rye flour for sourdough bakers")
	hostileSite := doc("http://old.example:80", hostile+" stale bread")
	roastery := doc("https://roastery.example:443", "Espresso roasts", "Espresso at home", "Decaf espresso")
	st := newStore(t, sampleSite(), mill, hostileSite, roastery)
	srv := httptest.NewServer(&Handler{Store: st, Targets: targets(
		Target{Namespace: "default", Name: "harbour-bakery", Site: "http://127.0.0.1:8090", Phase: "Succeeded", Ready: "True", Reason: "Crawled", LastCrawl: t0, NextCrawl: t2},
		Target{Namespace: "default", Name: "mill", Site: "https://mill.example:443", Phase: "Running", Ready: "True", Reason: "Crawled", LastCrawl: t0, NextCrawl: t1},
		Target{Namespace: "shops", Name: "dockside-cafe", Site: "https://dockside.example:443", Phase: "Pending", Ready: "False", Reason: "WaitingForCapacity", Message: "waiting for a free crawl slot on an egress node"},
	)})
	defer srv.Close()
	ctx := browser.New(t)
	run := func(what string, a chromedp.Action[chromedp.Void]) { browser.Run(t, ctx, what, a) }
	text := func(sel string) string { return browser.Run(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel))) }
	hrefs := func(sel string) []string {
		var out []string
		for _, a := range browser.Run(t, ctx, "links "+sel, chromedp.AttributesAll(chromedp.CSSAll(sel))) {
			out = append(out, a["href"])
		}
		return out
	}
	shoot := func(name string) {
		// No caret in the box: it blinks, and the pictures would differ.
		if n := browser.Run(t, ctx, "search box", chromedp.Nodes(chromedp.CSSAll("#q"), chromedp.AtLeast(0))); len(n) > 0 {
			run("blur", chromedp.Blur(chromedp.CSS("#q")))
		}
		img := browser.Run(t, ctx, "screenshot", chromedp.FullScreenshot(100))
		if _, err := png.Decode(bytes.NewReader(img)); err != nil {
			t.Fatalf("screenshot %s is no PNG: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(screenshots, name), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(screenshots, 0o755); err != nil {
		t.Fatal(err)
	}

	// Type a query and submit the form.
	run("open the search page", chromedp.Navigate(srv.URL+"/"))
	run("type", chromedp.SendKeys(chromedp.CSS("#q"), "sourdough"))
	run("submit", chromedp.Submit(chromedp.CSS("#q")))
	run("results", chromedp.WaitVisible(chromedp.CSS("ol.results")))
	if loc := browser.Run(t, ctx, "location", chromedp.Location()); loc != srv.URL+"/?q=sourdough" {
		t.Errorf("the form went to %s", loc)
	}
	// Each result links to its original URL, in the index's order with at
	// most two of a host ahead of another host's results. Three of the
	// bakery and two of the mill fit one page: all five are on it.
	ranked, err := st.Search(context.Background(), "sourdough", store.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range Paginate(ranked, PerPage, PerSite)[0] {
		want = append(want, r.URL)
	}
	got := hrefs(".result-title a")
	if !slices.Equal(got, want) || len(got) != 5 {
		t.Errorf("result links %q, want the original URLs %q", got, want)
	}
	wholeOnOnePage(t, ctx, len(ranked))
	// Under each title, the page's own URL, shortened for reading; never
	// the site's address alone for a page below the root.
	for i, href := range got {
		shown := text(fmt.Sprintf("ol.results li:nth-child(%d) .url", i+1))
		if shown != DisplayURL(href) {
			t.Errorf("result %d (%s) shows %q, want %q", i+1, href, shown, DisplayURL(href))
		}
		if shown == "http://127.0.0.1:8090" && href != "http://127.0.0.1:8090/" || shown == "https://mill.example:443" {
			t.Errorf("result %d (%s) shows its site's address %q", i+1, href, shown)
		}
	}
	if list := text("ol.results"); !strings.Contains(list, "http://127.0.0.1:8090/breads/sourdough-guide.html") || !strings.Contains(list, "mill.example/1.html") {
		t.Errorf("the results do not show the pages' URLs:\n%s", list)
	}
	// The style sheet applies: the CSP's hash matches it in a real browser.
	if w := computed(t, ctx, "body", "max-width"); w != "832px" {
		t.Errorf("body max-width %q: the style sheet was refused", w)
	}
	if n := len(browser.Run(t, ctx, "scripts", chromedp.Nodes(chromedp.CSSAll("script"), chromedp.AtLeast(0)))); n != 0 {
		t.Errorf("%d script elements on the results page", n)
	}
	if !strings.Contains(text("#no-page-text"), english.NoPageText) {
		t.Error("the search page does not say that the index keeps no page text")
	}
	shoot("search.png")

	// An answer that only one host gives is shown whole on page 1.
	run("search espresso", chromedp.Navigate(srv.URL+"/?q=espresso"))
	run("espresso results", chromedp.WaitVisible(chromedp.CSS("ol.results")))
	if got := hrefs(".result-title a"); len(got) != 3 || strings.Count(strings.Join(got, " "), "https://roastery.example:443/") != 3 {
		t.Errorf("espresso: result links %q, want the roastery's three", got)
	}
	wholeOnOnePage(t, ctx, 3)

	// A hostile title is text, not markup.
	run("search alert", chromedp.Navigate(srv.URL+"/?q=alert"))
	if got := text(".result-title"); !strings.Contains(got, `<script>alert("x")</script>`) {
		t.Errorf("hostile title shown as %q", got)
	}
	if n := len(browser.Run(t, ctx, "injected", chromedp.Nodes(chromedp.CSSAll("script, img"), chromedp.AtLeast(0)))); n != 0 {
		t.Errorf("a hostile title made %d elements", n)
	}

	// The dashboard.
	run("back to sourdough", chromedp.Navigate(srv.URL+"/?q=sourdough"))
	run("open the dashboard", chromedp.Click(chromedp.CSS(`header nav a[href="/sites"]`)))
	run("dashboard", chromedp.WaitVisible(chromedp.CSS("table.sites")))
	rows := text("table.sites tbody")
	for _, w := range []string{"http://127.0.0.1:8090", "default/harbour-bakery: Succeeded (Crawled)", "shops/dockside-cafe: Pending (WaitingForCapacity)",
		english.NotIndexed, "http://old.example:80", english.NoTarget, "2026-12-07 10:00 UTC"} {
		if !strings.Contains(rows, w) {
			t.Errorf("the dashboard lacks %q:\n%s", w, rows)
		}
	}
	if got := hrefs("a.pages-link"); !slices.Contains(got, "/sites/127.0.0.1") {
		t.Errorf("dashboard pages links %q", got)
	}
	shoot("sites.png")
	run("open the bakery's pages", chromedp.Click(chromedp.CSS(`a.pages-link[href="/sites/127.0.0.1"]`)))
	run("pages", chromedp.WaitVisible(chromedp.CSS("section.page")))
	var pageURLs []string
	for _, p := range sampleSite().Pages {
		pageURLs = append(pageURLs, p.URL)
	}
	if got := hrefs("h2.page-url a"); !slices.Equal(got, sorted(pageURLs)) {
		t.Errorf("page links %q, want %q", got, sorted(pageURLs))
	}
	if body := text("main"); !strings.Contains(body, "our sourdough guide") || !strings.Contains(body, "h2: The starter") {
		t.Errorf("the site's page lacks link texts or headings:\n%s", body)
	}
	shoot("site.png")

	// Switch language on the results, and keep it for the next search.
	run("results again", chromedp.Navigate(srv.URL+"/?q=sourdough"))
	run("to Dutch", chromedp.Click(chromedp.CSS(`footer a[hreflang="nl"]`)))
	run("Dutch page", chromedp.WaitVisible(chromedp.CSS(`html[lang="nl"]`)))
	if got := text("#count"); got != fmt.Sprintf(dutch.ResultCount, len(ranked)) {
		t.Errorf("count in Dutch: %q", got)
	}
	if got := hrefs(".result-title a"); !slices.Equal(got, want) {
		t.Errorf("Dutch result links %q, want %q", got, want)
	}
	shoot("search-nl.png")
	run("clear", chromedp.Clear(chromedp.CSS("#q")))
	run("type again", chromedp.SendKeys(chromedp.CSS("#q"), "cinnamon"))
	run("submit again", chromedp.Submit(chromedp.CSS("#q")))
	// The results page of the first search is still there until the
	// browser has loaded the next one.
	loc := waitLocation(t, ctx, "q=cinnamon")
	if !strings.Contains(loc, "lang=nl") {
		t.Errorf("the next search left Dutch: %s", loc)
	}
	run("Dutch results", chromedp.WaitVisible(chromedp.CSS("ol.results")))
	if got := text("header nav"); !strings.Contains(got, dutch.NavSites) {
		t.Errorf("navigation after the next search is not Dutch: %q", got)
	}
}

// wholeOnOnePage checks that the results page shows the whole answer of n
// results: the count says n, there is no page number and no pager.
func wholeOnOnePage(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	if got := browser.Run(t, ctx, "count", chromedp.Text(chromedp.CSS("#count"))); got != fmt.Sprintf(english.ResultCount, n) {
		t.Errorf("count %q, want %q", got, fmt.Sprintf(english.ResultCount, n))
	}
	if got := len(browser.Run(t, ctx, "results", chromedp.Nodes(chromedp.CSSAll("ol.results li"), chromedp.AtLeast(0)))); got != n {
		t.Errorf("%d results shown, want all %d", got, n)
	}
	if p := browser.Run(t, ctx, "pager", chromedp.Nodes(chromedp.CSSAll(".pager a"), chromedp.AtLeast(0))); len(p) != 0 {
		t.Errorf("%d pager links for %d results", len(p), n)
	}
	pageOf, _, _ := strings.Cut(english.PageOf, "%[2]d")
	if main := browser.Run(t, ctx, "main", chromedp.Text(chromedp.CSS("main"))); strings.Contains(main, fmt.Sprintf(pageOf, 1)) {
		t.Errorf("%d results on one page, and the page says %q:\n%s", n, fmt.Sprintf(pageOf, 1), main)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// computed returns the computed value of a CSS property of the first
// element matching sel.
func computed(t *testing.T, ctx context.Context, sel, prop string) string {
	t.Helper()
	for _, p := range browser.Run(t, ctx, "style of "+sel, chromedp.ComputedStyle(chromedp.CSS(sel))) {
		if p.Name == prop {
			return p.Value
		}
	}
	return ""
}

// waitLocation waits until the tab's URL contains part, and returns it.
func waitLocation(t *testing.T, ctx context.Context, part string) string {
	t.Helper()
	var loc string
	for deadline := time.Now().Add(browser.ActionTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if loc = browser.Run(t, ctx, "location", chromedp.Location()); strings.Contains(loc, part) {
			return loc
		}
	}
	t.Fatalf("the browser is still at %s, not at a URL with %s", loc, part)
	return ""
}
