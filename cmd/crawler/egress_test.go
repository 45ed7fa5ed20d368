package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// echoServer is a real echo service on loopback: it answers with the
// address the request came from, or what answer says instead, and
// records when it was asked.
type echoServer struct {
	*httptest.Server
	mu     sync.Mutex
	asked  []time.Time
	answer http.HandlerFunc
}

func startEcho(t *testing.T, answer http.HandlerFunc) *echoServer {
	t.Helper()
	e := &echoServer{answer: answer}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.asked = append(e.asked, time.Now())
		e.mu.Unlock()
		if e.answer != nil {
			e.answer(w, r)
			return
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"ip": host})
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *echoServer) times() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Time(nil), e.asked...)
}

// A crawler whose source address is not the expected one, or that cannot
// verify it, sends the site nothing and reports nothing: it ends with
// ExitEgressUnverified and a last log line that carries both addresses.
// Hostile echo answers come first.
func TestCrawlSendsNothingFromAnUnverifiedAddress(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	cases := []struct {
		name     string
		echo     func(t *testing.T, site string) string
		expect   string
		observed string // "" when the echo gave no address
	}{
		{"echo redirects to the site", func(t *testing.T, site string) string {
			return startEcho(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, site+"/", http.StatusFound) }).URL
		}, "127.0.0.2", ""},
		{"huge echo answer", func(t *testing.T, _ string) string {
			return startEcho(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("127.0.0.2 ", 1<<16))) }).URL
		}, "127.0.0.2", ""},
		{"garbage echo answer", func(t *testing.T, _ string) string {
			return startEcho(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("\x00\xff<html>")) }).URL
		}, "127.0.0.2", ""},
		{"IPv6 echo answer", func(t *testing.T, _ string) string {
			return startEcho(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("::1")) }).URL
		}, "127.0.0.2", ""},
		{"echo down", func(_ *testing.T, _ string) string { return down.URL }, "127.0.0.2", ""},
		{"another source address", func(t *testing.T, _ string) string { return startEcho(t, nil).URL + "/ip" }, "127.0.0.1", "127.0.0.2"},
		{"the published address is not this node's", func(t *testing.T, _ string) string { return startEcho(t, nil).URL }, "79.139.58.98", "127.0.0.2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testSite(t)
			m := &fakeManager{}
			mgr := m.start(t)
			r := runBinary(t, []string{"CRAWL_REPORT_TOKEN=t"}, "crawl", "--log-format=json", "--allow-private", "--source-ip", "127.0.0.2",
				"--report-url", mgr.URL+"/results", "--egress-echo-url", tc.echo(t, s.URL), "--expect-egress-ip", tc.expect, s.URL)
			if r.code != runreport.ExitEgressUnverified {
				t.Fatalf("exit %d, want %d: %s", r.code, runreport.ExitEgressUnverified, r.stderr)
			}
			if n := len(s.Requests()); n != 0 {
				t.Errorf("the site got %d requests from an unverified address", n)
			}
			m.mu.Lock()
			posts, gets := len(m.bodies), len(m.getAuth)
			m.mu.Unlock()
			if posts != 0 || gets != 0 {
				t.Errorf("the results endpoint got %d reports and %d reads; the run ends before it", posts, gets)
			}
			if strings.TrimSpace(r.stdout) != "" {
				t.Errorf("a document on stdout: %s", r.stdout)
			}
			lines := jsonLines(t, r.stderr)
			last := lines[len(lines)-1]
			if last["level"] != "ERROR" || last[runreport.LogExpectedEgressIP] != tc.expect {
				t.Errorf("last log line %v: want an ERROR with %s=%s", last, runreport.LogExpectedEgressIP, tc.expect)
			}
			if got, _ := last[runreport.LogObservedEgressIP].(string); got != tc.observed {
				t.Errorf("last log line says %s=%q, want %q", runreport.LogObservedEgressIP, got, tc.observed)
			}
		})
	}
}

// A verified crawl asks the echo once, before its first request to the
// site, and every report and the printed document carry the address.
func TestCrawlRecordsTheVerifiedAddress(t *testing.T) {
	s := testSite(t)
	echo := startEcho(t, nil)
	m := &fakeManager{}
	mgr := m.start(t)
	r := runBinary(t, []string{"CRAWL_REPORT_TOKEN=t"}, "crawl", "--allow-private", "--delay", "0s", "--source-ip", "127.0.0.2",
		"--report-url", mgr.URL+"/results", "--egress-echo-url", echo.URL, "--expect-egress-ip", "127.0.0.2", s.URL)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if c := decodeCrawl(t, r.stdout); c.EgressIP != "127.0.0.2" || len(c.Pages) != 3 {
		t.Errorf("document egressIP %q with %d pages, want 127.0.0.2 with 3", c.EgressIP, len(c.Pages))
	}
	asked, reqs := echo.times(), s.Requests()
	if len(asked) != 1 || len(reqs) == 0 || !asked[0].Before(reqs[0].Start) {
		t.Fatalf("echo asked at %v, site's first request at %+v: want one question before it", asked, reqs)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.bodies) < 2 {
		t.Fatalf("%d reports, want progress and a final one", len(m.bodies))
	}
	for i, b := range m.bodies {
		var rep runreport.Report
		if err := json.Unmarshal(b, &rep); err != nil || rep.Result.EgressIP != "127.0.0.2" {
			t.Errorf("report %d has egressIP %q (%v), want 127.0.0.2", i, rep.Result.EgressIP, err)
		}
	}
}

func TestEgressFlagsGoTogether(t *testing.T) {
	for _, args := range [][]string{
		{"--egress-echo-url", "http://127.0.0.1:1/"},
		{"--expect-egress-ip", "79.139.58.98"},
		{"--egress-echo-url", "ftp://echo.bot.lohisoft.com/", "--expect-egress-ip", "79.139.58.98"},
		{"--egress-echo-url", "http://echo.bot.lohisoft.com/", "--expect-egress-ip", "2001:db8::1"},
		{"--egress-echo-url", "http://echo.bot.lohisoft.com/", "--expect-egress-ip", "crawler1.bot.lohisoft.com"},
	} {
		r := runInProcess(append(append([]string{"crawl"}, args...), "http://127.0.0.1:1/")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "egress") {
			t.Errorf("crawl %v: exit %d %q, want %d naming the egress flags", args, r.code, r.stderr, exitUsage)
		}
	}
}
