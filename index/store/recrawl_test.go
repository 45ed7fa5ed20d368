package store

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestCarry(t *testing.T) {
	t0, t1 := time.Unix(1000, 0).UTC(), time.Unix(2000, 0).UTC()
	stored := map[string]Page{
		"https://a.example/": {URL: "https://a.example/", StatusCode: 200, Title: "Home", H1: []string{"Welcome"},
			Anchors: []string{"home", "start"}, FetchedAt: t0, Lang: "en", ETag: `"h1"`, LastModified: "Sat, 01 Aug 2026 09:30:00 GMT"},
		"https://a.example/news": {URL: "https://a.example/news", StatusCode: 200, Title: "News", Anchors: []string{"news"}, FetchedAt: t0},
	}
	storedLinks := []Link{{URL: "https://b.example/x", Anchors: []string{"bee"}}, {URL: "https://c.example/y", Anchors: []string{"sea"}}}
	unchangedHome := Page{URL: "https://a.example/", StatusCode: 304, FetchedAt: t1, Unchanged: true}
	for _, tc := range []struct {
		name      string
		doc       SiteDoc
		wantPages []Page
		wantLinks []Link
	}{{
		name:      "no unchanged page: the document as it is",
		doc:       SiteDoc{Pages: []Page{{URL: "https://a.example/", Title: "New"}}},
		wantPages: []Page{{URL: "https://a.example/", Title: "New"}},
	}, {
		name: "unchanged page keeps its fields, gets the fetch time; its validators stay when the 304 sent none",
		doc:  SiteDoc{Pages: []Page{unchangedHome}},
		wantPages: []Page{{URL: "https://a.example/", StatusCode: 200, Title: "Home", H1: []string{"Welcome"},
			Anchors: []string{"home", "start"}, FetchedAt: t1, Lang: "en", ETag: `"h1"`, LastModified: "Sat, 01 Aug 2026 09:30:00 GMT"}},
		wantLinks: storedLinks,
	}, {
		name: "the 304's own validator replaces the stored one, the other stays",
		doc:  SiteDoc{Pages: []Page{{URL: "https://a.example/", StatusCode: 304, FetchedAt: t1, Unchanged: true, ETag: `"h2"`}}},
		wantPages: []Page{{URL: "https://a.example/", StatusCode: 200, Title: "Home", H1: []string{"Welcome"},
			Anchors: []string{"home", "start"}, FetchedAt: t1, Lang: "en", ETag: `"h2"`, LastModified: "Sat, 01 Aug 2026 09:30:00 GMT"}},
		wantLinks: storedLinks,
	}, {
		name: "anchors: the crawl's first, then the stored ones; a changed page beside an unchanged one too",
		doc: SiteDoc{Pages: []Page{
			{URL: "https://a.example/", StatusCode: 304, FetchedAt: t1, Unchanged: true, Anchors: []string{"start", "front"}},
			{URL: "https://a.example/news", StatusCode: 200, Title: "News 2", Anchors: []string{"latest"}, FetchedAt: t1},
		}},
		wantPages: []Page{
			{URL: "https://a.example/", StatusCode: 200, Title: "Home", H1: []string{"Welcome"},
				Anchors: []string{"start", "front", "home"}, FetchedAt: t1, Lang: "en", ETag: `"h1"`, LastModified: "Sat, 01 Aug 2026 09:30:00 GMT"},
			{URL: "https://a.example/news", StatusCode: 200, Title: "News 2", Anchors: []string{"latest", "news"}, FetchedAt: t1},
		},
		wantLinks: storedLinks,
	}, {
		name:      "an unchanged page the index does not hold is left out",
		doc:       SiteDoc{Pages: []Page{{URL: "https://a.example/ghost", StatusCode: 304, Unchanged: true, ETag: `"g"`}}},
		wantPages: []Page{},
		wantLinks: storedLinks,
	}, {
		name:      "links: the crawl's, then stored ones to other URLs",
		doc:       SiteDoc{Pages: []Page{unchangedHome}, Links: []Link{{URL: "https://c.example/y", Anchors: []string{"ocean"}}, {URL: "https://d.example/", Anchors: []string{"dee"}}}},
		wantLinks: []Link{{URL: "https://c.example/y", Anchors: []string{"ocean"}}, {URL: "https://d.example/", Anchors: []string{"dee"}}, {URL: "https://b.example/x", Anchors: []string{"bee"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Carry(tc.doc, stored, storedLinks)
			if tc.wantPages != nil && !reflect.DeepEqual(got.Pages, tc.wantPages) {
				t.Errorf("pages:\n got %+v\nwant %+v", got.Pages, tc.wantPages)
			}
			if !reflect.DeepEqual(got.Links, tc.wantLinks) {
				t.Errorf("links:\n got %+v\nwant %+v", got.Links, tc.wantLinks)
			}
		})
	}
}

// Carried links keep to the caps a crawl's own links keep to.
func TestCarryLinksStayWithinTheCaps(t *testing.T) {
	var stored []Link
	for i := range 80 {
		stored = append(stored, Link{URL: fmt.Sprintf("https://s%d.example/%d", i%12, i), Anchors: []string{"x"}})
	}
	got := Carry(SiteDoc{Pages: []Page{{URL: "https://a.example/", Unchanged: true}}}, nil, stored)
	perSite := map[string]int{}
	for _, l := range got.Links {
		perSite[Host(l.URL)]++
	}
	if len(got.Links) != 50 { // 12 sites × 5 would be 60: the total cap bites first
		t.Errorf("%d links carried", len(got.Links))
	}
	for h, n := range perSite {
		if n > MaxLinksIntoSite {
			t.Errorf("%d links into %s", n, h)
		}
	}
}
