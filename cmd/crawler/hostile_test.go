package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/hostilesite"
)

// TestHostileSitesEndToEnd crawls every hostile site through bin/crawler,
// reporting to a manager that refuses what the real results endpoint
// refuses (bodies over runreport.MaxReportBytes), and checks the promises:
// no disallowed path requested under any spelling, no body text in any
// document, report or log line, every document within 1 MiB and every
// report taken, titles decoded, and the rest of a site crawled after its
// broken pages.
func TestHostileSitesEndToEnd(t *testing.T) {
	dots := hostilesite.NewDots(t)
	messy := hostilesite.NewMessy(t)
	big := hostilesite.NewBig(t)
	names := hostilesite.NewNames(t)
	ranked := hostilesite.NewRanked(t)
	for _, c := range []struct {
		name, start, delay string
	}{
		{"dots", dots.URL + "/", "0s"},
		{"messy", messy.URL + "/", "0s"},
		{"big", big.URL + "/", "0s"},
		{"names", names.Start, "150ms"},
		{"ranked", ranked.URL + "/", "0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &fakeManager{limit: runreport.MaxReportBytes}
			mgr := m.start(t)
			r := runBinary(t, []string{"CRAWL_REPORT_TOKEN=hostile"}, "crawl", "--allow-private", "--delay", c.delay, "--report-url", mgr.URL, c.start)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, lastLine(r.stderr))
			}
			doc := decodeCrawl(t, r.stdout)
			compact, _ := runreport.Marshal(doc)
			if len(compact) > runreport.MaxDocumentBytes {
				t.Errorf("document %d bytes", len(compact))
			}
			for _, out := range []string{r.stdout, r.stderr} {
				if strings.Contains(out, hostilesite.Marker) {
					t.Error("body text in the output or the logs")
				}
			}
			if len(m.bodies) == 0 {
				t.Fatal("no reports")
			}
			for i, code := range m.codes {
				if code != http.StatusNoContent {
					t.Errorf("report %d (%d bytes) refused with %d", i, len(m.bodies[i]), code)
				}
				if bytes.Contains(m.bodies[i], []byte(hostilesite.Marker)) {
					t.Errorf("report %d carries body text", i)
				}
			}
			var final runreport.Report
			if err := json.Unmarshal(m.bodies[len(m.bodies)-1], &final); err != nil || !final.Final {
				t.Fatalf("last report is not the final one: %v", err)
			}
			switch c.name {
			case "dots":
				if served := dots.DisallowedServed(); len(served) > 0 {
					t.Errorf("disallowed content requested as %q", served)
				}
			case "messy":
				titles := map[string]string{}
				for _, p := range doc.Pages {
					titles[strings.TrimPrefix(p.URL, messy.URL)] = p.Title
				}
				for path, want := range messy.Want {
					if got, ok := titles[path]; !ok || got != want.Title {
						t.Errorf("%s: title %q (indexed %v), want %q", path, got, ok, want.Title)
					}
				}
			case "ranked":
				var got []string
				for _, r := range ranked.Requests() {
					if r.Path != "/robots.txt" {
						got = append(got, r.Path)
					}
				}
				if want := append([]string{"/", "/sitemap.xml"}, ranked.Order...); !slices.Equal(got, want) {
					t.Errorf("requests\n got  %q\n want %q", got, want)
				}
			case "names":
				reqs := names.Requests()
				for i := 1; i < len(reqs); i++ {
					if gap := reqs[i].Start.Sub(reqs[i-1].End); gap < 140e6 {
						t.Errorf("%s then %s %v apart", reqs[i-1].Path, reqs[i].Path, gap)
					}
				}
			}
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
