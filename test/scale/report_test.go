//go:build scale

package scale

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// perSite is the growth from before to after, per site, in bytes.
func perSite(before, after float64, n int) string {
	return fmt.Sprintf("%.2f KB", (after-before)/float64(n)/1000)
}

// writeReport logs the measured table and writes it to $SCALE_REPORT
// (bin/scale-report.md by default), in the form docs/scale.md quotes.
func writeReport(t *testing.T, results []*sizeResult) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "Scale benchmark, %s, Go heap and RSS of bin/manager, load = 1-minute load average when measured.\n\n",
		time.Now().UTC().Format(time.RFC3339))
	if os.Getenv("SCALE_STORAGE") == "postgres" {
		b.WriteString("Index backend: PostgreSQL (a schema on the machine's server; its files are the server's, so the backend size column is 0).\n\n")
	}
	if memoryLimit > 0 {
		fmt.Fprintf(&b, "The manager ran with MEMORY_LIMIT=%d (%s), so under the Go memory limit the chart sets (--memory-limit-ratio of it).\n\n",
			memoryLimit, mib(float64(memoryLimit)))
	}
	b.WriteString("| N | all reconciled | manager requests while waiting | manager RSS: base / waiting / with results (per site above base) | etcd db: total / in use / compacted (per site) | results: sites, stored → in backend | restart: ready / index start-up check done | backend db+wal before → after |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %d | %s | %s | %s / %s / %s (%s; load %.1f) | %s / %s / %s (%s / %s / %s; load %.1f) | %s | %s / %s | %s → %s |\n",
			r.n, r.reconcile, r.waiting,
			mib(r.baseRSS.value), mib(r.waitingRSS.value), mib(r.resultsRSS.value), perSite(r.baseRSS.value, r.resultsRSS.value, r.n), r.resultsRSS.load,
			mib(r.etcdResults.total), mib(r.etcdResults.inUse), mib(r.etcdCompacted.total),
			perSite(r.etcdBase.total, r.etcdResults.total, r.n), perSite(r.etcdBase.inUse, r.etcdResults.inUse, r.n),
			perSite(r.etcdBase.total, r.etcdCompacted.total, r.n), r.etcdResults.load,
			fmt.Sprintf("%d: %s", r.results, r.resultsSynced), r.restartReady, r.restartSynced,
			mib(float64(r.backendBefore[0]+r.backendBefore[1])), mib(float64(r.backendAfter[0]+r.backendAfter[1])))
	}
	b.WriteString("\nManager requests until all were reconciled, and while waiting, by kind (with the API server's time to answer):\n\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- N=%d first pass, %s: %s\n", r.n, r.firstPass, strings.Join(r.firstPass.top, ", "))
		fmt.Fprintf(&b, "- N=%d waiting, %s: %s\n", r.n, r.waiting, strings.Join(r.waiting.top, ", "))
	}
	fmt.Fprintf(&b, "\nManager Go heap in use with results: ")
	for i, r := range results {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "N=%d %s", r.n, mib(r.heapResults))
	}
	b.WriteString("\nObjects as etcd stores them with results (average of 100): ")
	for i, r := range results {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "N=%d %s", r.n, strings.Join(r.stored, ", "))
	}
	b.WriteString("\netcd while the targets wait, before results (targets, empty SiteIndexes, Events): ")
	for i, r := range results {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "N=%d %s (%s per site)", r.n, mib(r.etcdWaiting.total), perSite(r.etcdBase.total, r.etcdWaiting.total, r.n))
	}
	b.WriteString("\n")
	b.WriteString("\nControl plane memory (RSS) before any target → with results, and the CPU each process used until all were reconciled:\n\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- N=%d: kube-apiserver %s → %s (%s per site), etcd %s → %s (%s per site); %s\n", r.n,
			mib(r.baseUsage.apiserverRSS), mib(r.withResults.apiserverRSS), perSite(r.baseUsage.apiserverRSS, r.withResults.apiserverRSS, r.n),
			mib(r.baseUsage.etcdRSS), mib(r.withResults.etcdRSS), perSite(r.baseUsage.etcdRSS, r.withResults.etcdRSS, r.n), r.reconcileCPU)
	}
	t.Logf("\n%s", b.String())

	path := os.Getenv("SCALE_REPORT")
	if path == "" {
		path = filepath.Join(repoRoot, "bin", "scale-report.md")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("report written to %s", path)
}
