package controllers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/reportendpoint"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// rawPost sends a report to a raw path of a results endpoint.
func rawPost(t *testing.T, base, path, token string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(`{"final":false,"result":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// The edges of the results endpoint, over real HTTP against a real API
// server: malformed names get 400 without a lookup, wrong tokens are
// answered from the manager's cache, unknown names are asked of the API
// server once, and a source that keeps failing gets 429, while the crawler
// holding the run's token is never slowed down.
func TestResultsEndpointEdges(t *testing.T) {
	createEgressNode(t, "egress-edges", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	before := testutil.Metrics(t, metrics.Registry)
	ns := newNamespace(t)
	ct := createTarget(t, ns, "edges", "https://edges.example.com/")
	pod, token := runningPod(t, ct)
	progress := runreport.Report{Result: runreport.Crawl{Pages: pages("https://edges.example.com", 1)}}
	if code, body := postReport(t, op, pod, token, progress); code != http.StatusOK {
		t.Fatalf("progress: %d %s", code, body)
	}

	reads := op.apiReads.Load()
	for _, path := range []string{
		"/v1/runs/default/a%2Fb",
		"/v1/runs/" + ns + "/a%2Fb",
		"/v1/runs/Default/edges-crawl-1",
		"/v1/runs/" + ns + "/" + strings.Repeat("a", 254),
		"/v1/runs/" + ns + "/-edges",
		"/v1/runs/" + ns + "/edges%00crawl",
	} {
		code, _, body := rawPost(t, op.ResultsURL, path, "0123456789abcdef")
		if code != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
			t.Errorf("POST %s = %d %s, want 400 with a JSON error", path, code, body)
		}
	}
	if n := op.apiReads.Load() - reads; n != 0 {
		t.Errorf("malformed names cost %d API reads, want none", n)
	}

	// Wrong tokens for the live run: the cache answers. After the burst,
	// the source gets 429 with Retry-After.
	reads = op.apiReads.Load()
	path := "/v1/runs/" + ns + "/" + pod.Name
	codes := map[int]int{}
	var limited http.Header
	for i := 0; i < 200; i++ {
		code, h, body := rawPost(t, op.ResultsURL, path, fmt.Sprintf("guess-%d", i))
		codes[code]++
		if !strings.Contains(body, `"error"`) {
			t.Fatalf("answer without a JSON error: %d %s", code, body)
		}
		if code == http.StatusTooManyRequests {
			limited = h
		}
	}
	if n := op.apiReads.Load() - reads; n != 0 {
		t.Errorf("200 wrong tokens cost %d API reads, want none", n)
	}
	// The malformed names above and the first wrong tokens spend the burst.
	if codes[http.StatusForbidden] == 0 || codes[http.StatusForbidden] > reportendpoint.DefaultFailureBurst ||
		codes[http.StatusTooManyRequests] < 200-reportendpoint.DefaultFailureBurst || limited.Get("Retry-After") == "" {
		t.Errorf("answers %v (Retry-After %q), want 403 up to the burst of %d, then 429 with Retry-After",
			codes, limited.Get("Retry-After"), reportendpoint.DefaultFailureBurst)
	}
	// The run's own crawler, from the same address, is not slowed down.
	if code, body := postReport(t, op, pod, token, progress); code != http.StatusOK {
		t.Errorf("the run's crawler after its neighbour's failures: %d %s", code, body)
	}

	// What the manager's metrics say of the requests above: every refusal
	// by its reason, the token ones counted again on their own.
	after := testutil.Metrics(t, metrics.Registry)
	grew := func(series string) float64 { return after[series] - before[series] }
	for series, want := range map[string]float64{
		`crawl_operator_reports_total{kind="progress",result="accepted"}`:      2,
		`crawl_operator_reports_total{kind="unknown",result="malformed_name"}`: 6,
		`crawl_operator_reports_total{kind="unknown",result="wrong_token"}`:    float64(codes[http.StatusForbidden]),
		`crawl_operator_reports_total{kind="unknown",result="rate_limited"}`:   float64(codes[http.StatusTooManyRequests]),
		`crawl_operator_report_token_rejections_total{reason="wrong_token"}`:   float64(codes[http.StatusForbidden]),
		`crawl_operator_report_token_rejections_total{reason="rate_limited"}`:  float64(codes[http.StatusTooManyRequests]),
		`crawl_operator_report_token_rejections_total{reason="missing_token"}`: 0,
		`crawl_operator_reports_total{kind="final",result="accepted"}`:         0,
	} {
		if got := grew(series); got != want {
			t.Errorf("%s grew by %v, want %v", series, got, want)
		}
	}
	if code, _, _ := rawPost(t, op.ResultsURL, path, ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if got := testutil.Metrics(t, metrics.Registry)[`crawl_operator_report_token_rejections_total{reason="missing_token"}`] - before[`crawl_operator_report_token_rejections_total{reason="missing_token"}`]; got != 1 {
		t.Errorf("a report without a token counted %v times as missing_token, want 1", got)
	}

	// Names the cache does not know: the API server is asked once, then
	// the answer is remembered for a few seconds.
	var n atomic.Int64
	fresh := &reportendpoint.Server{Client: op.cache, Reader: countingReader{Reader: op.apiReader, n: &n}, FailureBurst: 1000}
	srv := httptest.NewServer(fresh.Handler())
	defer srv.Close()
	for i := 0; i < 50; i++ {
		if code, _, body := rawPost(t, srv.URL, "/v1/runs/"+ns+"/nope-crawl-1", "x"); code != http.StatusForbidden {
			t.Fatalf("unknown run: %d %s", code, body)
		}
	}
	if got := n.Load(); got != 1 {
		t.Errorf("50 reports for an unknown run cost %d API reads, want 1", got)
	}
}

// deletedMeanwhile is the index as the endpoint writes it, with the run's
// CrawlTarget and SiteIndex deleted just before the write: a target
// deleted while its final report is being stored.
type deletedMeanwhile struct {
	reportendpoint.Index
	t *testing.T
}

func (d deletedMeanwhile) WriteSite(ctx context.Context, key client.ObjectKey, doc store.SiteDoc) error {
	for _, obj := range []client.Object{&crawlv1.CrawlTarget{}, &crawlv1.SiteIndex{}} {
		obj.SetNamespace(key.Namespace)
		obj.SetName(key.Name)
		if err := k8s.Delete(ctx, obj); err != nil {
			d.t.Errorf("delete %T: %v", obj, err)
		}
	}
	return d.Index.WriteSite(ctx, key, doc)
}

// The endpoint writes the index backend before the SiteIndex. When the
// target and its SiteIndex go in between, the rows just written go too:
// nothing of a deleted target stays searchable.
func TestResultOfATargetDeletedMeanwhileLeavesNoRows(t *testing.T) {
	createEgressNode(t, "egress-deleted-meanwhile", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "deleted-meanwhile", "https://deleted-meanwhile.example.com/")
	pod, token := runningPod(t, ct)
	op.Results.Index = deletedMeanwhile{Index: op.Results.Index, t: t}
	final := runreport.Report{Final: true, Result: runreport.Crawl{Pages: pages("https://deleted-meanwhile.example.com", 2)}}
	code, body := postReport(t, op, pod, token, final)
	if code != http.StatusConflict || !strings.Contains(body, "gone") {
		t.Errorf("final report of a target deleted meanwhile: %d %s, want 409", code, body)
	}
	if got := indexedPages(t, op, "deleted-meanwhile.example.com"); len(got) != 0 {
		t.Errorf("rows of the deleted target left in the index: %v", got)
	}
}
