package testutil

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics scrapes g (controller-runtime's metrics.Registry, say) and
// returns every counter and gauge sample, and every histogram's count, by
// series: `name{label="value",...}` with the labels sorted, as the text
// format writes it.
func Metrics(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := Series(f.GetName(), m.GetLabel())
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// Series names one series as Metrics keys it.
func Series(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}
