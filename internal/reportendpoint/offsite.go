package reportendpoint

import (
	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// offSiteLinks keeps the links a run reports to other sites. They put
// their texts on pages the run's target does not own, so they are taken
// only from the final report (the run's accepted result, which replaces
// the last one whole), at most crawlv1.MaxOffSiteLinks in all and
// store.MaxLinksIntoSite into any one other site, each with at most
// crawlv1.MaxOffSiteAnchors texts. A progress report carries none: a
// stolen token cannot put words on another site's pages by sending
// progress.
func offSiteLinks(rep runreport.Report, owner site.Site) []crawlv1.OffSiteLink {
	if !rep.Final {
		return nil
	}
	var out []crawlv1.OffSiteLink
	into := map[site.Site]int{}
	seen := map[string]bool{}
	for _, l := range rep.Result.OffSiteLinks {
		if len(out) == crawlv1.MaxOffSiteLinks {
			break
		}
		s, err := site.Parse(l.URL)
		if err != nil || s == owner || len(l.URL) > crawlv1.MaxURLLength || seen[l.URL] || into[s] == store.MaxLinksIntoSite {
			continue
		}
		seen[l.URL] = true
		into[s]++
		out = append(out, crawlv1.OffSiteLink{
			URL:     l.URL,
			Anchors: runreport.CutAll(l.Anchors, crawlv1.MaxOffSiteAnchors, crawlv1.MaxAnchorLength),
		})
	}
	return out
}
