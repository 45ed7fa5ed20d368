package reportendpoint

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Kinds of report, as labelled.
const (
	kindProgress = "progress"
	kindFinal    = "final"
	// kindUnknown is a report refused before its body was read.
	kindUnknown = "unknown"
)

// Refusals for the token, which crawl_operator_report_token_rejections_total
// counts too.
const (
	reasonMissingToken = "missing_token"
	reasonWrongToken   = "wrong_token"
	reasonRateLimited  = "rate_limited"
)

var (
	reports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crawl_operator_reports_total",
		Help: "Reports of crawler Pods, by kind (progress, final, unknown: refused before it was read) and result: accepted, or why it was refused.",
	}, []string{"kind", "result"})
	tokenRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crawl_operator_report_token_rejections_total",
		Help: "Requests to the results endpoint refused for their token, by reason (missing_token, wrong_token, rate_limited: a source that kept failing).",
	}, []string{"reason"})
)

var registerOnce sync.Once

// RegisterMetrics adds the endpoint's metrics to controller-runtime's
// registry, which the manager serves; once per process, however many
// managers a test starts.
func RegisterMetrics() {
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(reports, tokenRejections)
		// The series alerts and dashboards read exist from the start, at
		// 0, so rate() counts their first increment.
		for _, kind := range []string{kindProgress, kindFinal} {
			reports.WithLabelValues(kind, "accepted")
		}
		for _, reason := range []string{reasonMissingToken, reasonWrongToken, reasonRateLimited} {
			tokenRejections.WithLabelValues(reason)
		}
	})
}

func accepted(kind string) { reports.WithLabelValues(kind, "accepted").Inc() }

func refused(kind, reason string) {
	reports.WithLabelValues(kind, reason).Inc()
	switch reason {
	case reasonMissingToken, reasonWrongToken, reasonRateLimited:
		tokenRejections.WithLabelValues(reason).Inc()
	}
}
