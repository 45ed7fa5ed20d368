package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/reporter"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// previousOf asks the results endpoint for the previous run's pages and
// validators as a crawler Pod does (reporter.Previous).
func previousOf(t *testing.T, op *harness, pod *corev1.Pod, token string) (runreport.Previous, error) {
	t.Helper()
	return reporter.New(crawlpod.ReportURL(op.ResultsURL, pod.Namespace, pod.Name), token, nil).Previous(context.Background())
}

// A conditional recrawl through the results endpoint, against a real API
// server and backend: the run's token (and nothing else) gets the
// validators of the last complete crawl; a recrawl whose every page was
// unchanged keeps every page in the index and the SiteIndex, with the
// titles it had, and the SiteIndex shows the recrawl's stats.
func TestConditionalRecrawlThroughTheEndpoint(t *testing.T) {
	createEgressNode(t, "egress-conditional", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	const base = "https://conditional.example.com"
	ct := createTarget(t, ns, "conditional", base+"/")
	pod, token := runningPod(t, ct)

	for _, tc := range []struct {
		token string
		code  int
	}{{"", http.StatusUnauthorized}, {"wrong-token", http.StatusForbidden}} {
		req, _ := http.NewRequest(http.MethodGet, crawlpod.ReportURL(op.ResultsURL, pod.Namespace, pod.Name), nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(body), `"error"`) || strings.Contains(string(body), "pages") {
			t.Errorf("GET with token %q: %d %s, want %d with a JSON error", tc.token, resp.StatusCode, body, tc.code)
		}
	}
	prev, err := previousOf(t, op, pod, token)
	if err != nil || prev.Site != base+":443" || prev.Pages == nil || len(prev.Pages) != 0 {
		t.Fatalf("first run's previous crawl: %+v, %v; want the site and no pages", prev, err)
	}

	first := pages(base, 3)
	first[0].ETag, first[0].LastModified = `"home-1"`, "Sat, 01 Aug 2026 09:30:00 GMT"
	first[1].ETag = `W/"p1"`
	first[2].ETag = "\"bad\r\nX-Injected: 1\"" // never kept, never handed out
	// Progress of a first crawl is in the backend, but it is no complete
	// crawl: a crawl started now (a retry) gets no validators.
	if code, body := postReport(t, op, pod, token, runreport.Report{Result: runreport.Crawl{Site: base, Pages: first[:1]}}); code != http.StatusOK {
		t.Fatalf("progress: %d %s", code, body)
	}
	if prev, err := previousOf(t, op, pod, token); err != nil || len(prev.Pages) != 0 {
		t.Errorf("previous crawl during a first crawl: %+v, %v; want no pages", prev, err)
	}
	final := runreport.Report{Final: true, Result: runreport.Crawl{Site: base, Pages: first, Stats: runreport.Stats{BytesReceived: 90_000}}}
	if code, body := postReport(t, op, pod, token, final); code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	setPodPhase(t, pod, corev1.PodSucceeded, 0)
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	// A recrawl asked for by hand: the operator's clock stays where the
	// crawler Pods' timestamps are.
	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "recrawl")
	pod2 := waitPod(t, ct, 2)
	setPodPhase(t, pod2, corev1.PodRunning, 0)
	token2 := runToken(t, pod2)
	var se *reporter.StatusError
	if _, err := previousOf(t, op, pod, token); !errors.As(err, &se) || se.Code != http.StatusConflict {
		t.Errorf("the ended run's GET: %v, want HTTP 409", err)
	}
	prev, err = previousOf(t, op, pod2, token2)
	if err != nil {
		t.Fatal(err)
	}
	want := []runreport.KnownPage{
		{URL: first[0].URL, ETag: `"home-1"`, LastModified: "Sat, 01 Aug 2026 09:30:00 GMT"},
		{URL: first[1].URL, ETag: `W/"p1"`},
		{URL: first[2].URL},
	}
	if len(prev.Pages) != 3 || prev.Pages[0] != want[0] || prev.Pages[1] != want[1] || prev.Pages[2] != want[2] {
		t.Errorf("recrawl's previous crawl: %+v, want %+v", prev.Pages, want)
	}

	// Every page answered 304.
	var again []runreport.Page
	for _, k := range prev.Pages {
		again = append(again, runreport.Page{URL: k.URL, StatusCode: http.StatusNotModified, ETag: k.ETag, LastModified: k.LastModified,
			Unchanged: true, FetchedAt: first[0].FetchedAt.Add(1e9)})
	}
	final = runreport.Report{Final: true, Result: runreport.Crawl{Site: base, Pages: again, Stats: runreport.Stats{BytesReceived: 2_000, PagesUnchanged: 3}}}
	if code, body := postReport(t, op, pod2, token2, final); code != http.StatusOK {
		t.Fatalf("recrawl's final report: %d %s", code, body)
	}
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), si); err != nil {
		t.Fatal(err)
	}
	if st := si.Status; len(st.Pages) != 3 || st.Pages[0].Title != "Page 0" || st.Pages[0].StatusCode != 200 ||
		st.Stats.Pages != 3 || st.Stats.PagesUnchanged != 3 || st.Stats.BytesReceived != 2_000 || st.Run != pod2.Name {
		t.Errorf("SiteIndex after the unchanged recrawl: %+v", st)
	}
	if got := indexedPages(t, op, "conditional.example.com"); len(got) != 3 {
		t.Errorf("indexed pages after the unchanged recrawl: %v", got)
	}
}

// A target on http:// whose site upgrades to https: the crawl reports the
// https site and its pages; the manager indexes them as the target's,
// shows the https site in the CrawlTarget's and the SiteIndex's status,
// and the next run's validators are the https pages'. A report naming any
// other site moves nothing.
func TestUpgradedSiteThroughTheEndpoint(t *testing.T) {
	createEgressNode(t, "egress-upgraded", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	const host = "upgraded.example.com"
	ct := createTarget(t, ns, "upgraded", "http://"+host+"/")
	pod, token := runningPod(t, ct)

	// A report claiming another site's pages: nothing of it is indexed,
	// and the target's site stays.
	evil := runreport.Report{Result: runreport.Crawl{Site: "https://evil.example:443", Pages: pages("https://evil.example", 2)}}
	if code, body := postReport(t, op, pod, token, evil); code != http.StatusOK {
		t.Fatalf("progress: %d %s", code, body)
	}
	if got := indexedPages(t, op, "evil.example"); len(got) != 0 {
		t.Errorf("another site's pages indexed: %v", got)
	}

	first := pages("https://"+host, 2)
	first[0].ETag = `"up-1"`
	final := runreport.Report{Final: true, Result: runreport.Crawl{Site: "https://" + host + ":443", UpgradedFrom: "http://" + host + ":80", Pages: first}}
	if code, body := postReport(t, op, pod, token, final); code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	if got := indexedPages(t, op, host); !slices.Equal(got, []string{first[0].URL, first[1].URL}) {
		t.Errorf("indexed %v, want the https pages", got)
	}
	setPodPhase(t, pod, corev1.PodSucceeded, 0)
	got := waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	eventually(t, "status.site shows the https site", func() error {
		if got = getTarget(t, ct); got.Status.Site != "https://"+host+":443" {
			return fmt.Errorf("status.site %q", got.Status.Site)
		}
		return nil
	})
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), si); err != nil {
		t.Fatal(err)
	}
	if si.Spec.Site != "http://"+host+":80" || si.Status.Site != "https://"+host+":443" || len(si.Status.Pages) != 2 || si.Status.Pages[0].URL != "/page-0" {
		t.Errorf("SiteIndex spec.site %q status.site %q pages %+v", si.Spec.Site, si.Status.Site, si.Status.Pages)
	}

	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "recrawl")
	pod2 := waitPod(t, ct, 2)
	setPodPhase(t, pod2, corev1.PodRunning, 0)
	prev, err := previousOf(t, op, pod2, runToken(t, pod2))
	if err != nil || prev.Site != "https://"+host+":443" || len(prev.Pages) != 2 || prev.Pages[0] != (runreport.KnownPage{URL: first[0].URL, ETag: `"up-1"`}) {
		t.Errorf("recrawl's previous crawl: %+v, %v; want the https pages", prev, err)
	}
}
