package testutil

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
	return samples(families)
}

// Scrape reads the Prometheus text endpoint at url (a manager process's
// /metrics, etcd's /metrics) and returns its samples keyed as Metrics keys
// them. It returns an error rather than failing the test: callers poll it.
func Scrape(url string) (map[string]float64, error) {
	return ScrapeWith(&http.Client{Timeout: 30 * time.Second}, url)
}

// ScrapeWith is Scrape with an HTTP client of the caller's: one that
// authenticates to the API server's /metrics, say (rest.HTTPClientFor).
func ScrapeWith(c *http.Client, url string) (map[string]float64, error) {
	families, err := ScrapeFamilies(c, url)
	if err != nil {
		return nil, err
	}
	return samples(families), nil
}

// ScrapeFamilies reads the Prometheus text endpoint at url whole: every
// metric family with its type and series.
func ScrapeFamilies(c *http.Client, url string) ([]*dto.MetricFamily, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		families = append(families, f)
	}
	return families, nil
}

func samples(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := Series(f.GetName(), m.GetLabel())
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[key] = m.GetUntyped().GetValue()
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
