package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/reporter"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// slowSite serves endless linked pages, each after a pause, so a crawl is
// always under way when the test stops it.
func slowSite(t *testing.T, pause time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		select {
		case <-time.After(pause):
		case <-r.Context().Done():
			return
		}
		n := 0
		fmt.Sscanf(r.URL.Path, "/p%d", &n)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<title>Page %d</title><a href="/p%d">next</a>`, n, n+1)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startCrawl runs the binary against site, reporting to reportURL, and
// returns once the first page is in.
func startCrawl(t *testing.T, site, reportURL string, firstPage <-chan struct{}) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary, "crawl", "--allow-private", "--delay", "0s", "--report-url", reportURL, site+"/")
	cmd.Env = append(os.Environ(), runreport.TokenEnv+"=tok")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case <-firstPage:
	case <-time.After(20 * time.Second):
		t.Fatalf("no progress report in 20s; stderr:\n%s", errb.String())
	}
	return cmd, &out, &errb
}

func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, time.Since(start)
	case <-time.After(within):
		t.Fatalf("crawler still running %v after SIGTERM (a kubelet would SIGKILL it)", within)
		return 0, 0
	}
}

// noPrevious answers the crawler's GET of the previous crawl's validators
// with 404 (the crawl is then unconditional) and reports whether it did.
func noPrevious(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	http.NotFound(w, r)
	return true
}

// Crawler Pods get 10 s between SIGTERM and SIGKILL. A results endpoint
// that accepts connections and never answers must not hold the crawler past
// that.
func TestSIGTERMEndsWithinGraceWhenEndpointHangs(t *testing.T) {
	site := slowSite(t, 300*time.Millisecond)
	firstPage := make(chan struct{})
	var once sync.Once
	hang := make(chan struct{})
	mgr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if noPrevious(w, r) {
			return
		}
		var rep runreport.Report
		_ = json.NewDecoder(r.Body).Decode(&rep)
		if !rep.Final {
			once.Do(func() { close(firstPage) })
			w.WriteHeader(http.StatusNoContent)
			return
		}
		select { // the final report: never answered
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); mgr.Close() })

	cmd, out, errb := startCrawl(t, site.URL, mgr.URL, firstPage)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, cmd, 9*time.Second)
	if code != exitFailure {
		t.Errorf("exit %d, want %d (final report not delivered)", code, exitFailure)
	}
	if took > reporter.DefaultStopGrace+2*time.Second {
		t.Errorf("exited %v after SIGTERM, want within the %v stop grace", took, reporter.DefaultStopGrace)
	}
	var c runreport.Crawl
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || len(c.Pages) == 0 {
		t.Errorf("partial result on stdout: err %v, %d pages; stderr:\n%s", err, len(c.Pages), errb.String())
	}
	t.Logf("exited %v after SIGTERM with %d pages", took.Round(time.Millisecond), len(c.Pages))
}

// With a working endpoint, SIGTERM stops the crawl and the partial result
// reaches the manager at once.
func TestSIGTERMDeliversPartialResult(t *testing.T) {
	site := slowSite(t, 300*time.Millisecond)
	firstPage := make(chan struct{})
	var once sync.Once
	finals := make(chan runreport.Report, 4)
	mgr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if noPrevious(w, r) {
			return
		}
		var rep runreport.Report
		_ = json.NewDecoder(r.Body).Decode(&rep)
		if rep.Final {
			finals <- rep
		} else {
			once.Do(func() { close(firstPage) })
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(mgr.Close)

	cmd, _, errb := startCrawl(t, site.URL, mgr.URL, firstPage)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, _ := waitExit(t, cmd, 9*time.Second)
	if code != exitOK {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, errb.String())
	}
	select {
	case rep := <-finals:
		if len(rep.Result.Pages) == 0 || len(rep.Result.Pages) >= runreport.MaxPages {
			t.Errorf("final report has %d pages, want a partial crawl", len(rep.Result.Pages))
		}
		t.Logf("partial result (%d pages) delivered %v after SIGTERM", len(rep.Result.Pages), time.Since(sent).Round(time.Millisecond))
	default:
		t.Fatalf("no final report after SIGTERM; stderr:\n%s", errb.String())
	}
}
