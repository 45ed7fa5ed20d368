package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testca"
)

// A site behind a private CA, crawled by the real binary: its certificate
// is refused (the crawl ends without pages, as for any site whose
// transport fails), with nothing sent but the TLS handshake, unless
// $LOHISOFTBOT_EXTRA_CA_CERTS holds that CA; then the site and the egress
// echo, asked over HTTPS with the same trust, both verify. A value the
// crawler cannot use ends it as bad input before any request.
func TestCrawlTrustsExtraCAs(t *testing.T) {
	ca, other := testca.New(t), testca.New(t)
	site := ca.StartServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>Behind a private CA</title>")
	}))
	echo := ca.StartServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "127.0.0.1") }))
	tests := []struct {
		name     string
		env      string
		echo     bool
		wantCode int
		wantLog  string // in stderr
		verified bool   // the site was crawled
	}{
		{"unset: the public roots alone refuse the site", "", false, exitOK, "certificate signed by unknown authority", false},
		{"the site's CA", ca.PEM, false, exitOK, "", true},
		{"the site's CA verifies the echo too", ca.PEM, true, exitOK, "egress address verified", true},
		{"unset: the echo is refused, the site gets nothing", "", true, exitEgressUnverified, "certificate signed by unknown authority", false},
		{"another CA", other.PEM, false, exitOK, "certificate signed by unknown authority", false},
		{"garbage", "-----BEGIN CERTIFICATE-----\nbm90IERFUg==\n-----END CERTIFICATE-----\n", true, exitUsage, "$" + runreport.ExtraCACertsEnv + ": certificate 1:", false},
		{"no certificate", "not PEM at all", true, exitUsage, "$" + runreport.ExtraCACertsEnv + ": no PEM CERTIFICATE block", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			siteBefore, echoBefore := site.Requests.Load(), echo.Requests.Load()
			args := []string{"crawl", "--allow-private", "--delay=0s", "--max-pages=1"}
			if tt.echo {
				args = append(args, "--egress-echo-url="+echo.URL+"/", "--expect-egress-ip=127.0.0.1")
			}
			r := runBinary(t, []string{runreport.ExtraCACertsEnv + "=" + tt.env}, append(args, site.URL+"/")...)
			if r.code != tt.wantCode || !strings.Contains(r.stderr, tt.wantLog) {
				t.Fatalf("exit %d, want %d with %q in the log:\n%s\n%s", r.code, tt.wantCode, tt.wantLog, r.stderr, r.stdout)
			}
			siteAsked, echoAsked := site.Requests.Load()-siteBefore, echo.Requests.Load()-echoBefore
			if !tt.verified {
				if siteAsked != 0 || echoAsked != 0 {
					t.Errorf("%d requests reached the site and %d the echo; a refused certificate or CA list must mean none", siteAsked, echoAsked)
				}
				if r.code == exitOK && len(decodeCrawl(t, r.stdout).Pages) != 0 {
					t.Errorf("pages from a site whose certificate was refused:\n%s", r.stdout)
				}
				return
			}
			if c := decodeCrawl(t, r.stdout); len(c.Pages) != 1 || c.Pages[0].Title != "Behind a private CA" {
				t.Errorf("pages %+v", c.Pages)
			}
			if tt.echo && echoAsked != 1 {
				t.Errorf("the echo was asked %d times, want once", echoAsked)
			}
		})
	}
}
