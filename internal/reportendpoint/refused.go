package reportendpoint

import (
	"strings"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// refusedPrefix starts the reason of a skipped entry when the crawler
// refused to connect (the crawl document's contract).
const refusedPrefix = "refused: "

// maxRefusedLength caps SiteIndexStatus.Refused (its CRD maxLength): a skip
// reason's own limit.
const maxRefusedLength = runreport.MaxReasonLength

// refusal returns why a final crawl refused the site's own address, or "".
// Only the address rules count (fetch.IsPermanent: IPv6 only, no A record,
// a non-public address): a refused connection or a timeout may be gone
// tomorrow and is retried on the usual schedule. A crawl that indexed pages
// did reach the site, so it was not refused.
func refusal(rep runreport.Report, pages int) string {
	if !rep.Final || pages > 0 {
		return ""
	}
	permanent := []string{fetch.ErrIPv6.Error(), fetch.ErrNoIPv4.Error(), fetch.ErrNonPublic.Error()}
	for _, s := range rep.Result.Skipped {
		if !strings.HasPrefix(s.Reason, refusedPrefix) {
			continue
		}
		for _, p := range permanent {
			if strings.Contains(s.Reason, p) {
				return runreport.Cut(s.Reason, maxRefusedLength)
			}
		}
	}
	return ""
}
