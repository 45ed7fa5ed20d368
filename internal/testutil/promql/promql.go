// Package promql holds what the tests of the chart's alerts and dashboard
// share: the expressions of a rendered chart, the tools of make
// promtool-bin (Prometheus's promtool, and promqlrefs, which reads
// expressions with Prometheus's own parser), and what those say. Only
// tests import it.
package promql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// Expr is one expression and where it comes from ("alert X", "panel Y").
type Expr struct {
	Source string
	Expr   string
}

// Refs is what Prometheus's parser finds in one expression.
type Refs struct {
	Expr    string   `json:"expr"`
	Error   string   `json:"error"`
	Metrics []string `json:"metrics"`
	Labels  []string `json:"labels"`
}

// Alert is one alerting rule of a rendered PrometheusRule.
type Alert struct {
	Name        string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Tool is bin/promtool/NAME of the repository at root (make promtool-bin).
func Tool(t testing.TB, root, name string) string {
	t.Helper()
	return testutil.BuiltTool(t, root, filepath.Join("bin", "promtool", name), "promtool-bin")
}

// Groups returns spec.groups of the one PrometheusRule among objs.
func Groups(t testing.TB, objs []*unstructured.Unstructured) []any {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "PrometheusRule" {
			continue
		}
		groups, ok, err := unstructured.NestedSlice(o.Object, "spec", "groups")
		if err != nil || !ok || len(groups) == 0 {
			t.Fatalf("PrometheusRule %s has no spec.groups (%v)", o.GetName(), err)
		}
		return groups
	}
	t.Fatal("no PrometheusRule rendered")
	return nil
}

// Alerts returns the alerting rules of groups.
func Alerts(t testing.TB, groups []any) []Alert {
	t.Helper()
	b, err := json.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	var gs []struct {
		Rules []Alert `json:"rules"`
	}
	if err := json.Unmarshal(b, &gs); err != nil {
		t.Fatal(err)
	}
	var out []Alert
	for _, g := range gs {
		for _, r := range g.Rules {
			if r.Name == "" {
				t.Fatalf("a rule with no alert name: %+v", r)
			}
			out = append(out, r)
		}
	}
	return out
}

// Panel is one dashboard panel with its queries.
type Panel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// Dashboard is the part of a Grafana dashboard the tests read.
type Dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

// DashboardOf decodes the dashboard of the one ConfigMap among objs that
// Grafana's sidecar would load (labelled grafana_dashboard), and returns
// its JSON too.
func DashboardOf(t testing.TB, objs []*unstructured.Unstructured) Dashboard {
	t.Helper()
	d, _ := DashboardJSON(t, objs)
	return d
}

// DashboardJSON is DashboardOf with the ConfigMap's JSON as it is.
func DashboardJSON(t testing.TB, objs []*unstructured.Unstructured) (Dashboard, string) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GetLabels()["grafana_dashboard"] != "1" {
			continue
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", "crawl-operator.json")
		var d Dashboard
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			t.Fatalf("dashboard JSON of ConfigMap %s: %v", o.GetName(), err)
		}
		return d, data
	}
	t.Fatal("no dashboard ConfigMap rendered")
	return Dashboard{}, ""
}

// Grafana's variables, as a query of the dashboard sees them once Grafana
// has substituted them: the release's namespace and a rate window.
var grafanaVariables = strings.NewReplacer(`$namespace`, "crawl-system", `$__rate_interval`, "5m")

// PanelExprs returns every panel query of d, Grafana's variables
// substituted, so Prometheus's parser reads what Prometheus will run.
func PanelExprs(d Dashboard) []Expr {
	var out []Expr
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, Expr{Source: "panel " + p.Title, Expr: grafanaVariables.Replace(tg.Expr)})
		}
	}
	return out
}

// ReadRefs runs promqlrefs on exprs: what Prometheus's parser finds in each.
func ReadRefs(t testing.TB, root string, exprs []Expr) []Refs {
	t.Helper()
	in := make([]string, len(exprs))
	for i, e := range exprs {
		in[i] = e.Expr
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Tool(t, root, "promqlrefs"))
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("promqlrefs: %v: %s", err, stderr.String())
	}
	var refs []Refs
	if err := json.Unmarshal(out, &refs); err != nil || len(refs) != len(exprs) {
		t.Fatalf("promqlrefs answered %d results for %d expressions (%v)", len(refs), len(exprs), err)
	}
	return refs
}

// Promtool runs bin/promtool/promtool with args in dir and returns its
// output, failing the test when it fails.
func Promtool(t testing.TB, root, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Tool(t, root, "promtool"), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// String shows where an expression comes from, for messages.
func (e Expr) String() string { return fmt.Sprintf("%s: %s", e.Source, e.Expr) }
