// Command promqlrefs reads a JSON array of PromQL expressions on stdin and
// writes, for each, what Prometheus's own parser finds in it: the metric
// names it selects and the label names it matches, groups or joins on, or
// the parse error. The chart's tests use it to prove that every alert and
// dashboard expression names only what the manager exports; it lives here
// so that the project's module does not depend on Prometheus's.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type refs struct {
	Expr    string   `json:"expr"`
	Error   string   `json:"error,omitempty"`
	Metrics []string `json:"metrics"`
	Labels  []string `json:"labels"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "promqlrefs: want a JSON array of expressions on stdin:", err)
		os.Exit(2)
	}
	p := parser.NewParser(parser.Options{})
	out := make([]refs, 0, len(exprs))
	for _, e := range exprs {
		out = append(out, inspect(p, e))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "promqlrefs:", err)
		os.Exit(1)
	}
}

func inspect(p parser.Parser, e string) refs {
	r := refs{Expr: e, Metrics: []string{}, Labels: []string{}}
	expr, err := p.ParseExpr(e)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	metrics, names := map[string]bool{}, map[string]bool{}
	add := func(set map[string]bool, xs ...string) {
		for _, x := range xs {
			set[x] = true
		}
	}
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			for _, m := range n.LabelMatchers {
				if m.Name == labels.MetricName {
					if m.Type == labels.MatchEqual {
						add(metrics, m.Value)
					} else {
						// A regular expression over names cannot be
						// checked against an exposition: say so.
						add(metrics, "~"+m.Value)
					}
					continue
				}
				add(names, m.Name)
			}
		case *parser.AggregateExpr:
			add(names, n.Grouping...)
		case *parser.BinaryExpr:
			if vm := n.VectorMatching; vm != nil {
				add(names, vm.MatchingLabels...)
				add(names, vm.Include...)
			}
		}
		return nil
	})
	for m := range metrics {
		r.Metrics = append(r.Metrics, m)
	}
	for l := range names {
		r.Labels = append(r.Labels, l)
	}
	slices.Sort(r.Metrics)
	slices.Sort(r.Labels)
	return r
}
