package reportendpoint

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// RealisticCrawl is a final report of a typical 20-page site: titles,
// descriptions, headings and link texts of the lengths real sites have,
// and off-site links. Shared with the envtest that measures what the API
// server stores.
func RealisticCrawl(host string, at time.Time) runreport.Report {
	sections := []string{"breads", "pastries", "cakes", "about", "visit", "press", "recipes"}
	var pages []runreport.Page
	for i := range 20 {
		sec := sections[i%len(sections)]
		u := fmt.Sprintf("https://%s/%s/seasonal-sourdough-loaf-%02d.html", host, sec, i)
		pages = append(pages, runreport.Page{
			URL: u, StatusCode: 200, FetchedAt: at.Add(time.Duration(i) * time.Second),
			Title:       fmt.Sprintf("Seasonal sourdough loaf no. %d — Harbour Bakery", i),
			Description: strings.Repeat("Our bakers shape every loaf by hand and bake it in a wood-fired oven. ", 2),
			Headings: runreport.Headings{
				H1: []string{"Seasonal sourdough loaf"},
				H2: []string{"Ingredients", "How we bake it", "Where to buy"},
				H3: []string{"Flour", "Starter", "Salt", "Water"},
			},
			InboundAnchors: []string{"sourdough", "our seasonal loaf", "read more"},
		})
	}
	var links []runreport.OffSiteLink
	for i := range 10 {
		links = append(links, runreport.OffSiteLink{URL: fmt.Sprintf("https://mill%d.example/flour", i), Anchors: []string{"our flour mill"}})
	}
	return runreport.Report{Final: true, Result: runreport.Crawl{
		Pages: pages, OffSiteLinks: links,
		Robots: runreport.Robots{Status: 200, FetchedAt: at},
		// A first crawl of 20 pages of about 60 KB each.
		Stats:   runreport.Stats{BytesReceived: 1_234_567},
		Skipped: []runreport.Skip{{URL: "https://" + host + "/private/", Reason: "disallowed"}},
	}}
}

// TestRealisticSiteIndexIsSmall: at 100,000 sites etcd holds a SiteIndex
// per site, so a typical one stays well under 4 KB serialized, metadata
// included; the texts go to the index backend.
func TestRealisticSiteIndexIsSmall(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	host := "www.harbour-bakery.example"
	owner, _ := site.Parse("https://" + host + "/")
	res := Convert(RealisticCrawl(host, now), owner, "harbour-bakery-crawl-12", 20, now, nil)
	// The stats at their widest: a recrawl can find every page unchanged.
	res.Status.Stats.PagesUnchanged = 20
	// And a verified egress address, the longer of the two.
	res.Status.EgressIP = "79.139.58.121"
	si := crawlv1.SiteIndex{
		TypeMeta: metav1.TypeMeta{APIVersion: crawlv1.GroupVersion.String(), Kind: "SiteIndex"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "harbour-bakery", Namespace: "sites", UID: "6b1f4c57-3c7e-4f0e-9a55-1f0c2d9e8a11",
			ResourceVersion: "123456789", Generation: 1, CreationTimestamp: metav1.NewTime(now),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: crawlv1.GroupVersion.String(), Kind: "CrawlTarget",
				Name: "harbour-bakery", UID: "0c4d1a3e-5b6f-4d7e-8f90-a1b2c3d4e5f6", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec:   crawlv1.SiteIndexSpec{Site: owner.String()},
		Status: res.Status,
	}
	b, err := json.Marshal(si)
	if err != nil {
		t.Fatal(err)
	}
	if len(si.Status.Pages) != 20 || len(res.Doc.Links) != 10 {
		t.Fatalf("fixture: %d pages, %d links", len(si.Status.Pages), len(res.Doc.Links))
	}
	t.Logf("a realistic 20-page SiteIndex is %d bytes serialized (before managedFields)", len(b))
	if len(b) > 4096 {
		t.Errorf("a realistic 20-page SiteIndex is %d bytes serialized, want under 4 KB", len(b))
	}
}
