//go:build scale

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/syncer"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/reportendpoint"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// giveResult gives site i a realistic crawl result (realisticCrawl), stored
// where the results endpoint stores one. It is the ONE place in the
// benchmark that knows where results live.
//
// The endpoint converts a crawler's final report once
// (reportendpoint.Convert), writes every kept field to the index backend
// with the run that produced it, then patches the compact record (url,
// title, statusCode, fetchedAt, stats) onto the SiteIndex status. This does
// the same two writes, as an administrator and straight into the manager's
// SQLite file: targets waiting for a slot have no run, so no token to
// report with.
func giveResult(ctx context.Context, c client.Client, st store.Store, n, i int, now time.Time) error {
	owner, err := site.Parse(siteURL(i))
	if err != nil {
		return err
	}
	run := crawlpod.PodName(targetName(i), 1)
	report := runreport.Report{Final: true, Result: realisticCrawl(n, i, now)}
	res := reportendpoint.Convert(report, owner, run, runreport.MaxPages, now, nil)
	res.Doc.Source = syncer.SourceOf(namespace, targetName(i))
	if err := st.ReplaceSite(ctx, res.Doc); err != nil {
		return fmt.Errorf("index the result of site %d: %w", i, err)
	}
	patch, err := json.Marshal(map[string]any{"status": res.Status})
	if err != nil {
		return err
	}
	si := &crawlv1.SiteIndex{}
	si.Namespace, si.Name = namespace, targetName(i)
	if err := c.Status().Patch(ctx, si, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("store the result of site %d: %w", i, err)
	}
	return nil
}

// Sizes of a realistic result, from what the crawler extracts of ordinary
// sites: a 20-page crawl (the budget), titles of about 60 characters,
// descriptions of about 160 (what search engines show), 3 to 8 headings, a
// few texts of links pointing to each page, and some links to other sites.
const (
	resultPages        = runreport.MaxPages
	offSiteLinksPerRun = 8
	skippedPerRun      = 6
)

// realisticCrawl is the document a crawl of site i (of n) would produce:
// the crawler's own format (runreport.Crawl), with texts drawn from a
// vocabulary of common words and made-up ones, so the search index gets a
// realistic mix of shared and rare terms. It is deterministic in i.
func realisticCrawl(n, i int, now time.Time) runreport.Crawl {
	r := rand.New(rand.NewPCG(uint64(i), 0x5ca1e))
	base := strings.TrimSuffix(siteURL(i), "/")
	name := siteName(r)
	crawl := runreport.Crawl{
		Site:      base,
		UserAgent: "LohiSoftBot/1.0 (+https://lohisoft.com/bot)",
		Robots:    runreport.Robots{Status: 200, FetchedAt: now.Add(-10 * time.Minute)},
	}
	for p := range resultPages {
		crawl.Pages = append(crawl.Pages, realisticPage(r, base, name, p, now))
	}
	for range skippedPerRun {
		crawl.Skipped = append(crawl.Skipped, runreport.Skip{URL: base + "/" + slug(r) + "/", Reason: "budget of 20 pages reached"})
	}
	// Links to other sites of the benchmark, so their texts land on pages
	// the index holds, as the syncer does with real off-site links.
	for l := 0; l < offSiteLinksPerRun && n > 1; l++ {
		other := (i + 1 + r.IntN(n-1)) % n
		link := runreport.OffSiteLink{URL: strings.TrimSuffix(siteURL(other), "/") + "/" + slug(r) + ".html"}
		for range 1 + r.IntN(2) {
			link.Anchors = append(link.Anchors, sentence(r, 10, 30))
		}
		crawl.OffSiteLinks = append(crawl.OffSiteLinks, link)
	}
	return crawl
}

func realisticPage(r *rand.Rand, base, name string, p int, now time.Time) runreport.Page {
	url := base + "/"
	if p > 0 {
		url = base + "/" + slug(r) + "/" + slug(r) + ".html"
	}
	page := runreport.Page{
		URL:         url,
		StatusCode:  200,
		Title:       sentence(r, 40, 52) + " | " + name,
		Description: sentence(r, 140, 175) + ".",
		FetchedAt:   now.Add(-time.Duration(20-p) * 3 * time.Second),
	}
	headings := 3 + r.IntN(6)
	page.Headings.H1 = []string{sentence(r, 15, 45)}
	for range headings - 1 {
		if r.IntN(2) == 0 {
			page.Headings.H2 = append(page.Headings.H2, sentence(r, 15, 45))
		} else {
			page.Headings.H3 = append(page.Headings.H3, sentence(r, 15, 45))
		}
	}
	for range 1 + r.IntN(4) {
		page.InboundAnchors = append(page.InboundAnchors, sentence(r, 6, 28))
	}
	return page
}

// commonWords are shared by many sites, as real pages share most of their
// words; made-up words (syllables) are the rare terms.
var commonWords = strings.Fields(`the and for with our your how about contact home news events
	opening hours fresh local best new prices shop service bakery garden repair school museum
	recipes team history delivery booking rooms menu products support reviews tips guide city
	family open today week summer winter courses tickets gallery photos map parking offers
	sale order online free help questions learn more read story village harbour market club
	library workshop studio design travel hotel apartments wine coffee bread cakes bikes cars`)

var syllables = strings.Fields(`ka lo mi ren tas vo del ur sen pa ri mon ta be lin or ga fe nu sol
	ve da kor bri stan mel tov ar is ul zen pe ro hal dim ko va te lu`)

func word(r *rand.Rand) string {
	if r.IntN(10) < 6 {
		return commonWords[r.IntN(len(commonWords))]
	}
	var b strings.Builder
	for range 2 + r.IntN(2) {
		b.WriteString(syllables[r.IntN(len(syllables))])
	}
	return b.String()
}

// sentence is words up to a length drawn from [minLen, maxLen], the first
// capitalised.
func sentence(r *rand.Rand, minLen, maxLen int) string {
	want := minLen + r.IntN(maxLen-minLen+1)
	var b strings.Builder
	for b.Len() < want {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(word(r))
	}
	s := b.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

func slug(r *rand.Rand) string { return word(r) + "-" + word(r) }

func siteName(r *rand.Rand) string {
	w := word(r) + word(r)
	return strings.ToUpper(w[:1]) + w[1:]
}
