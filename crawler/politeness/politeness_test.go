package politeness

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGap(t *testing.T) {
	cases := []struct{ delay, crawl, want time.Duration }{
		{time.Second, 0, time.Second},
		{time.Second, 5 * time.Second, 5 * time.Second},
		{5 * time.Second, time.Second, 5 * time.Second},
		{time.Second, time.Hour, MaxCrawlDelay},
		{2 * time.Minute, time.Hour, 2 * time.Minute},
	}
	for _, c := range cases {
		if got := Gap(c.delay, c.crawl); got != c.want {
			t.Errorf("Gap(%v, %v) = %v, want %v", c.delay, c.crawl, got, c.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 8, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{" 5 ", 5 * time.Second, true},
		{"Sun, 23 Aug 2026 12:01:30 GMT", 90 * time.Second, true},
		{"Sunday, 23-Aug-26 12:00:10 GMT", 10 * time.Second, true},
		{"Sun Aug 23 12:00:20 2026", 20 * time.Second, true},
		{"Sun, 23 Aug 2026 11:00:00 GMT", 0, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
		{"99999999999", 365 * 24 * time.Hour, true},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter(c.v, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Base: time.Second, Max: 10 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := b.Delay(i + 1); got != w {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := (Backoff{}).Delay(1000); got != 10*time.Minute {
		t.Errorf("huge attempt: %v", got)
	}
}

func TestBackOffStatus(t *testing.T) {
	for code, want := range map[int]bool{200: false, 301: false, 401: false, 403: false, 404: false, 429: true, 500: true, 502: true, 503: true, 599: true} {
		if BackOffStatus(code) != want {
			t.Errorf("BackOffStatus(%d) != %v", code, want)
		}
	}
}

// The gate never lets two holders overlap and never starts two less than
// the gap apart, whatever the number of goroutines asking.
func TestGateSerialisesAndSpaces(t *testing.T) {
	const gap = 30 * time.Millisecond
	g := NewGate(gap)
	var inFlight, maxInFlight atomic.Int32
	var mu sync.Mutex
	var starts []time.Time
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := g.Acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			n := inFlight.Add(1)
			for {
				m := maxInFlight.Load()
				if n <= m || maxInFlight.CompareAndSwap(m, n) {
					break
				}
			}
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			inFlight.Add(-1)
			release()
		}()
	}
	wg.Wait()
	if maxInFlight.Load() != 1 {
		t.Fatalf("max in flight = %d", maxInFlight.Load())
	}
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d < gap {
			t.Errorf("starts %d and %d only %v apart", i-1, i, d)
		}
	}
}

func TestGateNotBeforeAndRaise(t *testing.T) {
	g := NewGate(0)
	r, _ := g.Acquire(context.Background())
	r()
	until := time.Now().Add(100 * time.Millisecond)
	g.NotBefore(until)
	g.NotBefore(time.Now()) // an earlier bound does not shorten it
	r, _ = g.Acquire(context.Background())
	if time.Now().Before(until) {
		t.Fatal("started before NotBefore")
	}
	r()
	g.RaiseGap(50 * time.Millisecond)
	g.RaiseGap(time.Millisecond)
	if g.CurrentGap() != 50*time.Millisecond {
		t.Fatalf("gap %v", g.CurrentGap())
	}
	ctx, cancel := context.WithCancel(context.Background())
	r, _ = g.Acquire(ctx)
	cancel()
	if _, err := g.Acquire(ctx); err == nil {
		t.Fatal("Acquire on a busy gate ignored cancellation")
	}
	r()
	r() // release is idempotent
	r, err := g.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r()
}

func TestHostsShareGatePerHost(t *testing.T) {
	h := &Hosts{Gap: time.Second}
	if h.Gate("Example.com") != h.Gate("example.com.") {
		t.Fatal("same host got two gates")
	}
	if h.Gate("a.example") == h.Gate("b.example") {
		t.Fatal("two hosts share a gate")
	}
	if h.Gate("x.example").CurrentGap() != time.Second {
		t.Fatal("gap not applied")
	}
}

func TestNamesOfOneAddressShareItsGate(t *testing.T) {
	h := &Hosts{Gap: 100 * time.Millisecond}
	lo := netip.MustParseAddr("127.0.0.1")
	a := h.For("127.0.0.1", []netip.Addr{lo})
	b := h.For("localhost", []netip.Addr{lo, netip.MustParseAddr("127.0.0.2")})
	if a[0] == b[0] || a[1] != b[1] || len(b) != 3 {
		t.Fatalf("gates: %p %p", a, b)
	}
	release, err := a.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	release()
	start := time.Now()
	release, err = b.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	release()
	if waited := time.Since(start); waited < 90*time.Millisecond {
		t.Errorf("second name of the address waited %v, want the 100ms gap", waited)
	}
	// A cancelled acquire frees what it already held.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Acquire(ctx); err == nil {
		t.Fatal("Acquire ignored cancellation")
	}
	if r, err := b.Acquire(context.Background()); err != nil {
		t.Fatalf("set left busy after a cancelled acquire: %v", err)
	} else {
		r()
	}
}
