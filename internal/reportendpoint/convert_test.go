package reportendpoint

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
)

func TestConvert(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	owner, _ := site.Parse("https://example.com/")
	page := func(url string) runreport.Page {
		return runreport.Page{URL: url, StatusCode: 200, Title: "T", FetchedAt: now.Add(-time.Minute)}
	}
	long := strings.Repeat("é", 1000) // 2000 bytes
	many := make([]string, 40)
	for i := range many {
		many[i] = "h"
	}

	tests := []struct {
		name     string
		rep      runreport.Report
		maxPages int
		check    func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc)
	}{
		{
			name:     "off-site, other port, other scheme and duplicate pages are dropped",
			maxPages: 20,
			rep: runreport.Report{Result: runreport.Crawl{Pages: []runreport.Page{
				page("https://example.com/a"), page("https://example.com:8443/b"), page("http://example.com/c"),
				page("https://evil.net/d"), page("https://example.com/a"), page("not a url"), page("https://EXAMPLE.com/e"),
			}}},
			check: func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				var urls []string
				for _, p := range st.Pages {
					urls = append(urls, p.URL)
				}
				// In the crawler's canonical form, so links from other sites
				// find them: relative to the site in the SiteIndex, in full
				// in the backend.
				if strings.Join(urls, " ") != "/a /e" {
					t.Errorf("pages = %v", urls)
				}
				if len(doc.Pages) != 2 || doc.Pages[0].URL != "https://example.com/a" || doc.Pages[1].URL != "https://example.com/e" {
					t.Errorf("backend pages = %+v", doc.Pages)
				}
				if st.Complete || st.CrawlTime != nil {
					t.Error("progress report marked complete")
				}
			},
		},
		{
			name:     "budget holds",
			maxPages: 2,
			rep: runreport.Report{Final: true, Result: runreport.Crawl{Pages: []runreport.Page{
				page("https://example.com/1"), page("https://example.com/2"), page("https://example.com/3")},
				Skipped: []runreport.Skip{{URL: "https://example.com/x", Reason: "disallowed"}}}},
			check: func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				if len(st.Pages) != 2 || st.Stats.Pages != 2 || st.Stats.Skipped != 1 {
					t.Errorf("pages %d stats %+v", len(st.Pages), st.Stats)
				}
				if !st.Complete || st.CrawlTime == nil || !st.CrawlTime.Time.Equal(now) || st.Run != "run-1" {
					t.Errorf("final report not recorded: %+v", st)
				}
			},
		},
		{
			name:     "strings and lists are cut to the caps on rune boundaries",
			maxPages: 20,
			rep: runreport.Report{Result: runreport.Crawl{Pages: []runreport.Page{{
				URL: "https://example.com/", Title: long, Description: long + long,
				Headings:       runreport.Headings{H1: many, H2: []string{long}, H3: []string{"  ", "ok"}},
				InboundAnchors: append([]string{"bad \xff utf8"}, many...),
			}}}},
			check: func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				if c := st.Pages[0].Title; len(c) > crawlv1.MaxTitleLength || !utf8.ValidString(c) || len(c) < crawlv1.MaxTitleLength-1 {
					t.Errorf("SiteIndex title cut to %d bytes", len(c))
				}
				p := doc.Pages[0]
				if p.Title != st.Pages[0].Title {
					t.Errorf("backend title %d bytes, SiteIndex %d", len(p.Title), len(st.Pages[0].Title))
				}
				if len(p.Description) > runreport.MaxDescriptionLength || !utf8.ValidString(p.Description) {
					t.Errorf("description %d bytes", len(p.Description))
				}
				if len(p.H1) != runreport.MaxHeadingsPerLevel || len(p.H2[0]) > runreport.MaxHeadingLength {
					t.Errorf("headings not capped: %d h1, h2 %d bytes", len(p.H1), len(p.H2[0]))
				}
				if len(p.H3) != 1 || p.H3[0] != "ok" {
					t.Errorf("blank heading kept: %q", p.H3)
				}
				if len(p.Anchors) != runreport.MaxInboundAnchors || !utf8.ValidString(p.Anchors[0]) {
					t.Errorf("anchors = %q", p.Anchors[:1])
				}
			},
		},
		{
			name:     "language tags: valid ones lower-cased, anything else dropped",
			maxPages: 20,
			rep: runreport.Report{Result: runreport.Crawl{Pages: []runreport.Page{
				{URL: "https://example.com/1", Lang: "SK"},
				{URL: "https://example.com/2", Lang: `it"><img src=x>`},
				{URL: "https://example.com/3", Lang: strings.Repeat("en-us", 1000)},
				{URL: "https://example.com/4", Lang: "nl-BE"},
			}}},
			check: func(t *testing.T, _ crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				var got []string
				for _, p := range doc.Pages {
					got = append(got, p.Lang)
				}
				if strings.Join(got, ",") != "sk,,,nl-be" {
					t.Errorf("langs = %q, want [sk, , , nl-be]", got)
				}
			},
		},
		{
			name:     "off-site links of a progress report are not kept",
			maxPages: 20,
			rep: runreport.Report{Result: runreport.Crawl{OffSiteLinks: []runreport.OffSiteLink{
				{URL: "https://bakery.example/", Anchors: []string{"injected"}}}}},
			check: func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				if len(doc.Links) != 0 {
					t.Errorf("links = %+v", doc.Links)
				}
			},
		},
		{
			name:     "off-site links capped per linked site, duplicates once",
			maxPages: 20,
			rep: runreport.Report{Final: true, Result: runreport.Crawl{OffSiteLinks: []runreport.OffSiteLink{
				{URL: "https://bakery.example/1"}, {URL: "https://bakery.example/1"}, {URL: "https://bakery.example/2"},
				{URL: "https://bakery.example/3"}, {URL: "https://bakery.example/4"}, {URL: "https://bakery.example/5"},
				{URL: "https://bakery.example/6"}, {URL: "https://other.example/"}}}},
			check: func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				var urls []string
				for _, l := range doc.Links {
					urls = append(urls, strings.TrimPrefix(l.URL, "https://"))
				}
				if strings.Join(urls, " ") != "bakery.example/1 bakery.example/2 bakery.example/3 bakery.example/4 bakery.example/5 other.example/" {
					t.Errorf("links = %v", urls)
				}
			},
		},
		{
			name:     "off-site links are kept, on-site and malformed ones dropped, capped",
			maxPages: 20,
			rep: runreport.Report{Final: true, Result: runreport.Crawl{OffSiteLinks: append([]runreport.OffSiteLink{
				{URL: "https://other.org/page", Anchors: []string{"a", "b", "c", "d", "e"}},
				{URL: "https://example.com/self", Anchors: []string{"x"}},
				{URL: "mailto:someone@example.com", Anchors: []string{"x"}},
			}, make([]runreport.OffSiteLink, 100)...)}},
			check: func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				if len(doc.Links) != 1 || doc.Links[0].URL != "https://other.org/page" ||
					len(doc.Links[0].Anchors) != runreport.MaxOffSiteAnchors {
					t.Errorf("links = %+v", doc.Links)
				}
			},
		},
		{
			name:     "retry-after is kept when in the future and capped at a month",
			maxPages: 20,
			rep:      runreport.Report{Final: true, Result: runreport.Crawl{RetryAfter: now.Add(90 * 24 * time.Hour).Format(time.RFC3339)}},
			check: func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				if st.RetryAfterTime == nil || !st.RetryAfterTime.Time.Equal(now.Add(maxRetryAfter)) {
					t.Errorf("retryAfter = %v", st.RetryAfterTime)
				}
			},
		},
		{
			name:     "retry-after in the past or garbled is ignored",
			maxPages: 20,
			rep:      runreport.Report{Final: true, Result: runreport.Crawl{RetryAfter: "soon", Robots: runreport.Robots{Status: 5000}}},
			check: func(t *testing.T, st crawlv1.SiteIndexStatus, doc store.SiteDoc) {
				if st.RetryAfterTime != nil || st.Robots.StatusCode != 0 {
					t.Errorf("retryAfter = %v robots = %+v", st.RetryAfterTime, st.Robots)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Convert(tt.rep, owner, "run-1", tt.maxPages, now, nil)
			if res.Doc.Site != "https://example.com:443" || res.Doc.Run != "run-1" {
				t.Errorf("document of site %q run %q", res.Doc.Site, res.Doc.Run)
			}
			tt.check(t, res.Status, res.Doc)
		})
	}
}

func TestMerge(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	page := func(u string) crawlv1.IndexedPage { return crawlv1.IndexedPage{URL: u} }
	complete := crawlv1.SiteIndexStatus{Run: "t-crawl-1", Complete: true,
		Pages: []crawlv1.IndexedPage{page("a"), page("b")}, Stats: crawlv1.IndexStats{Pages: 2}}
	progress := crawlv1.SiteIndexStatus{Run: "t-crawl-2", Pages: []crawlv1.IndexedPage{page("c")}, Stats: crawlv1.IndexStats{Pages: 1}}
	final := crawlv1.SiteIndexStatus{Run: "t-crawl-2", Complete: true, Pages: []crawlv1.IndexedPage{page("c"), page("d"), page("e")}}

	// First crawl: progress shows as pages.
	if got := Merge(crawlv1.SiteIndexStatus{}, progress, now); len(got.Pages) != 1 || got.Progress != nil {
		t.Errorf("first crawl progress = %+v", got)
	}
	// Recrawl: the complete pages stay, progress is counted.
	got := Merge(complete, progress, now)
	if len(got.Pages) != 2 || got.Run != "t-crawl-1" || !got.Complete ||
		got.Progress == nil || got.Progress.Run != "t-crawl-2" || got.Progress.Pages != 1 || !got.Progress.UpdateTime.Time.Equal(now) {
		t.Errorf("recrawl progress = %+v", got)
	}
	// The final result replaces everything, progress included.
	if got := Merge(got, final, now); len(got.Pages) != 3 || got.Run != "t-crawl-2" || got.Progress != nil {
		t.Errorf("final = %+v", got)
	}
}

// A recrawl's unchanged pages: the compact record keeps the title and
// status code the SiteIndex has, the document marks them for the backend
// (which keeps their texts), an unchanged page the SiteIndex does not have
// is dropped, and the stats are the manager's count, not the crawler's.
func TestConvertUnchanged(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	owner, _ := site.Parse("https://example.com/")
	fetched := now.Add(-time.Minute)
	prev := []crawlv1.IndexedPage{{URL: "/", StatusCode: 200, Title: "Home"}, {URL: "/news", StatusCode: 203, Title: "News"}}
	rep := runreport.Report{Final: true, Result: runreport.Crawl{
		Pages: []runreport.Page{
			{URL: "https://example.com/", StatusCode: 304, FetchedAt: fetched, ETag: `"h1"`, Unchanged: true, InboundAnchors: []string{"home"}},
			{URL: "https://example.com/news", StatusCode: 200, Title: "News today", FetchedAt: fetched, ETag: `W/"n2"`},
			{URL: "https://example.com/ghost", StatusCode: 304, FetchedAt: fetched, ETag: `"g"`, Unchanged: true},
		},
		Stats: runreport.Stats{BytesReceived: 4321, PagesUnchanged: 99},
	}}
	res := Convert(rep, owner, "run-2", 20, now, prev)
	wantStatus := []crawlv1.IndexedPage{
		{URL: "/", StatusCode: 200, Title: "Home", FetchTime: &metav1.Time{Time: fetched.Truncate(time.Second)}},
		{URL: "/news", StatusCode: 200, Title: "News today", FetchTime: &metav1.Time{Time: fetched.Truncate(time.Second)}},
	}
	if !reflect.DeepEqual(res.Status.Pages, wantStatus) {
		t.Errorf("status pages:\n got %+v\nwant %+v", res.Status.Pages, wantStatus)
	}
	if st := res.Status.Stats; st.Pages != 2 || st.PagesUnchanged != 1 || st.BytesReceived != 4321 {
		t.Errorf("stats %+v", st)
	}
	if len(res.Doc.Pages) != 2 || !res.Doc.Pages[0].Unchanged || res.Doc.Pages[0].ETag != `"h1"` || res.Doc.Pages[1].Unchanged ||
		res.Doc.Pages[1].ETag != `W/"n2"` || res.Doc.BytesReceived != 4321 || res.Doc.PagesUnchanged != 1 {
		t.Errorf("document %+v", res.Doc)
	}
	rep.Result.Stats.BytesReceived = -5
	if got := Convert(rep, owner, "run-2", 20, now, prev).Status.Stats.BytesReceived; got != 0 {
		t.Errorf("negative bytes received stored as %d", got)
	}
}

// A target on http://example.com/ whose start URL moved the crawl to
// https://example.com: the report says so, and the pages are the https
// site's. Nothing else a report claims moves the target's site.
func TestConvertUpgradedSite(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	owner, _ := site.Parse("http://example.com/")
	pages := []runreport.Page{
		{URL: "https://example.com/a", StatusCode: 200}, {URL: "http://example.com/b", StatusCode: 200},
		{URL: "https://example.com:8443/c", StatusCode: 200}, {URL: "https://evil.net/d", StatusCode: 200},
	}
	links := []runreport.OffSiteLink{{URL: "http://example.com/plain", Anchors: []string{"plain"}}, {URL: "https://example.com/self"}}
	tests := []struct {
		reported, wantSite, wantStatusSite string
		wantPages                          []string
		wantLinks                          []string
	}{
		{"https://example.com:443", "https://example.com:443", "https://example.com:443", []string{"https://example.com/a"}, []string{"http://example.com/plain"}},
		{"http://example.com:80", "http://example.com:80", "", []string{"http://example.com/b"}, []string{"https://example.com/self"}},
		{"https://example.com:8443", "http://example.com:80", "", []string{"http://example.com/b"}, []string{"https://example.com/self"}},
		{"https://evil.net:443", "http://example.com:80", "", []string{"http://example.com/b"}, []string{"https://example.com/self"}},
		{"", "http://example.com:80", "", []string{"http://example.com/b"}, []string{"https://example.com/self"}},
	}
	for _, tt := range tests {
		rep := runreport.Report{Final: true, Result: runreport.Crawl{Site: tt.reported, Pages: pages, OffSiteLinks: links}}
		res := Convert(rep, owner, "run-1", 20, now, nil)
		var got, gotLinks []string
		for _, p := range res.Doc.Pages {
			got = append(got, p.URL)
		}
		for _, l := range res.Doc.Links {
			gotLinks = append(gotLinks, l.URL)
		}
		if res.Doc.Site != tt.wantSite || res.Status.Site != tt.wantStatusSite || !slices.Equal(got, tt.wantPages) || !slices.Equal(gotLinks, tt.wantLinks) {
			t.Errorf("reported %q: doc site %q status.site %q pages %v links %v; want %q %q %v %v",
				tt.reported, res.Doc.Site, res.Status.Site, got, gotLinks, tt.wantSite, tt.wantStatusSite, tt.wantPages, tt.wantLinks)
		}
		doc := res.Doc
		doc.Source = "ns/a" // the endpoint sets it from the SiteIndex
		if err := doc.Validate(); err != nil {
			t.Errorf("reported %q: the backend would refuse the document: %v", tt.reported, err)
		}
	}
}
