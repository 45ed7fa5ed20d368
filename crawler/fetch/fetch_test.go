package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func all(*http.Response) bool { return true }

func TestIsPublicIPv4(t *testing.T) {
	cases := map[string]bool{
		"8.8.8.8": true, "79.139.58.98": true, "1.1.1.1": true, "172.32.0.1": true, "100.128.0.1": true,
		"0.0.0.0": false, "10.1.2.3": false, "100.64.0.1": false, "100.127.255.255": false,
		"127.0.0.1": false, "127.255.0.1": false, "169.254.169.254": false, "172.16.0.1": false,
		"172.31.255.255": false, "192.0.0.8": false, "192.0.2.1": false, "192.168.1.1": false,
		"198.18.0.1": false, "198.51.100.7": false, "203.0.113.9": false, "224.0.0.1": false,
		"240.0.0.1": false, "255.255.255.255": false, "::1": false, "2001:4860:4860::8888": false,
		"::ffff:8.8.8.8": true, "::ffff:127.0.0.1": false,
		// Special-purpose, but globally reachable and allowed
		// (crawler/specialpurpose says why).
		"192.31.196.1": true, "192.52.193.1": true, "192.175.48.1": true,
		"192.0.0.9": false, "192.88.99.1": false,
	}
	for s, want := range cases {
		if got := IsPublicIPv4(netip.MustParseAddr(s)); got != want {
			t.Errorf("IsPublicIPv4(%s) = %v, want %v", s, got, want)
		}
	}
}

// counting server: every request that reaches it is counted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestLoopbackRefusedWithoutAllowPrivate(t *testing.T) {
	srv, n := countingServer(t, nil)
	c := New(Config{UserAgent: "T"})
	_, err := c.Get(context.Background(), mustURL(t, srv.URL+"/"), all)
	if !errors.Is(err, ErrNonPublic) {
		t.Fatalf("err = %v, want ErrNonPublic", err)
	}
	if !IsPermanent(err) {
		t.Error("refusal must be permanent")
	}
	if n.Load() != 0 {
		t.Fatalf("%d requests reached the server", n.Load())
	}
	c = New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}})
	if _, err := c.Get(context.Background(), mustURL(t, srv.URL+"/"), all); err != nil {
		t.Fatalf("with AllowPrivate: %v", err)
	}
	if n.Load() != 1 {
		t.Fatalf("requests = %d, want 1", n.Load())
	}
}

func TestDNSAnswerPointingAtLoopbackRefused(t *testing.T) {
	srv, n := countingServer(t, nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dns := dnstest.Start(t, dnstest.Zone{
		A:    map[string][]string{"inside.test": {"127.0.0.1"}, "meta.test": {"169.254.169.254"}},
		AAAA: map[string][]string{"v6only.test": {"::1"}},
	})
	c := New(Config{UserAgent: "T", Dialer: Dialer{Resolver: dns.Resolver()}})
	for _, host := range []string{"inside.test", "meta.test"} {
		_, err := c.Get(context.Background(), mustURL(t, "http://"+host+":"+port+"/"), all)
		if !errors.Is(err, ErrNonPublic) {
			t.Errorf("%s: err = %v, want ErrNonPublic", host, err)
		}
	}
	_, err := c.Get(context.Background(), mustURL(t, "http://v6only.test:"+port+"/"), all)
	if !errors.Is(err, ErrNoIPv4) {
		t.Errorf("AAAA-only host: err = %v, want ErrNoIPv4", err)
	}
	_, err = c.Get(context.Background(), mustURL(t, "http://missing.test:"+port+"/"), all)
	if !errors.Is(err, ErrNoIPv4) {
		t.Errorf("NXDOMAIN host: err = %v, want ErrNoIPv4", err)
	}
	if n.Load() != 0 {
		t.Fatalf("%d requests reached the server", n.Load())
	}
	for _, q := range dns.Questions() {
		if strings.HasPrefix(q, "AAAA") {
			t.Errorf("resolver asked for AAAA: %s", q)
		}
	}
	// With AllowPrivate the same name works: the refusal was the address rule.
	c = New(Config{UserAgent: "T", Dialer: Dialer{Resolver: dns.Resolver(), AllowPrivate: true}})
	if _, err := c.Get(context.Background(), mustURL(t, "http://inside.test:"+port+"/"), all); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 {
		t.Fatalf("requests = %d, want 1", n.Load())
	}
}

func TestIPv6LiteralRefused(t *testing.T) {
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}})
	for _, s := range []string{"http://[::1]:1/", "http://[::ffff:127.0.0.1]:1/"} {
		_, err := c.Get(context.Background(), mustURL(t, s), all)
		if !errors.Is(err, ErrIPv6) {
			t.Errorf("%s: err = %v, want ErrIPv6", s, err)
		}
	}
	d := &Dialer{AllowPrivate: true}
	if _, err := d.DialContext(context.Background(), "tcp6", "127.0.0.1:1"); !errors.Is(err, ErrIPv6) {
		t.Errorf("tcp6 dial: %v", err)
	}
}

func TestRequestHeadersNoCookiesNoRedirects(t *testing.T) {
	var gotCookie, gotAuth, gotUA atomic.Value
	srv, n := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		gotCookie.Store(r.Header.Get("Cookie"))
		gotAuth.Store(r.Header.Get("Authorization"))
		gotUA.Store(r.Header.Get("User-Agent"))
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret"})
		if r.URL.Path == "/r" {
			http.Redirect(w, r, "/target", http.StatusFound)
		}
	})
	c := New(Config{UserAgent: "LohiSoftBot/1.0 (+https://lohisoft.com/bot)", Dialer: Dialer{AllowPrivate: true}})
	u := mustURL(t, srv.URL+"/r")
	u.User = url.UserPassword("user", "pw")
	resp, err := c.Get(context.Background(), u, all)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/target" {
		t.Fatalf("redirect was followed: %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := c.Get(context.Background(), mustURL(t, srv.URL+"/again"), all); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 2 {
		t.Fatalf("requests = %d, want 2", n.Load())
	}
	if gotCookie.Load() != "" || gotAuth.Load() != "" {
		t.Fatalf("sent Cookie %q / Authorization %q", gotCookie.Load(), gotAuth.Load())
	}
	if gotUA.Load() != "LohiSoftBot/1.0 (+https://lohisoft.com/bot)" {
		t.Fatalf("User-Agent %q", gotUA.Load())
	}
}

func TestBodyCapOn10MBPage(t *testing.T) {
	var written atomic.Int64
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		chunk := bytes.Repeat([]byte("<p>filler</p>\n"), 1024)
		for written.Load() < 10<<20 {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}})
	resp, err := c.Get(context.Background(), mustURL(t, srv.URL+"/big"), all)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Body) != DefaultMaxBody || !resp.Truncated {
		t.Fatalf("body %d bytes truncated=%v, want %d and truncated", len(resp.Body), resp.Truncated, DefaultMaxBody)
	}
}

func TestGzipBombCapped(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 32; i++ { // 32 MiB of zeros (16 times the cap), ~32 KiB compressed
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	if bomb.Len() > DefaultMaxBody {
		t.Fatalf("bomb not compact: %d", bomb.Len())
	}
	var gotAE atomic.Value
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		gotAE.Store(r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(bomb.Bytes())
	})
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}})
	resp, err := c.Get(context.Background(), mustURL(t, srv.URL+"/bomb"), all)
	if err != nil {
		t.Fatal(err)
	}
	if gotAE.Load() != "gzip" {
		t.Errorf("Accept-Encoding %q", gotAE.Load())
	}
	if len(resp.Body) != DefaultMaxBody || !resp.Truncated {
		t.Fatalf("decoded %d bytes truncated=%v, want cap %d", len(resp.Body), resp.Truncated, DefaultMaxBody)
	}
	// A small gzip body decodes fully.
	var small bytes.Buffer
	zw = gzip.NewWriter(&small)
	_, _ = zw.Write([]byte("<title>hi</title>"))
	_ = zw.Close()
	srv2, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(small.Bytes())
	})
	resp, err = c.Get(context.Background(), mustURL(t, srv2.URL+"/"), all)
	if err != nil || string(resp.Body) != "<title>hi</title>" || resp.Truncated {
		t.Fatalf("small gzip: %q %v %v", resp.Body, resp.Truncated, err)
	}
}

func TestSlowDripTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(200)
		for i := 0; i < 1000; i++ {
			_, _ = w.Write([]byte("<"))
			w.(http.Flusher).Flush()
			select {
			case <-time.After(50 * time.Millisecond):
			case <-release:
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	defer close(release)
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}, TotalTimeout: 400 * time.Millisecond})
	start := time.Now()
	_, err := c.Get(context.Background(), mustURL(t, srv.URL+"/drip"), all)
	if err == nil {
		t.Fatal("slow drip did not time out")
	}
	if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err = %v, want a deadline error", err)
	}
	if time.Since(start) < 400*time.Millisecond {
		t.Errorf("gave up before the timeout")
	}
}

func TestHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}, HeaderTimeout: 200 * time.Millisecond})
	if _, err := c.Get(context.Background(), mustURL(t, srv.URL+"/"), all); err == nil {
		t.Fatal("silent server did not time out")
	}
}

func TestWantBodyFalseSkipsBody(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(bytes.Repeat([]byte("x"), 1000))
	})
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}})
	resp, err := c.Get(context.Background(), mustURL(t, srv.URL+"/"), func(r *http.Response) bool {
		return strings.HasPrefix(r.Header.Get("Content-Type"), "text/html")
	})
	if err != nil || resp.Body != nil || resp.StatusCode != 200 {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

func TestSourceIP(t *testing.T) {
	var remote atomic.Value
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { remote.Store(r.RemoteAddr) })
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true, SourceIP: netip.MustParseAddr("127.0.0.2")}})
	if _, err := c.Get(context.Background(), mustURL(t, srv.URL+"/"), all); err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(remote.Load().(string))
	if host != "127.0.0.2" {
		t.Fatalf("request came from %s, want 127.0.0.2", host)
	}
}

func TestProxyEnvironmentIgnored(t *testing.T) {
	proxy, proxied := countingServer(t, nil)
	srv, direct := countingServer(t, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}})
	if _, err := c.Get(context.Background(), mustURL(t, srv.URL+"/"), all); err != nil {
		t.Fatal(err)
	}
	if proxied.Load() != 0 || direct.Load() != 1 {
		t.Fatalf("proxy %d direct %d", proxied.Load(), direct.Load())
	}
}

func TestHTTPSWithHTTP2ThroughGuardedDialer(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title>", r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}, TLS: tlsCfg})
	resp, err := c.Get(context.Background(), mustURL(t, srv.URL+"/"), all)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != "<title>HTTP/2.0</title>" {
		t.Errorf("body %q", resp.Body)
	}
	// Without the test CA the certificate is rejected: verification is on.
	c = New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}})
	if _, err := c.Get(context.Background(), mustURL(t, srv.URL+"/"), all); err == nil {
		t.Error("untrusted certificate accepted")
	}
}

// Responses that fail the same way on every attempt are ErrBrokenResponse
// with a short reason; the host's transport failing is not.
func TestBrokenResponsesAreTheirOwnKind(t *testing.T) {
	corrupt := func() []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(bytes.Repeat([]byte("<p>x</p>"), 500))
		zw.Close()
		raw := b.Bytes()
		raw[len(raw)/2] ^= 0xff
		return raw
	}()
	cases := []struct {
		name   string
		h      http.HandlerFunc
		reason string // "" means: not a broken response
	}{
		{"brotli", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			w.Write([]byte{1, 2, 3})
		}, `broken response: unsupported Content-Encoding "br"`},
		{"short body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5000")
			w.Write([]byte("<title>t</title>"))
		}, "broken response: body ended before its announced length"},
		{"huge headers", func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i < 30; i++ {
				w.Header().Set(fmt.Sprintf("X-F%d", i), strings.Repeat("f", 4000))
			}
		}, "broken response: response headers over the limit"},
		{"corrupt gzip", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(corrupt)
		}, "broken response: corrupt gzip body"},
		{"not gzip at all", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write([]byte("<title>plain</title>"))
		}, "broken response: corrupt gzip body"},
		{"hang-up before any answer", func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		}, ""},
		{"malformed status line", func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Write([]byte("HTTP/1.1 two hundred OK\r\n\r\n"))
			c.Close()
		}, "broken response: malformed response"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.h)
			defer srv.Close()
			cl := New(Config{Dialer: Dialer{AllowPrivate: true}, TotalTimeout: 5 * time.Second})
			_, err := cl.Get(context.Background(), mustURL(t, srv.URL), all)
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, ErrBrokenResponse); got != (c.reason != "") {
				t.Fatalf("broken = %v for %v", got, err)
			}
			if c.reason != "" && err.Error() != c.reason {
				t.Errorf("reason %q, want %q", err, c.reason)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		l, _ := net.Listen("tcp4", "127.0.0.1:0")
		addr := l.Addr().String()
		l.Close()
		cl := New(Config{Dialer: Dialer{AllowPrivate: true}})
		_, err := cl.Get(context.Background(), mustURL(t, "http://"+addr+"/"), all)
		if err == nil || errors.Is(err, ErrBrokenResponse) {
			t.Errorf("refused connection: %v", err)
		}
	})
}
