package storetest

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store"
)

// BuildCorpus writes c into s through ReplaceSite, the syncer's path,
// skipping the first done sites (a build that was interrupted resumes
// there), logging progress, and returns how long it took. A failed write
// is retried for a minute: other tests on the machine restart the
// PostgreSQL server, and ReplaceSite is one transaction, safe to repeat.
func BuildCorpus(tb testing.TB, s store.Store, c Corpus, done int) time.Duration {
	start := time.Now()
	n := 0
	if err := c.Generate(func(d store.SiteDoc) error {
		n++
		if n <= done {
			return nil
		}
		if n%5000 == 0 {
			tb.Logf("%d of %d sites written, %s", n, c.Sites, time.Since(start).Round(time.Second))
		}
		var err error
		for range 30 {
			if err = s.ReplaceSite(ctx, d); err == nil {
				return nil
			}
			tb.Logf("site %d: %v; retrying", n, err)
			time.Sleep(2 * time.Second)
		}
		return err
	}); err != nil {
		tb.Fatalf("build corpus: %v", err)
	}
	return time.Since(start)
}

// Latency is what MeasureQueryMix found for one query class.
type Latency struct {
	Query    Query
	Results  int
	P50, P99 time.Duration
}

// MeasureQueryMix runs every query of QueryMix rounds times, interleaved
// so background load falls on all classes alike, after one warm-up round,
// and returns p50 and p99 per class. It reports the figures with the load
// average, which on a shared machine says how much they can be trusted.
func MeasureQueryMix(tb testing.TB, s store.Store, rounds int) []Latency {
	mix := QueryMix()
	loadBefore := loadAverage()
	times := make([][]time.Duration, len(mix))
	out := make([]Latency, len(mix))
	for i, q := range mix {
		res, err := s.Search(ctx, q.Text, store.DefaultLimit) // warm-up
		if err != nil {
			tb.Fatalf("Search(%q): %v", q.Text, err)
		}
		out[i] = Latency{Query: q, Results: len(res)}
	}
	for range rounds {
		for i, q := range mix {
			start := time.Now()
			if _, err := s.Search(ctx, q.Text, store.DefaultLimit); err != nil {
				tb.Fatalf("Search(%q): %v", q.Text, err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d rounds, GOMAXPROCS %d, load average before / after: %s / %s\n", rounds, runtime.GOMAXPROCS(0), loadBefore, loadAverage())
	defer func() { tb.Log(b.String()) }()
	fmt.Fprintf(&b, "%-14s %-24s %8s %10s %10s\n", "class", "query", "results", "p50", "p99")
	for i := range mix {
		slices.SortFunc(times[i], cmp.Compare)
		out[i].P50 = percentile(times[i], 50)
		out[i].P99 = percentile(times[i], 99)
		fmt.Fprintf(&b, "%-14s %-24q %8d %10s %10s\n", mix[i].Class, mix[i].Text, out[i].Results,
			out[i].P50.Round(10*time.Microsecond), out[i].P99.Round(10*time.Microsecond))
	}
	return out
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
