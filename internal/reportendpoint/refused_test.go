package reportendpoint

import (
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// The crawl document says a site was refused with a skipped entry whose
// reason starts "refused: "; only refusals by the address rules are input
// that will not change by itself.
func TestRefusedAddressRecorded(t *testing.T) {
	owner, _ := site.Parse("http://intranet.example/")
	now := time.Now()
	skip := func(reason string) runreport.Crawl {
		return runreport.Crawl{Skipped: []runreport.Skip{{URL: "http://intranet.example/", Reason: reason}}}
	}
	private := "refused: intranet.example resolves to 10.0.0.1: " + fetch.ErrNonPublic.Error()
	tests := []struct {
		name string
		rep  runreport.Report
		want string
	}{
		{"non-public address", runreport.Report{Final: true, Result: skip(private)}, private},
		{"no A record", runreport.Report{Final: true, Result: skip("refused: intranet.example: " + fetch.ErrNoIPv4.Error())}, "refused: intranet.example: " + fetch.ErrNoIPv4.Error()},
		{"robots.txt redirected inside", runreport.Report{Final: true, Result: skip("refused: robots.txt: GET http://10.0.0.1/robots.txt: " + fetch.ErrNonPublic.Error())}, "refused: robots.txt: GET http://10.0.0.1/robots.txt: " + fetch.ErrNonPublic.Error()},
		{"connection refused is not permanent", runreport.Report{Final: true, Result: skip("refused: GET http://intranet.example/: dial tcp 203.0.113.9:80: connect: connection refused")}, ""},
		{"progress is not the verdict", runreport.Report{Result: skip(private)}, ""},
		{"pages indexed: the site was reached", runreport.Report{Final: true, Result: runreport.Crawl{
			Pages:   []runreport.Page{{URL: "http://intranet.example/", StatusCode: 200}},
			Skipped: skip(private).Skipped}}, ""},
		{"hostile length cut", runreport.Report{Final: true, Result: skip(private + strings.Repeat("x", 5000))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Convert(tt.rep, owner, "r-crawl-1", 20, now, nil).Status.Refused
			if tt.name == "hostile length cut" {
				if len(got) != maxRefusedLength || !strings.HasPrefix(got, "refused: ") {
					t.Errorf("Refused = %d bytes %q…", len(got), got[:min(len(got), 40)])
				}
				return
			}
			if got != tt.want {
				t.Errorf("Refused = %q, want %q", got, tt.want)
			}
		})
	}
}
