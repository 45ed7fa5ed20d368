package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/internal/testutil/promql"
)

func monitoringValues() map[string]any {
	return map[string]any{"prometheusRule": map[string]any{"enabled": true}, "dashboards": map[string]any{"enabled": true}}
}

// The rendered alerts pass promtool's own checks (expressions, durations,
// annotation templates), then promtool's unit tests
// (testdata/alerts/alerts_test.yaml): each alert fires on a synthetic
// series and stays quiet on a healthy one, through counter resets, leader
// changes, no crawls at all and a manager that never crawled.
func TestAlertsWithPromtool(t *testing.T) {
	groups := promql.Groups(t, mustRender(t, monitoringValues()))
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "full.yaml"), groups)
	out := promql.Promtool(t, repoRoot, dir, "check", "rules", "full.yaml")
	t.Logf("promtool check rules: %s", strings.TrimSpace(out))

	// The unit tests compare every annotation: they state the summary,
	// which must name the affected object; the description's template is
	// checked above and the runbook by TestEveryAlertHasARunbook.
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			ann := r.(map[string]any)["annotations"].(map[string]any)
			for k := range ann {
				if k != "summary" {
					delete(ann, k)
				}
			}
		}
	}
	writeRules(t, filepath.Join(dir, "rules.yaml"), groups)
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	out = promql.Promtool(t, repoRoot, dir, "test", "rules", "alerts_test.yaml")
	t.Logf("promtool test rules: %s", strings.TrimSpace(out))
}

func writeRules(t *testing.T, path string, groups []any) {
	t.Helper()
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every alert the chart can render has a unit test where it fires and one
// where it stays quiet: an alert nobody tested firing may never fire.
func TestEveryAlertIsTestedBothWays(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "alerts", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tests []struct {
			Name  string `json:"name"`
			Tests []struct {
				Alert     string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, g := range file.Tests {
		for _, c := range g.Tests {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alert] = true
			} else {
				quiet[c.Alert] = true
			}
		}
	}
	for _, a := range promql.Alerts(t, promql.Groups(t, mustRender(t, monitoringValues()))) {
		if !fires[a.Name] {
			t.Errorf("%s: no unit test where it fires", a.Name)
		}
		if !quiet[a.Name] {
			t.Errorf("%s: no unit test where it stays quiet", a.Name)
		}
	}
}

// The alerts the issue asks for are all there, each with a severity, a
// summary and a runbook: a section of docs/operations.md, found by the
// anchor its runbook_url ends with, that says what the alert means, how to
// confirm it and what to do.
func TestEveryAlertHasARunbook(t *testing.T) {
	alerts := promql.Alerts(t, promql.Groups(t, mustRender(t, monitoringValues())))
	var names []string
	for _, a := range alerts {
		names = append(names, a.Name)
	}
	for _, want := range []string{
		"CrawlOperatorIndexBackendDown", "CrawlOperatorIndexSyncLagHigh", "CrawlOperatorCrawlFailuresHigh",
		"CrawlOperatorQueueStalled", "CrawlOperatorNoEgressNode", "CrawlOperatorReportsRefused",
		"CrawlOperatorCrawlersKilled", "CrawlOperatorNoLeader",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("no alert %s (have %v)", want, names)
		}
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := runbookSections(string(doc))
	const base = "https://github.com/lohisoft/crawl-operator/blob/main/docs/operations.md#"
	for _, a := range alerts {
		if s := a.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", a.Name, s)
		}
		if !strings.Contains(a.Annotations["summary"], "{{ $labels.") && !strings.Contains(a.Annotations["summary"], "crawl-system") {
			t.Errorf("%s: the summary names no affected object: %q", a.Name, a.Annotations["summary"])
		}
		anchor, ok := strings.CutPrefix(a.Annotations["runbook_url"], base)
		if !ok {
			t.Errorf("%s: runbook_url %q is not under %s", a.Name, a.Annotations["runbook_url"], base)
			continue
		}
		body, ok := sections[anchor]
		if !ok {
			t.Errorf("%s: docs/operations.md has no section #%s", a.Name, anchor)
			continue
		}
		for _, part := range []string{"What it means", "How to confirm", "What to do"} {
			if !strings.Contains(body, part) {
				t.Errorf("%s: its runbook says nothing under %q", a.Name, part)
			}
		}
	}
}

// runbookSections maps the GitHub anchor of each "### " heading of doc to
// the text up to the next heading of that level or above.
func runbookSections(doc string) map[string]string {
	out := map[string]string{}
	heading := regexp.MustCompile(`(?m)^#{1,3} .*$`)
	idx := heading.FindAllStringIndex(doc, -1)
	for i, loc := range idx {
		title := doc[loc[0]:loc[1]]
		if !strings.HasPrefix(title, "### ") {
			continue
		}
		end := len(doc)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[githubAnchor(strings.TrimPrefix(title, "### "))] = doc[loc[1]:end]
	}
	return out
}

// githubAnchor is the id GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func githubAnchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The values reach the rules: the namespace scopes every selector, the
// thresholds are the ones set, and without leader election there is no
// Lease to alert on.
func TestPrometheusRuleFollowsValues(t *testing.T) {
	vals := monitoringValues()
	vals["prometheusRule"] = map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus"},
		"thresholds": map[string]any{"queueOldestWaitSeconds": 7200, "syncLagSeconds": 60}}
	vals["manager"] = map[string]any{"leaderElection": false}
	objs, err := renderRelease(t, "crawl", "search-prod", vals)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "PrometheusRule" && o.GetLabels()["release"] != "kube-prometheus" {
			t.Errorf("PrometheusRule labels = %v, want release=kube-prometheus among them", o.GetLabels())
		}
	}
	selector := regexp.MustCompile(`\b(crawl_operator_[a-z_]+|leader_election_master_status)\{([^}]*)\}`)
	for _, a := range promql.Alerts(t, promql.Groups(t, objs)) {
		if a.Name == "CrawlOperatorNoLeader" {
			t.Errorf("CrawlOperatorNoLeader rendered with manager.leaderElection=false")
		}
		sels := selector.FindAllStringSubmatch(a.Expr, -1)
		if len(sels) == 0 {
			t.Errorf("%s: no selector found in %q", a.Name, a.Expr)
		}
		for _, s := range sels {
			if !strings.Contains(s[2], `namespace="search-prod"`) {
				t.Errorf("%s: selector %s is not scoped to the release's namespace", a.Name, s[0])
			}
		}
		switch a.Name {
		case "CrawlOperatorQueueStalled":
			if !strings.HasSuffix(a.Expr, "> 7200") {
				t.Errorf("QueueStalled expr = %q, want the threshold 7200", a.Expr)
			}
		case "CrawlOperatorIndexSyncLagHigh":
			if !strings.HasSuffix(a.Expr, "> 60") {
				t.Errorf("IndexSyncLagHigh expr = %q, want the threshold 60", a.Expr)
			}
		}
	}
	for _, bad := range []map[string]any{
		{"thresholds": map[string]any{"queueOldestWaitSeconds": 60}},
		{"thresholds": map[string]any{"crawlFailureRatio": 1.5}},
		{"thresholds": map[string]any{"crawlFailuresMin": 0}},
		{"runbookBaseURL": "ops.md#x"},
		{"thresold": 1},
	} {
		bad["enabled"] = true
		if _, err := render(t, map[string]any{"prometheusRule": bad}); err == nil {
			t.Errorf("prometheusRule %v rendered; the schema must refuse it", bad)
		}
	}
}

// The dashboard ConfigMap carries the file of the chart unchanged, under
// the label Grafana's sidecar watches, and the dashboard has the panels
// an operations team needs, each with a query on the chosen data source.
func TestDashboardConfigMap(t *testing.T) {
	vals := monitoringValues()
	vals["dashboards"] = map[string]any{"enabled": true, "labels": map[string]any{"team": "search"}, "annotations": map[string]any{"grafana_folder": "Search"}}
	objs := mustRender(t, vals)
	cm := find(objs, "ConfigMap", "crawl-crawl-operator-dashboard")
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	if l := cm.GetLabels(); l["grafana_dashboard"] != "1" || l["team"] != "search" {
		t.Errorf("labels = %v, want grafana_dashboard=1 and team=search", l)
	}
	if a := cm.GetAnnotations(); a["grafana_folder"] != "Search" {
		t.Errorf("annotations = %v", a)
	}
	d, data := promql.DashboardJSON(t, objs)
	file, err := os.ReadFile(filepath.Join(chartPath, "files", "dashboards", "crawl-operator.json"))
	if err != nil {
		t.Fatal(err)
	}
	if data != strings.TrimSuffix(string(file), "\n") {
		t.Error("the ConfigMap's dashboard differs from files/dashboards/crawl-operator.json")
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	if !slices.Contains(vars, "datasource") || !slices.Contains(vars, "namespace") {
		t.Errorf("template variables %v, want datasource and namespace", vars)
	}
	all := ""
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, `namespace=~"$namespace"`) {
				t.Errorf("panel %q: %q ignores the namespace variable", p.Title, tg.Expr)
			}
			all += tg.Expr + "\n"
		}
	}
	// What the issue asks the dashboard to show.
	for what, metric := range map[string]string{
		"crawls per outcome": "crawl_operator_crawls_finished_total", "queue depth": "crawl_operator_queue_waiting",
		"oldest wait": "crawl_operator_queue_oldest_wait_seconds", "pages indexed": "crawl_operator_pages_indexed_total",
		"backend health": "crawl_operator_index_backend_up", "sync lag": "crawl_operator_index_sync_lag_seconds",
		"search latency": "crawl_operator_search_request_duration_seconds_bucket", "per-node slot use": "crawl_operator_crawl_slots_per_node",
	} {
		if !strings.Contains(all, metric) {
			t.Errorf("no panel shows %s (%s)", what, metric)
		}
	}
	if strings.Contains(data, `"uid": "prometheus"`) || !strings.Contains(data, `"uid": "${datasource}"`) {
		t.Error("panels must query the ${datasource} variable, not a fixed data source")
	}
}
