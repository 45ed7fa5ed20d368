package main

import (
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
	"github.com/lohisoft/crawl-operator/internal/testutil/helmrender"
	"github.com/lohisoft/crawl-operator/internal/testutil/promql"
)

// targetLabels are the labels Prometheus adds to every series it scrapes
// through the chart's ServiceMonitor; an expression may name them.
var targetLabels = []string{"namespace", "pod", "instance", "job", "service", "endpoint", "container"}

// Every metric and label the chart's alerts and dashboard panels name is
// one a running manager exports, read by Prometheus's own parser: a typo,
// a renamed metric or a label that does not exist fails here instead of
// leaving an alert that can never fire or a panel that says "no data".
// The manager has never crawled: the dashboard must work from the start.
func TestAlertsAndDashboardNameOnlyExportedMetrics(t *testing.T) {
	root := filepath.Join("..", "..")
	objs, err := helmrender.Render(root, "crawl", "crawl-system", map[string]any{
		"prometheusRule": map[string]any{"enabled": true}, "dashboards": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	var exprs []promql.Expr
	for _, a := range promql.Alerts(t, promql.Groups(t, objs)) {
		exprs = append(exprs, promql.Expr{Source: "alert " + a.Name, Expr: a.Expr})
	}
	exprs = append(exprs, promql.PanelExprs(promql.DashboardOf(t, objs))...)
	refs := promql.ReadRefs(t, root, exprs)

	// A manager as the chart runs it (leader election, the FCrDNS check
	// on) with one verified egress node, never having crawled.
	dns := dnstest.Start(t, dnstest.Zone{
		PTR: map[string][]string{"79.139.58.98": {"crawler1.bot.lohisoft.com"}},
		A:   map[string][]string{"crawler1.bot.lohisoft.com": {"79.139.58.98"}},
	})
	testutil.CreateEgressNode(t, k8s, "egress-monitoring", "79.139.58.98")
	r := startReplica(t, "monitoring", "--leader-elect=true", "--leader-election-namespace="+testenv.ManagerNamespace,
		"--metrics-secure=false", "--require-egress-fcrdns=true", "--egress-dns-server="+dns.Addr)
	url := "http://" + r.metricsAddr + "/metrics"
	testutil.Eventually(t, time.Minute, "the manager leads and its egress node passed FCrDNS", func() error {
		m, err := testutil.Scrape(url)
		if err != nil {
			return err
		}
		for _, series := range []string{
			`leader_election_master_status{name="crawl-operator.crawl.lohisoft.com"}`,
			`crawl_operator_egress_fcrdns_verified{node="egress-monitoring"}`,
			`crawl_operator_crawls_running{node="egress-monitoring"}`,
		} {
			if _, ok := m[series]; !ok {
				return fmt.Errorf("no %s yet", series)
			}
		}
		if m[`leader_election_master_status{name="crawl-operator.crawl.lohisoft.com"}`] != 1 {
			return fmt.Errorf("not leading yet")
		}
		return nil
	})
	exported, err := exportedNames(url)
	if err != nil {
		t.Fatal(err)
	}

	for i, ref := range refs {
		e := exprs[i]
		if ref.Error != "" {
			t.Errorf("%s: Prometheus cannot parse it: %s", e, ref.Error)
			continue
		}
		if len(ref.Metrics) == 0 {
			t.Errorf("%s: names no metric", e)
		}
		allowed := slices.Clone(targetLabels)
		for _, m := range ref.Metrics {
			labels, ok := exported[m]
			if !ok {
				t.Errorf("%s: names %s, which the manager does not export", e, m)
				continue
			}
			allowed = append(allowed, labels...)
		}
		for _, l := range ref.Labels {
			if !slices.Contains(allowed, l) {
				t.Errorf("%s: names the label %q, which none of %v has", e, l, ref.Metrics)
			}
		}
	}
}

// exportedNames returns every series name the metrics at url let a query
// select (a histogram's _bucket, _sum and _count) with the label names it
// carries (le on the buckets).
func exportedNames(url string) (map[string][]string, error) {
	families, err := testutil.ScrapeFamilies(&http.Client{Timeout: 30 * time.Second}, url)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, f := range families {
		name, labels := f.GetName(), map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		names := slices.Sorted(maps.Keys(labels))
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out[name+"_bucket"] = append(slices.Clone(names), "le")
			out[name+"_sum"], out[name+"_count"] = names, names
		case dto.MetricType_SUMMARY:
			out[name] = append(slices.Clone(names), "quantile")
			out[name+"_sum"], out[name+"_count"] = names, names
		default:
			out[name] = names
		}
	}
	return out, nil
}
