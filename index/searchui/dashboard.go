package searchui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// SitesPerPage is how many sites a page of the dashboard lists.
const SitesPerPage = 100

// Target is what the dashboard shows of one CrawlTarget.
type Target struct {
	Namespace, Name string
	// Site is the status's site, or the one spec.url names before the
	// operator has written a status.
	Site  string
	Phase string
	// Ready is the Ready condition's status, reason and message ("" when
	// there is none yet).
	Ready, Reason, Message string
	Suspended              bool
	LastCrawl, NextCrawl   time.Time
}

// TargetOf reads what the dashboard shows of ct.
func TargetOf(ct *crawlv1.CrawlTarget) Target {
	t := Target{
		Namespace: ct.Namespace, Name: ct.Name, Site: ct.Status.Site,
		Phase: string(ct.Status.Phase), Suspended: ct.Spec.CrawlPolicyOrDefault() == crawlv1.CrawlPolicySuspended,
	}
	if t.Site == "" {
		if s, err := site.Parse(ct.Spec.URL); err == nil {
			t.Site = s.String()
		}
	}
	if c := meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionReady); c != nil {
		t.Ready, t.Reason, t.Message = string(c.Status), c.Reason, c.Message
	}
	if ct.Status.LastCrawlTime != nil {
		t.LastCrawl = ct.Status.LastCrawlTime.Time
	}
	if ct.Status.NextCrawlTime != nil {
		t.NextCrawl = ct.Status.NextCrawlTime.Time
	}
	return t
}

// Targets lists the CrawlTargets the manager watches. An error leaves the
// dashboard showing the index alone, saying that the state is unknown.
type Targets func(ctx context.Context) ([]Target, error)

// SiteRow is one line of the dashboard: a site in the index, or one a
// CrawlTarget names, or both.
type SiteRow struct {
	Site, Host string
	// Indexed says whether the index has the site; Pages and CrawledAt
	// are the index's.
	Indexed   bool
	Pages     int
	CrawledAt time.Time
	// BytesReceived and PagesUnchanged are the index's stats of the crawl
	// the pages come from.
	BytesReceived  int64
	PagesUnchanged int
	// LastCrawl is when the indexed pages were crawled, or when a target
	// last crawled the site if the index does not have it (yet).
	// NextCrawl is the earliest next crawl of its targets.
	LastCrawl, NextCrawl time.Time
	// Targets are the site's CrawlTargets by namespace and name: none
	// when the manager does not watch the site's namespace or the target
	// is gone, more than one when a second target names an owned site.
	Targets []Target
}

// Join lines up the indexed sites with the CrawlTargets of their sites,
// sorted by site. A target whose site is not indexed yet gets a row of its
// own; a target without a site (its URL cannot be parsed) too, under its
// spec's site "" so it still shows up.
func Join(sites []store.SiteInfo, targets []Target) []SiteRow {
	rows := make(map[string]*SiteRow, len(sites))
	for _, s := range sites {
		rows[s.Site] = &SiteRow{Site: s.Site, Host: s.Host, Indexed: true, Pages: s.Pages, CrawledAt: s.CrawledAt, LastCrawl: s.CrawledAt,
			BytesReceived: s.BytesReceived, PagesUnchanged: s.PagesUnchanged}
	}
	for _, t := range targets {
		r, ok := rows[t.Site]
		if !ok {
			r = &SiteRow{Site: t.Site, Host: site.HostOf(t.Site)}
			rows[t.Site] = r
		}
		r.Targets = append(r.Targets, t)
		if !r.Indexed && t.LastCrawl.After(r.LastCrawl) {
			r.LastCrawl = t.LastCrawl
		}
		if !t.NextCrawl.IsZero() && (r.NextCrawl.IsZero() || t.NextCrawl.Before(r.NextCrawl)) {
			r.NextCrawl = t.NextCrawl
		}
	}
	// Sorting pointers, not rows: at 100,000 sites moving the rows costs
	// more than comparing them.
	sorted := make([]*SiteRow, 0, len(rows))
	for _, r := range rows {
		slices.SortFunc(r.Targets, func(a, b Target) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		sorted = append(sorted, r)
	}
	slices.SortFunc(sorted, func(a, b *SiteRow) int { return cmp.Compare(a.Site, b.Site) })
	out := make([]SiteRow, len(sorted))
	for i, r := range sorted {
		out[i] = *r
	}
	return out
}

// Received is the bytes the row's last crawl received, as Size writes them.
func (r SiteRow) Received() string { return Size(r.BytesReceived) }

// Size writes a byte count in whole SI units (B, kB, MB, GB), rounded, so no
// language's decimal separator is needed; "" for none.
func Size(n int64) string {
	if n <= 0 {
		return ""
	}
	units := []string{"B", "kB", "MB", "GB"}
	i := 0
	for ; i < len(units)-1 && n >= 9995; i++ {
		n = (n + 500) / 1000
	}
	return fmt.Sprintf("%d %s", n, units[i])
}

// OnHost returns the rows of sites on host.
func OnHost(rows []SiteRow, host string) []SiteRow {
	var out []SiteRow
	for _, r := range rows {
		if r.Host == host {
			out = append(out, r)
		}
	}
	return out
}
