package reportendpoint

import (
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// offSiteLinks keeps the links a run reports to other sites, for the index
// backend. They put their texts on pages the run's target does not own, so
// they are taken only from the final report (the run's accepted result,
// which replaces the last one whole), at most runreport.MaxOffSiteLinks in
// all and store.MaxLinksIntoSite into any one other site, each with at
// most runreport.MaxOffSiteAnchors texts, URLs in canonical form. A
// progress report carries none: a stolen token cannot put words on another
// site's pages by sending progress. Links into excluded domains are
// dropped when the document is written (the index's syncer).
func offSiteLinks(rep runreport.Report, owner site.Site) []store.Link {
	if !rep.Final {
		return nil
	}
	var out []store.Link
	into := map[site.Site]int{}
	seen := map[string]bool{}
	for _, l := range rep.Result.OffSiteLinks {
		if len(out) == runreport.MaxOffSiteLinks {
			break
		}
		u, ok := canonical(l.URL)
		if !ok || len(u) > runreport.MaxURLLength || seen[u] {
			continue
		}
		s, err := site.Parse(u)
		if err != nil || s == owner || into[s] == store.MaxLinksIntoSite {
			continue
		}
		seen[u] = true
		into[s]++
		out = append(out, store.Link{URL: u, Anchors: runreport.CutAll(l.Anchors, runreport.MaxOffSiteAnchors, runreport.MaxAnchorLength)})
	}
	return out
}
