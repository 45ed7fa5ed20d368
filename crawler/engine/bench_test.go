package engine

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// filler is the shared 2 MiB body of every benchmark page, so the test
// server's own memory stays small and the measured heap is the crawler's.
var filler = func() []byte {
	var b bytes.Buffer
	para := []byte("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>\n")
	for b.Len()+len(para) < 2<<20-4096 {
		b.Write(para)
	}
	return b.Bytes()
}()

// writeBigPage writes a 2 MiB HTML page linking to the next pages.
func writeBigPage(w http.ResponseWriter, i int) {
	var head bytes.Buffer
	fmt.Fprintf(&head, "<!doctype html><html><head><title>Page %d</title></head><body><h1>Page %d</h1>", i, i)
	for j := 1; j <= 25; j++ {
		fmt.Fprintf(&head, `<a href="/p%d">Page %d</a> `, j, j)
	}
	for head.Len() < 4096-len("</body></html>") {
		head.WriteByte(' ')
	}
	w.Header().Set("Content-Type", "text/html")
	w.Write(head.Bytes())
	w.Write(filler)
	w.Write([]byte("</body></html>"))
}

// BenchmarkCrawlPeakMemory crawls a local site of 2 MiB pages with the full
// budget of 20 pages and reports the peak heap the crawl adds above the
// baseline (the test server shares one 2 MiB body between all pages), sampled every
// millisecond with the default GOGC, and the bytes allocated per crawl.
func BenchmarkCrawlPeakMemory(b *testing.B) {
	s := testsite.New(b)
	for i := 0; i <= 25; i++ {
		path := fmt.Sprintf("/p%d", i)
		if i == 0 {
			path = "/"
		}
		s.Handle(path, func(w http.ResponseWriter, r *http.Request) { writeBigPage(w, i) })
	}
	cfg := testConfig()
	cfg.Delay = 0
	var peak atomic.Uint64
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for b.Loop() {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ms runtime.MemStats
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > before.HeapAlloc && ms.HeapAlloc-before.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc - before.HeapAlloc)
				}
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		res, err := Crawl(context.Background(), cfg, s.URL)
		close(stop)
		wg.Wait()
		if err != nil || len(res.Pages) != runreport.MaxPages {
			b.Fatalf("crawl: %v, %d pages", err, len(res.Pages))
		}
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-over-baseline-MiB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "alloc-MiB/crawl")
}

// BenchmarkConditionalRecrawl crawls a generated 20-page site whose pages
// carry an ETag and a Last-Modified, then recrawls it unchanged with the
// first crawl's validators (as the results endpoint hands them over), and
// reports the bytes each crawl received over the wire (headers included,
// robots.txt included) and the recrawl's share of the first crawl's. The
// target of issue 22 is at most 5 %.
func BenchmarkConditionalRecrawl(b *testing.B) {
	for _, size := range []int{5 << 10, 30 << 10} {
		b.Run(fmt.Sprintf("page=%dKiB", size>>10), func(b *testing.B) {
			s := validatedSite(b, runreport.MaxPages, size, true)
			cfg := testConfig()
			cfg.Delay = 0
			var first, again runreport.Crawl
			for b.Loop() {
				var err error
				cfg.Previous = nil
				if first, err = Crawl(context.Background(), cfg, s.URL); err != nil {
					b.Fatal(err)
				}
				cfg.Previous = previousOf(first)
				if again, err = Crawl(context.Background(), cfg, s.URL); err != nil {
					b.Fatal(err)
				}
			}
			// The budget is 20 requests, the sitemap one of them.
			if len(first.Pages) != runreport.MaxPages-1 || again.Stats.PagesUnchanged != len(first.Pages) || !sameSet(pageURLs(again), pageURLs(first)) {
				b.Fatalf("first crawl %d pages, recrawl %d pages of which %d unchanged", len(first.Pages), len(again.Pages), again.Stats.PagesUnchanged)
			}
			b.ReportMetric(float64(first.Stats.BytesReceived), "first-crawl-bytes")
			b.ReportMetric(float64(again.Stats.BytesReceived), "recrawl-bytes")
			b.ReportMetric(100*float64(again.Stats.BytesReceived)/float64(first.Stats.BytesReceived), "recrawl-%-of-first")
		})
	}
}
