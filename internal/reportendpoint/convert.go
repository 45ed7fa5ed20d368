package reportendpoint

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// IndexStatus turns a crawler's report into a SiteIndex status. The report
// comes from a Pod that parsed hostile pages, so nothing in it is trusted:
// pages off the site are dropped, the page count is held to the budget, and
// every string and list is cut to the SiteIndex caps.
func IndexStatus(rep runreport.Report, owner site.Site, run string, maxPages int, now time.Time) crawlv1.SiteIndexStatus {
	maxPages = min(maxPages, crawlv1.MaxIndexedPages)
	st := crawlv1.SiteIndexStatus{
		Run:      run,
		Complete: rep.Final,
		Robots: &crawlv1.RobotsStatus{
			StatusCode: int32(clampStatus(rep.Result.Robots.Status)),
			FetchedAt:  timeOrNil(rep.Result.Robots.FetchedAt),
		},
	}
	seen := map[string]bool{}
	for _, p := range rep.Result.Pages {
		if len(st.Pages) == maxPages {
			break
		}
		s, err := site.Parse(p.URL)
		if err != nil || s != owner || len(p.URL) > crawlv1.MaxURLLength || seen[p.URL] {
			continue
		}
		seen[p.URL] = true
		st.Pages = append(st.Pages, crawlv1.IndexedPage{
			URL:         p.URL,
			StatusCode:  int32(clampStatus(p.StatusCode)),
			Title:       runreport.Cut(p.Title, crawlv1.MaxTitleLength),
			Description: runreport.Cut(p.Description, crawlv1.MaxDescriptionLength),
			Headings: crawlv1.Headings{
				H1: runreport.CutAll(p.Headings.H1, crawlv1.MaxHeadingsPerLevel, crawlv1.MaxHeadingLength),
				H2: runreport.CutAll(p.Headings.H2, crawlv1.MaxHeadingsPerLevel, crawlv1.MaxHeadingLength),
				H3: runreport.CutAll(p.Headings.H3, crawlv1.MaxHeadingsPerLevel, crawlv1.MaxHeadingLength),
			},
			InboundAnchors: runreport.CutAll(p.InboundAnchors, crawlv1.MaxInboundAnchors, crawlv1.MaxAnchorLength),
			FetchedAt:      timeOrNil(p.FetchedAt),
			Lang:           runreport.Lang(p.Lang),
		})
	}
	st.OffSiteLinks = offSiteLinks(rep, owner)
	st.Stats = crawlv1.IndexStats{Pages: int32(len(st.Pages)), Skipped: int32(min(len(rep.Result.Skipped), 1<<20))}
	st.Refused = refusal(rep, len(st.Pages))
	if rep.Final {
		st.CrawledAt = &metav1.Time{Time: now}
	}
	if t, err := time.Parse(time.RFC3339, rep.Result.RetryAfter); err == nil && t.After(now) {
		if limit := now.Add(maxRetryAfter); t.After(limit) {
			t = limit
		}
		st.RetryAfter = &metav1.Time{Time: t.Truncate(time.Second)}
	}
	return st
}

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

// Merge decides what a report does to the SiteIndex status. A final report
// replaces it. Progress replaces it too during a site's first crawl, so the
// pages show up as they come; on a recrawl, progress is only counted, and
// the pages of the last complete crawl stay until the new one has ended.
func Merge(current, report crawlv1.SiteIndexStatus, now time.Time) crawlv1.SiteIndexStatus {
	if report.Complete || !current.Complete {
		return report
	}
	next := current
	next.Progress = &crawlv1.CrawlProgress{Run: report.Run, Pages: report.Stats.Pages, UpdatedAt: &metav1.Time{Time: now}}
	return next
}
