package egresscheck

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
)

// echo is a real echo service on loopback: it answers with the address
// the request came from, as the kernel reports it.
func echo(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		w.Write([]byte(host + "\n"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// serve is a hostile or broken echo: h answers, and hits counts requests.
func serve(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// loopback lets the dialer reach the test servers; everything else is the
// crawl's dialer as it is.
func loopback(source string) fetch.Config {
	d := fetch.Dialer{AllowPrivate: true}
	if source != "" {
		d.SourceIP = netip.MustParseAddr(source)
	}
	return fetch.Config{UserAgent: "LohiSoftBot/1.0 (+https://lohisoft.com/bot)", Dialer: d}
}

// Hostile and broken echo answers come first: none of them verifies
// anything, and none says it observed an address.
func TestUnusableAnswersVerifyNothing(t *testing.T) {
	elsewhere, elsewhereHits := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("127.0.0.1")) })
	cases := []struct {
		name string
		h    http.HandlerFunc
		want string // alternatives separated by |
	}{
		{"huge answer", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(strings.Repeat("1", 1<<20)))
		}, "more than 256 bytes"},
		{"the address after a long prefix", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(strings.Repeat(" ", MaxAnswer) + "127.0.0.1"))
		}, "more than 256 bytes"},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>hello</html>")) }, "not an IP address"},
		{"empty", func(w http.ResponseWriter, r *http.Request) {}, "not an IP address"},
		{"redirect to an echo elsewhere", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL, http.StatusFound)
		}, "HTTP 302"},
		{"IPv6 answer", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("2001:db8::1")) }, "IPv6"},
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "127.0.0.1", http.StatusInternalServerError)
		}, "HTTP 500"},
		{"JSON without ip", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"addr":"127.0.0.1"}`)) }, "not {"},
		{"two addresses", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("127.0.0.1 127.0.0.1")) }, "not an IP address"},
		{"headers that never come", func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * time.Second)
		}, "timeout|deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, hits := serve(t, tc.h)
			c := Check{URL: mustURL(t, srv.URL), Expected: netip.MustParseAddr("127.0.0.1"), Fetch: loopback(""), Timeout: 500 * time.Millisecond}
			got, err := c.Run(context.Background())
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Run = %v, %v; want an *Error", got, err)
			}
			if got.IsValid() || e.Observed.IsValid() || errors.Is(err, ErrMismatch) {
				t.Errorf("Run = %v, observed %v, %v: an unusable answer observed an address", got, e.Observed, err)
			}
			if !slices.ContainsFunc(strings.Split(tc.want, "|"), func(w string) bool {
				return strings.Contains(strings.ToLower(err.Error()), strings.ToLower(w))
			}) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if hits.Load() != 1 {
				t.Errorf("echo asked %d times, want once", hits.Load())
			}
		})
	}
	if n := elsewhereHits.Load(); n != 0 {
		t.Errorf("the redirect's target was asked %d times; redirects must not be followed", n)
	}
}

func TestEchoDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := Check{URL: mustURL(t, "http://"+addr+"/"), Expected: netip.MustParseAddr("127.0.0.1"), Fetch: loopback("")}
	_, err = c.Run(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Observed.IsValid() || !strings.Contains(err.Error(), "not verified") {
		t.Fatalf("Run with the echo down = %v; want an unverified *Error with no observed address", err)
	}
}

// The echo is asked through the crawl's dialer: its address rules hold
// (a loopback echo is refused without AllowPrivate), and its source
// address is the one the echo sees.
func TestTheCrawlsDialerAsksTheEcho(t *testing.T) {
	srv := echo(t)
	u := mustURL(t, srv.URL)
	cases := []struct {
		name             string
		fetch            fetch.Config
		expected         string
		verified         string
		observed, errHas string
	}{
		{"match", loopback(""), "127.0.0.1", "127.0.0.1", "", ""},
		{"match from the source address", loopback("127.0.0.2"), "127.0.0.2", "127.0.0.2", "", ""},
		{"mismatch", loopback(""), "79.139.58.98", "", "127.0.0.1", "sites would see 127.0.0.1, not the published 79.139.58.98"},
		{"another source address", loopback("127.0.0.2"), "127.0.0.1", "", "127.0.0.2", "sites would see 127.0.0.2"},
		{"the address rules", fetch.Config{}, "127.0.0.1", "", "", fetch.ErrNonPublic.Error()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Check{URL: u, Expected: netip.MustParseAddr(tc.expected), Fetch: tc.fetch}
			got, err := c.Run(context.Background())
			if tc.verified != "" {
				if err != nil || got != netip.MustParseAddr(tc.verified) {
					t.Fatalf("Run = %v, %v; want %s verified", got, err, tc.verified)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || got.IsValid() {
				t.Fatalf("Run = %v, %v; want an *Error", got, err)
			}
			if tc.observed != "" && (e.Observed != netip.MustParseAddr(tc.observed) || !errors.Is(err, ErrMismatch)) {
				t.Errorf("observed %v (%v), want the mismatch %s", e.Observed, err, tc.observed)
			}
			if !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("error %q does not say %q", err, tc.errHas)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	cases := []struct {
		body, want string // want "" means refused
	}{
		// Refused first.
		{"", ""},
		{"   \n", ""},
		{"::1", ""},
		{"2001:db8::1", ""},
		{"fe80::1%eth0", ""},
		{`{"ip":"2001:db8::1"}`, ""},
		{`{"ip":79}`, ""},
		{`{"ip":null}`, ""},
		{`{"ip":"79.139.58.98"} trailing`, ""},
		{`{}`, ""},
		{"79.139.58.98:443", ""},
		{"79.139.58.098", ""},
		{"79.139.58.98/32", ""},
		{"79.139.58", ""},
		{"ip=79.139.58.98", ""},
		// Read.
		{"79.139.58.98", "79.139.58.98"},
		{"79.139.58.98\n", "79.139.58.98"},
		{"\r\n 79.139.58.121 \t", "79.139.58.121"},
		{"::ffff:79.139.58.98", "79.139.58.98"},
		{`{"ip":"79.139.58.98"}`, "79.139.58.98"},
		{`{"ip":"79.139.58.98","port":51234}`, "79.139.58.98"},
		{" {\"ip\": \"79.139.58.121\"}\n", "79.139.58.121"},
	}
	for _, tc := range cases {
		got, err := ParseAnswer([]byte(tc.body))
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseAnswer(%q) = %v, want refused", tc.body, got)
			}
			continue
		}
		if err != nil || got != netip.MustParseAddr(tc.want) {
			t.Errorf("ParseAnswer(%q) = %v, %v; want %s", tc.body, got, err, tc.want)
		}
	}
}
