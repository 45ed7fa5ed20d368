package syncer

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/index/store"
)

func TestDocument(t *testing.T) {
	crawled := metav1.NewTime(time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))
	fetched := metav1.NewTime(crawled.Add(-time.Minute))
	si := func(siteURL string, pages []crawlv1.IndexedPage, links ...crawlv1.OffSiteLink) *crawlv1.SiteIndex {
		return &crawlv1.SiteIndex{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
			Spec:       crawlv1.SiteIndexSpec{Site: siteURL},
			Status:     crawlv1.SiteIndexStatus{Pages: pages, OffSiteLinks: links, CrawledAt: &crawled, Complete: true},
		}
	}
	none := func(string) bool { return false }
	blocked := func(host string) bool { return strings.HasSuffix(host, "blocked.example") }

	tests := []struct {
		name     string
		in       *crawlv1.SiteIndex
		excluded func(string) bool
		want     store.SiteDoc
		wantOK   bool
		wantErr  bool
	}{{
		name: "every field carried over",
		in: si("https://a.example:443", []crawlv1.IndexedPage{{
			URL: "https://a.example/", StatusCode: 200, Title: "T", Description: "D",
			Headings:       crawlv1.Headings{H1: []string{"h1"}, H2: []string{"h2"}, H3: []string{"h3"}},
			InboundAnchors: []string{"home"}, FetchedAt: &fetched, Lang: "nl-be",
		}, {
			// Written past the API server's validation (an older CRD, a
			// hand edit): checked again.
			URL: "https://a.example/bad-lang", Lang: "NL-BE<script>",
		}, {
			URL: "https://a.example/upper", Lang: "EN-GB",
		}}, crawlv1.OffSiteLink{URL: "https://b.example/x", Anchors: []string{"bee"}}),
		excluded: none,
		wantOK:   true,
		want: store.SiteDoc{Source: "ns/a", Site: "https://a.example:443", CrawledAt: crawled.Time,
			Pages: []store.Page{{URL: "https://a.example/", StatusCode: 200, Title: "T", Description: "D",
				H1: []string{"h1"}, H2: []string{"h2"}, H3: []string{"h3"}, Anchors: []string{"home"}, FetchedAt: fetched.Time, Lang: "nl-be"},
				{URL: "https://a.example/bad-lang"}, {URL: "https://a.example/upper", Lang: "en-gb"}},
			Links: []store.Link{{URL: "https://b.example/x", Anchors: []string{"bee"}}}},
	}, {
		name: "URLs canonical, stray pages and self links dropped, duplicates once",
		in: si("HTTPS://A.example", []crawlv1.IndexedPage{
			{URL: "https://a.example/1"}, {URL: "https://b.example/"}, {URL: "http://a.example/"},
			{URL: "not a url"}, {URL: "HTTPS://A.EXAMPLE:443/1#frag", Title: "second copy"}, {URL: "https://a.example:443"},
		}, crawlv1.OffSiteLink{URL: "https://a.example/self"}, crawlv1.OffSiteLink{URL: "mailto:x@y"},
			crawlv1.OffSiteLink{URL: "http://a.example:80/other-scheme"}),
		excluded: none,
		wantOK:   true,
		want: store.SiteDoc{Source: "ns/a", Site: "https://a.example:443", CrawledAt: crawled.Time,
			Pages: []store.Page{{URL: "https://a.example/1"}, {URL: "https://a.example/"}},
			Links: []store.Link{{URL: "http://a.example/other-scheme"}}},
	}, {
		name:     "excluded site yields nothing",
		in:       si("https://www.blocked.example:443", []crawlv1.IndexedPage{{URL: "https://www.blocked.example/"}}),
		excluded: blocked,
		wantOK:   false,
	}, {
		name: "links into excluded domains dropped",
		in: si("https://a.example:443", nil,
			crawlv1.OffSiteLink{URL: "https://blocked.example/", Anchors: []string{"x"}},
			crawlv1.OffSiteLink{URL: "https://ok.example/", Anchors: []string{"y"}}),
		excluded: blocked,
		wantOK:   true,
		want: store.SiteDoc{Source: "ns/a", Site: "https://a.example:443", CrawledAt: crawled.Time,
			Links: []store.Link{{URL: "https://ok.example/", Anchors: []string{"y"}}}},
	}, {
		// A progress report of a first crawl shows its pages at once, but
		// its link texts land on other sites only with the final result.
		name: "links of an unfinished run are not indexed",
		in: func() *crawlv1.SiteIndex {
			x := si("https://a.example:443", []crawlv1.IndexedPage{{URL: "https://a.example/"}},
				crawlv1.OffSiteLink{URL: "https://bakery.example/", Anchors: []string{"injected"}})
			x.Status.Complete, x.Status.CrawledAt = false, nil
			return x
		}(),
		excluded: none,
		wantOK:   true,
		want:     store.SiteDoc{Source: "ns/a", Site: "https://a.example:443", Pages: []store.Page{{URL: "https://a.example/"}}},
	}, {
		name: "links into one other site capped, duplicates once",
		in: si("https://a.example:443", nil,
			crawlv1.OffSiteLink{URL: "https://b.example/1", Anchors: []string{"b1"}},
			crawlv1.OffSiteLink{URL: "https://B.example/1#again", Anchors: []string{"dup"}},
			crawlv1.OffSiteLink{URL: "https://b.example/2"}, crawlv1.OffSiteLink{URL: "https://b.example/3"},
			crawlv1.OffSiteLink{URL: "https://b.example/4"}, crawlv1.OffSiteLink{URL: "https://b.example/5"},
			crawlv1.OffSiteLink{URL: "https://b.example/6", Anchors: []string{"over the cap"}},
			crawlv1.OffSiteLink{URL: "http://b.example/", Anchors: []string{"another site of the host"}},
			crawlv1.OffSiteLink{URL: "https://c.example/", Anchors: []string{"c"}}),
		excluded: none,
		wantOK:   true,
		want: store.SiteDoc{Source: "ns/a", Site: "https://a.example:443", CrawledAt: crawled.Time,
			Links: []store.Link{{URL: "https://b.example/1", Anchors: []string{"b1"}}, {URL: "https://b.example/2"},
				{URL: "https://b.example/3"}, {URL: "https://b.example/4"}, {URL: "https://b.example/5"},
				{URL: "http://b.example/", Anchors: []string{"another site of the host"}}, {URL: "https://c.example/", Anchors: []string{"c"}}}},
	}, {
		name:     "bad spec.site is an error",
		in:       si("ftp://a.example", nil),
		excluded: none,
		wantErr:  true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Document(tc.in, tc.excluded)
			if (err != nil) != tc.wantErr || ok != tc.wantOK {
				t.Fatalf("Document = ok %v, err %v; want ok %v, error %v", ok, err, tc.wantOK, tc.wantErr)
			}
			if ok && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Document =\n%+v\nwant\n%+v", got, tc.want)
			}
			if ok {
				if err := got.Validate(); err != nil {
					t.Errorf("document does not validate: %v", err)
				}
			}
		})
	}
}

func TestParseSource(t *testing.T) {
	for in, ok := range map[string]bool{"ns/a": true, "ns/": false, "/a": false, "a": false, "": false} {
		if _, got := parseSource(in); got != ok {
			t.Errorf("parseSource(%q) ok = %v, want %v", in, got, ok)
		}
	}
}
