package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

const marker = "BODY-TEXT-MARKER-c0ffee42"

var binary string

// TestMain builds the real binary once; the end-to-end tests run it as the
// operator and site owners do.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crawler-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "crawler")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type runResult struct {
	code           int
	stdout, stderr string
}

func runBinary(t *testing.T, env []string, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return runResult{code, out.String(), errb.String()}
}

// runInProcess runs the command's entry point without a process, for the
// cheap flag cases.
func runInProcess(args ...string) runResult {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb, func(string) string { return "" })
	return runResult{code, out.String(), errb.String()}
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	// An IPv6 listener, if the machine has one, must see no connection.
	var v6conns int
	var mu sync.Mutex
	v6addr := "[::1]:8080"
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		defer ln.Close()
		v6addr = ln.Addr().String()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				v6conns++
				mu.Unlock()
				c.Close()
			}
		}()
	}
	cases := [][]string{
		{},
		{"bogus"},
		{"crawl"},
		{"crawl", "--max-pages", "21", "http://example.com/"},
		{"crawl", "--max-pages", "0", "http://example.com/"},
		{"crawl", "--unknown-flag", "http://example.com/"},
		{"crawl", "http://" + v6addr + "/"},
		{"crawl", "ftp://example.com/"},
		{"crawl", "http://example.com/", "http://example.org/"},
		{"crawl", "--source-ip", "::1", "http://example.com/"},
		{"crawl", "--delay", "-1s", "http://example.com/"},
		{"crawl", "--report-url", "ftp://x", "http://example.com/"},
		{"robots", "http://a/"},
		{"robots", "--file", "/does/not/exist", "http://a/"},
		{"robots", "--file", "-"},
		{"verify"},
		{"verify", "not-an-ip"},
	}
	for _, args := range cases {
		r := runInProcess(args...)
		if r.code != 2 {
			t.Errorf("%q: exit %d, want 2", args, r.code)
		}
		if len(args) > 0 && (strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "crawler: ")) {
			t.Errorf("%q: stderr %q, want one line", args, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%q: stdout %q", args, r.stdout)
		}
	}
	// The same through the binary for the IPv6 literal and the budget.
	for _, args := range [][]string{{"crawl", "--allow-private", "http://" + v6addr + "/"}, {"crawl", "--max-pages=21", "http://127.0.0.1:1/"}} {
		if r := runBinary(t, nil, args...); r.code != 2 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("binary %q: exit %d stderr %q", args, r.code, r.stderr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if v6conns != 0 {
		t.Errorf("%d connections reached the IPv6 listener", v6conns)
	}
}

func testSite(t *testing.T) *testsite.Site {
	s := testsite.New(t)
	s.Robots("User-agent: LohiSoftBot\nDisallow: /private\n")
	s.HTML("/", testsite.Page("Home", marker, "/a", "Alpha", "/private", "secret", "/b", "Beta"))
	s.HTML("/a", testsite.Page("A page", marker, "/b", "Beta again"))
	s.HTML("/b", testsite.Page("B page", marker))
	s.HTML("/private", testsite.Page("Private", marker))
	return s
}

func decodeCrawl(t *testing.T, s string) runreport.Crawl {
	t.Helper()
	var c runreport.Crawl
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("stdout is not one crawl document: %v\n%s", err, s)
	}
	if dec.More() {
		t.Fatalf("more than one document on stdout")
	}
	return c
}

func TestCrawlCommand(t *testing.T) {
	s := testSite(t)
	r := runBinary(t, nil, "crawl", "--allow-private", "--delay", "200ms", "--source-ip", "127.0.0.2", s.URL+"/")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	c := decodeCrawl(t, r.stdout)
	if c.Site != s.URL || c.UserAgent != "LohiSoftBot/1.0 (+https://lohisoft.com/bot)" || c.Robots.Status != 200 {
		t.Errorf("document header %+v", c)
	}
	if len(c.Pages) != 3 {
		t.Fatalf("pages %+v", c.Pages)
	}
	if p := c.Pages[1]; p.URL != s.URL+"/a" || p.Title != "A page" || p.StatusCode != 200 || p.Headings.H1[0] != "A page" || p.InboundAnchors[0] != "Alpha" || p.FetchedAt.IsZero() {
		t.Errorf("page %+v", p)
	}
	// The site has no sitemap: its /sitemap.xml answered 404.
	if len(c.Skipped) != 2 || c.Skipped[0].URL != s.URL+"/sitemap.xml" || c.Skipped[1].URL != s.URL+"/private" {
		t.Errorf("skipped %+v", c.Skipped)
	}
	if s.Count("/private") != 0 {
		t.Error("disallowed page fetched")
	}
	if s.MaxInFlight() != 1 {
		t.Errorf("%d requests in flight at once", s.MaxInFlight())
	}
	reqs := s.Requests()
	for i, q := range reqs {
		if host, _, _ := net.SplitHostPort(q.RemoteAddr); host != "127.0.0.2" {
			t.Errorf("%s came from %s, want --source-ip 127.0.0.2", q.Path, q.RemoteAddr)
		}
		if i > 0 && q.Start.Sub(reqs[i-1].Start) < 200*time.Millisecond {
			t.Errorf("%s started %v after the previous request", q.Path, q.Start.Sub(reqs[i-1].Start))
		}
	}
	if strings.Contains(r.stdout+r.stderr, marker) {
		t.Error("page body text in the command's output or logs")
	}
	if !strings.Contains(r.stderr, "level=INFO") {
		t.Errorf("no logs on stderr: %q", r.stderr)
	}
	// The raw document has the exact field names of the interface.
	var raw map[string]any
	_ = json.Unmarshal([]byte(r.stdout), &raw)
	for _, k := range []string{"site", "userAgent", "robots", "pages", "skipped"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("field %q missing", k)
		}
	}
	page := raw["pages"].([]any)[0].(map[string]any)
	for _, k := range []string{"url", "statusCode", "title", "description", "headings", "inboundAnchors", "fetchedAt"} {
		if _, ok := page[k]; !ok {
			t.Errorf("page field %q missing", k)
		}
	}
}

func TestCrawlCommandCustomUserAgentAndRobotsDisallowAll(t *testing.T) {
	s := testsite.New(t)
	s.Robots("User-agent: TestBot\nDisallow: /\n")
	s.HTML("/", testsite.Page("Home", marker))
	r := runBinary(t, nil, "crawl", "--allow-private", "--user-agent", "TestBot/0.1", "--delay", "0s", s.URL)
	if r.code != 0 {
		t.Fatalf("exit %d (robots disallowing everything is still a crawl): %s", r.code, r.stderr)
	}
	c := decodeCrawl(t, r.stdout)
	if len(c.Pages) != 0 || s.PageRequests() != 0 || c.UserAgent != "TestBot/0.1" {
		t.Errorf("crawl %+v, page requests %d", c, s.PageRequests())
	}
	if got := s.Requests()[0].Header.Get("User-Agent"); got != "TestBot/0.1" {
		t.Errorf("robots.txt fetched with User-Agent %q", got)
	}
}

func TestCrawlCommandRefusesLoopbackDNSAnswer(t *testing.T) {
	s := testSite(t)
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	dns := dnstest.Start(t, dnstest.Zone{A: map[string][]string{"www.site.test": {"127.0.0.1"}}})
	r := runBinary(t, nil, "crawl", "--dns-server", dns.Addr, "http://www.site.test:"+port+"/")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	c := decodeCrawl(t, r.stdout)
	if len(s.Requests()) != 0 {
		t.Fatalf("%d requests reached the site", len(s.Requests()))
	}
	if len(c.Skipped) != 1 || !strings.Contains(c.Skipped[0].Reason, "not a public IPv4 address") {
		t.Errorf("skipped %+v", c.Skipped)
	}
	// No A record: refused with a clear reason, nothing sent.
	r = runBinary(t, nil, "crawl", "--allow-private", "--dns-server", dns.Addr, "http://nowhere.test:"+port+"/")
	c = decodeCrawl(t, r.stdout)
	if r.code != 0 || len(c.Skipped) != 1 || !strings.Contains(c.Skipped[0].Reason, "no IPv4 address") {
		t.Errorf("exit %d skipped %+v", r.code, c.Skipped)
	}
	// With --allow-private the name is crawled.
	r = runBinary(t, nil, "crawl", "--allow-private", "--delay", "0s", "--dns-server", dns.Addr, "http://www.site.test:"+port+"/")
	if c = decodeCrawl(t, r.stdout); len(c.Pages) != 3 {
		t.Errorf("allow-private crawl pages %d: %s", len(c.Pages), r.stderr)
	}
}

type fakeManager struct {
	mu      sync.Mutex
	bodies  [][]byte
	auth    []string
	ctype   []string
	codes   []int
	respond int
	// limit, when set, refuses bigger bodies with 413 as the results
	// endpoint does.
	limit int
	// previous answers the crawler's GET of its report URL; without it
	// the GET gets 404 (the crawl is then unconditional). getAuth records
	// the GETs' Authorization.
	previous *runreport.Previous
	getAuth  []string
}

func (m *fakeManager) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.getAuth = append(m.getAuth, r.Header.Get("Authorization"))
			if m.previous == nil {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(m.previous)
			return
		}
		b, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		code := m.respond
		if code == 0 {
			code = http.StatusNoContent
		}
		if m.limit > 0 && len(b) > m.limit {
			code = http.StatusRequestEntityTooLarge
		}
		m.bodies = append(m.bodies, b)
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.ctype = append(m.ctype, r.Header.Get("Content-Type"))
		m.codes = append(m.codes, code)
		m.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCrawlCommandReportsToManager(t *testing.T) {
	s := testSite(t)
	m := &fakeManager{}
	mgr := m.start(t)
	r := runBinary(t, []string{"CRAWL_REPORT_TOKEN=run-token-1"}, "crawl", "--allow-private", "--delay", "0s", "--report-url", mgr.URL+"/results", s.URL)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// A crawl of three pages without delay: progress after the first page,
	// none more within reporter.DefaultProgressEvery, then the final
	// document with all three.
	if len(m.bodies) != 2 {
		t.Fatalf("%d reports, want 1 progress + 1 final", len(m.bodies))
	}
	for i, b := range m.bodies {
		var rep runreport.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		if rep.Final != (i == 1) {
			t.Errorf("report %d final=%v", i, rep.Final)
		}
		if want := []int{1, 3}[i]; len(rep.Result.Pages) != want {
			t.Errorf("report %d has %d pages, want %d", i, len(rep.Result.Pages), want)
		}
		if m.auth[i] != "Bearer run-token-1" || m.ctype[i] != "application/json" {
			t.Errorf("report %d: Authorization %q Content-Type %q", i, m.auth[i], m.ctype[i])
		}
		if bytes.Contains(b, []byte(marker)) {
			t.Errorf("report %d carries page body text", i)
		}
	}
	var final runreport.Report
	_ = json.Unmarshal(m.bodies[1], &final)
	if len(final.Result.Pages) != 3 || decodeCrawl(t, r.stdout).Site != final.Result.Site {
		t.Errorf("final %+v", final.Result)
	}
	if strings.Contains(r.stderr, "run-token-1") || strings.Contains(r.stdout, "run-token-1") {
		t.Error("token leaked into output")
	}
	// --report-token wins over the environment.
	m2 := &fakeManager{}
	mgr2 := m2.start(t)
	r = runBinary(t, []string{"CRAWL_REPORT_TOKEN=env"}, "crawl", "--allow-private", "--delay", "0s", "--max-pages", "1", "--report-url", mgr2.URL, "--report-token", "flag", s.URL)
	if r.code != 0 || len(m2.auth) == 0 || m2.auth[len(m2.auth)-1] != "Bearer flag" {
		t.Errorf("exit %d auth %q", r.code, m2.auth)
	}
}

func TestCrawlCommandFailsWhenFinalReportRejected(t *testing.T) {
	s := testSite(t)
	m := &fakeManager{respond: http.StatusForbidden}
	mgr := m.start(t)
	r := runBinary(t, nil, "crawl", "--allow-private", "--delay", "0s", "--max-pages", "1", "--report-url", mgr.URL, "--report-token", "bad", s.URL)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "final report") {
		t.Errorf("stderr %q", r.stderr)
	}
	if n := len(m.bodies); n != 2 { // one progress, one final (403 is not retried)
		t.Errorf("%d posts, want 2", n)
	}
}

// The command in a Pod's place: it asks the manager for the previous
// crawl's validators with its token, sends them to the site, and reports
// the unchanged pages and the bytes it received. A manager that does not
// answer the GET means an unconditional crawl, logged.
func TestCrawlCommandConditionalRecrawl(t *testing.T) {
	s := testsite.New(t)
	modified := time.Date(2026, 8, 1, 9, 30, 0, 0, time.UTC)
	s.Validated("/", testsite.Page("Home", marker, "/a", "A"), `"home-1"`, modified)
	s.Validated("/a", testsite.Page("A", marker), `W/"a-1"`, time.Time{})
	args := []string{"crawl", "--allow-private", "--delay", "0s", "--log-format", "json"}

	m := &fakeManager{}
	mgr := m.start(t)
	r := runBinary(t, []string{"CRAWL_REPORT_TOKEN=run-token-1"}, append(args, "--report-url", mgr.URL+"/v1/runs/ns/pod-1", s.URL)...)
	first := decodeCrawl(t, r.stdout)
	if r.code != 0 || len(first.Pages) != 2 || first.Stats.PagesUnchanged != 0 || !strings.Contains(r.stderr, "every page is fetched in full") {
		t.Fatalf("first crawl: exit %d, %+v\n%s", r.code, first, r.stderr)
	}

	m = &fakeManager{previous: &runreport.Previous{Site: first.Site}}
	for _, p := range first.Pages {
		m.previous.Pages = append(m.previous.Pages, runreport.KnownPage{URL: p.URL, ETag: p.ETag, LastModified: p.LastModified})
	}
	mgr = m.start(t)
	r = runBinary(t, []string{"CRAWL_REPORT_TOKEN=run-token-2"}, append(args, "--report-url", mgr.URL+"/v1/runs/ns/pod-2", s.URL)...)
	again := decodeCrawl(t, r.stdout)
	if r.code != 0 || len(again.Pages) != 2 || again.Stats.PagesUnchanged != 2 || again.Stats.BytesReceived >= first.Stats.BytesReceived {
		t.Fatalf("recrawl: exit %d, %+v (first crawl received %d bytes)\n%s", r.code, again, first.Stats.BytesReceived, r.stderr)
	}
	if len(m.getAuth) != 1 || m.getAuth[0] != "Bearer run-token-2" {
		t.Errorf("GETs of the previous crawl: %q, want one with the run's token", m.getAuth)
	}
	var final runreport.Report
	if err := json.Unmarshal(m.bodies[len(m.bodies)-1], &final); err != nil || !final.Final || final.Result.Stats != again.Stats {
		t.Errorf("final report %+v, %v", final.Result.Stats, err)
	}
	for _, p := range final.Result.Pages {
		if !p.Unchanged || p.StatusCode != http.StatusNotModified || p.ETag == "" {
			t.Errorf("final report page %+v", p)
		}
	}
	for _, line := range jsonLines(t, r.stderr) {
		if line["msg"] == "previous crawl" && line["pages"] != float64(2) {
			t.Errorf("log line %v", line)
		}
	}
}

type conformanceCase struct {
	ID           string  `json:"id"`
	Robots       *string `json:"robots"`
	RobotsBase64 string  `json:"robotsBase64"`
	Agent        string  `json:"agent"`
	URL          string  `json:"url"`
	Allowed      bool    `json:"allowed"`
}

// Every conformance case through the real binary, as site owners use it.
func TestRobotsCommandConformance(t *testing.T) {
	raw, err := os.ReadFile("../../crawler/robots/testdata/robots-conformance.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Cases []conformanceCase }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 50 {
		t.Fatalf("only %d cases", len(doc.Cases))
	}
	dir := t.TempDir()
	for _, c := range doc.Cases {
		var body []byte
		if c.RobotsBase64 != "" {
			body, err = base64.StdEncoding.DecodeString(c.RobotsBase64)
			if err != nil {
				t.Fatal(err)
			}
		} else {
			body = []byte(*c.Robots)
		}
		path := filepath.Join(dir, c.ID+".txt")
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runBinary(t, nil, "robots", "--file", path, "--agent", c.Agent, c.URL)
		want := "disallowed\t" + c.URL + "\n"
		if c.Allowed {
			want = "allowed\t" + c.URL + "\n"
		}
		if r.code != 0 || r.stdout != want {
			t.Errorf("%s: exit %d stdout %q, want %q (stderr %q)", c.ID, r.code, r.stdout, want, r.stderr)
		}
	}
}

func TestRobotsCommandSample(t *testing.T) {
	path := filepath.Join(t.TempDir(), "robots.txt")
	os.WriteFile(path, []byte("User-agent: *\nDisallow: /\n\nUser-agent: LohiSoftBot\nAllow: /public/\nDisallow: /\n"), 0o644)
	r := runBinary(t, nil, "robots", "--file", path, "https://example.com/public/page", "https://example.com/private", "https://example.com/robots.txt")
	want := "allowed\thttps://example.com/public/page\ndisallowed\thttps://example.com/private\nallowed\thttps://example.com/robots.txt\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit %d stdout %q", r.code, r.stdout)
	}
	r = runBinary(t, nil, "robots", "--file", path, "--agent", "OtherBot", "https://example.com/public/page")
	if r.stdout != "disallowed\thttps://example.com/public/page\n" {
		t.Errorf("other agent: %q", r.stdout)
	}
	for status, verdict := range map[string]string{"404": "allowed", "403": "allowed", "429": "disallowed", "503": "disallowed"} {
		r = runBinary(t, nil, "robots", "--file", path, "--status", status, "https://example.com/public/page")
		if r.stdout != verdict+"\thttps://example.com/public/page\n" {
			t.Errorf("status %s: %q", status, r.stdout)
		}
	}
	// Flags after the URLs work too, and standard input is a file.
	cmd := exec.Command(binary, "robots", "https://example.com/x", "--file", "-")
	cmd.Stdin = strings.NewReader("User-agent: LohiSoftBot\nDisallow: /x\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "disallowed\thttps://example.com/x\n" {
		t.Errorf("stdin: %q %v", out, err)
	}
}

func TestVerifyCommand(t *testing.T) {
	dns := dnstest.Start(t, dnstest.Zone{
		PTR: map[string][]string{
			"79.139.58.98": {"crawler1.bot.lohisoft.com"},
			"79.139.58.10": {"mail.lohisoft.com"},
			"203.0.113.5":  {"evil-bot.lohisoft.com.attacker.net"},
			"203.0.113.6":  {"crawler2.bot.lohisoft.com"},
		},
		A: map[string][]string{
			"crawler1.bot.lohisoft.com":          {"79.139.58.98"},
			"crawler2.bot.lohisoft.com":          {"79.139.58.121"},
			"mail.lohisoft.com":                  {"79.139.58.10"},
			"evil-bot.lohisoft.com.attacker.net": {"203.0.113.5"},
		},
	})
	r := runBinary(t, nil, "verify", "--dns-server", dns.Addr, "79.139.58.98")
	if r.code != 0 || r.stdout != "crawler1.bot.lohisoft.com\n" {
		t.Errorf("pass case: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for ip, why := range map[string]string{
		"79.139.58.10": "mail.lohisoft.com does not end in .bot.lohisoft.com",
		"203.0.113.5":  "does not end in .bot.lohisoft.com",
		"203.0.113.6":  "does not resolve back to 203.0.113.6",
		"198.51.100.9": "no reverse DNS",
	} {
		r := runBinary(t, nil, "verify", ip, "--dns-server", dns.Addr)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, why) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: exit %d stdout %q stderr %q, want exit 1 with %q", ip, r.code, r.stdout, r.stderr, why)
		}
	}
	if r := runBinary(t, nil, "verify", "--dns-server", dns.Addr, "crawler1.bot.lohisoft.com"); r.code != 2 {
		t.Errorf("hostname instead of IP: exit %d", r.code)
	}
}

// jsonLines checks that every line of s is a JSON log record with time,
// level and msg, and returns them.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line is not JSON: %q (%v)", line, err)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k].(string); !ok {
				t.Errorf("log record without %s: %q", k, line)
			}
		}
		out = append(out, rec)
	}
	return out
}

// --log-format=json, as crawler Pods run it: every line on stderr is a
// JSON record, failures included (the operator reads the last one's msg),
// and the document on stdout is one line.
func TestCrawlCommandLogsJSON(t *testing.T) {
	s := testSite(t)
	r := runBinary(t, nil, "crawl", "--log-format=json", "--allow-private", "--delay", "0s", s.URL)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if recs := jsonLines(t, r.stderr); len(recs) == 0 || recs[0]["level"] != "INFO" {
		t.Errorf("records %v, want INFO logs", recs)
	}
	if strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 || len(decodeCrawl(t, r.stdout).Pages) != 3 {
		t.Errorf("stdout is not the document on one line: %q", r.stdout)
	}

	m := &fakeManager{respond: http.StatusForbidden}
	mgr := m.start(t)
	r = runBinary(t, nil, "crawl", "--log-format=json", "--allow-private", "--delay", "0s", "--max-pages", "1", "--report-url", mgr.URL, "--report-token", "bad", s.URL)
	recs := jsonLines(t, r.stderr)
	if last := recs[len(recs)-1]; r.code != 1 || last["level"] != "ERROR" || !strings.Contains(fmt.Sprint(last["msg"]), "final report") {
		t.Errorf("exit %d, last record %v: want 1 and an ERROR about the final report", r.code, last)
	}

	for _, args := range [][]string{
		{"--log-format=json", "--max-pages=50", "http://example.com/"},
		{"--log-format=json", "--no-such-flag", "http://example.com/"},
		{"--log-format", "json", "http://example.com/", "http://example.org/"},
	} {
		r := runInProcess(append([]string{"crawl"}, args...)...)
		recs := jsonLines(t, r.stderr)
		if r.code != runreport.ExitBadInput || len(recs) != 1 || recs[0]["level"] != "ERROR" {
			t.Errorf("%q: exit %d, records %v: want exit 2 and one ERROR record", args, r.code, recs)
		}
	}
	r = runInProcess("crawl", "--log-format=yaml", "http://example.com/")
	if r.code != runreport.ExitBadInput || !strings.HasPrefix(r.stderr, "crawler: --log-format must be text or json") {
		t.Errorf("--log-format=yaml: exit %d %q", r.code, r.stderr)
	}
}
