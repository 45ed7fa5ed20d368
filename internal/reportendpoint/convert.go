package reportendpoint

import (
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/urlnorm"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// Result is what one report holds for the manager: the compact SiteIndex
// status (which pages, their titles, status codes and fetch times, and the
// run's stats) and the full document for the index backend (every kept
// field, and the run's off-site links). Doc.Source is the caller's to set.
type Result struct {
	Status crawlv1.SiteIndexStatus
	Doc    store.SiteDoc
}

// Convert turns a crawler's report into a Result. The report comes from a
// Pod that parsed hostile pages, so nothing in it is trusted: pages off the
// site and duplicates are dropped, URLs are put in the crawler's canonical
// form (so a link from another site finds the page), the page count is
// held to the budget, and every string and list is cut to the limits of
// package runreport.
//
// An unchanged page (the site answered 304) has no texts in the report:
// its compact record takes the title and status code of the same page in
// prev (the SiteIndex's records of the last crawl), and the backend keeps
// the rest (store.Carry). An unchanged page prev does not hold is dropped:
// there is nothing to keep of it.
func Convert(rep runreport.Report, owner site.Site, run string, maxPages int, now time.Time, prev []crawlv1.IndexedPage) Result {
	maxPages = min(maxPages, crawlv1.MaxIndexedPages)
	st := crawlv1.SiteIndexStatus{
		Run:      run,
		Complete: rep.Final,
		Robots: &crawlv1.RobotsStatus{
			StatusCode: int32(clampStatus(rep.Result.Robots.Status)),
			FetchTime:  timeOrNil(rep.Result.Robots.FetchedAt),
		},
	}
	// The pages are the upgraded site's when the crawl says its start URL
	// moved to https on the same host; any other site it names is not
	// the target's, and its pages are dropped below.
	crawled := owner.Crawled(rep.Result.Site)
	if crawled != owner {
		st.Site = crawled.String()
	}
	doc := store.SiteDoc{Site: crawled.String(), Run: run}
	before := make(map[string]crawlv1.IndexedPage, len(prev))
	for _, p := range prev {
		before[p.URL] = p
	}
	seen := map[string]bool{}
	unchanged := 0
	for _, p := range rep.Result.Pages {
		if len(st.Pages) == maxPages {
			break
		}
		u, ok := canonical(p.URL)
		if !ok || len(u) > crawlv1.MaxURLLength || seen[u] {
			continue
		}
		if s, err := site.Parse(u); err != nil || s != crawled {
			continue
		}
		status, title := int32(clampStatus(p.StatusCode)), runreport.Cut(p.Title, crawlv1.MaxTitleLength)
		if p.Unchanged {
			old, ok := before[onSite(u)]
			if !ok {
				continue
			}
			status, title = old.StatusCode, old.Title
			unchanged++
		}
		seen[u] = true
		fetched := timeOrNil(p.FetchedAt)
		st.Pages = append(st.Pages, crawlv1.IndexedPage{URL: onSite(u), StatusCode: status, Title: title, FetchTime: fetched})
		page := store.Page{
			URL: u, StatusCode: clampStatus(p.StatusCode), Title: title,
			Description: runreport.Cut(p.Description, runreport.MaxDescriptionLength),
			H1:          runreport.CutAll(p.Headings.H1, runreport.MaxHeadingsPerLevel, runreport.MaxHeadingLength),
			H2:          runreport.CutAll(p.Headings.H2, runreport.MaxHeadingsPerLevel, runreport.MaxHeadingLength),
			H3:          runreport.CutAll(p.Headings.H3, runreport.MaxHeadingsPerLevel, runreport.MaxHeadingLength),
			Anchors:     runreport.CutAll(p.InboundAnchors, runreport.MaxInboundAnchors, runreport.MaxAnchorLength),
			Lang:        runreport.Lang(p.Lang),
			// The store keeps only validators runreport.ETag and
			// runreport.LastModified allow.
			ETag: p.ETag, LastModified: p.LastModified,
			Unchanged: p.Unchanged,
		}
		if fetched != nil {
			page.FetchedAt = fetched.Time
		}
		doc.Pages = append(doc.Pages, page)
	}
	doc.Links = offSiteLinks(rep, crawled)
	st.Stats = crawlv1.IndexStats{
		Pages: int32(len(st.Pages)), Skipped: int32(min(len(rep.Result.Skipped), 1<<20)),
		BytesReceived: min(max(rep.Result.Stats.BytesReceived, 0), maxBytesReceived), PagesUnchanged: int32(unchanged),
	}
	doc.BytesReceived, doc.PagesUnchanged = st.Stats.BytesReceived, unchanged
	st.Refused = refusal(rep, len(st.Pages))
	if rep.Final {
		st.CrawlTime = &metav1.Time{Time: now}
		doc.CrawledAt = st.CrawlTime.Time
	}
	if t, err := time.Parse(time.RFC3339, rep.Result.RetryAfter); err == nil && t.After(now) {
		if limit := now.Add(maxRetryAfter); t.After(limit) {
			t = limit
		}
		st.RetryAfterTime = &metav1.Time{Time: t.Truncate(time.Second)}
	}
	return Result{Status: st, Doc: doc}
}

// maxBytesReceived bounds the bytes a crawler may say it received: far
// above 20 pages of 2 MiB with their retries, robots.txt and headers.
const maxBytesReceived = 1 << 40

// maxRetryAfter stops a site from pushing the bot away for more than a
// month, by accident or malice; the operator's own schedule takes over.
const maxRetryAfter = 30 * 24 * time.Hour

func clampStatus(code int) int {
	if code < 0 || code > 999 {
		return 0
	}
	return code
}

func timeOrNil(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &metav1.Time{Time: t.Truncate(time.Second)}
}

// canonical writes a URL the way the crawler does (crawler/urlnorm), so a
// link from one site finds the page of another however either was written.
func canonical(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	return urlnorm.Normalize(u).String(), true
}

// onSite is a page's URL relative to its site (path and query): the
// SiteIndex names the site once, in spec.site, instead of in each of 20
// records.
func onSite(canonicalURL string) string {
	u, err := url.Parse(canonicalURL)
	if err != nil {
		return canonicalURL // canonical URLs parse
	}
	return u.RequestURI()
}

// Replaces reports whether a report replaces the indexed pages, in the
// SiteIndex and in the index backend alike: a final report always does;
// progress does during a site's first crawl, so the pages show up as they
// come. On a recrawl, progress is only counted, and search keeps the last
// complete crawl until the new one delivers its final result.
func Replaces(current, report crawlv1.SiteIndexStatus) bool {
	return report.Complete || !current.Complete
}

// Merge decides what a report does to the SiteIndex status (see Replaces):
// the report's status, or the current one with the recrawl's progress.
func Merge(current, report crawlv1.SiteIndexStatus, now time.Time) crawlv1.SiteIndexStatus {
	if Replaces(current, report) {
		return report
	}
	next := current
	next.Progress = &crawlv1.CrawlProgress{Run: report.Run, Pages: report.Stats.Pages, UpdateTime: &metav1.Time{Time: now}}
	return next
}
