// Package fetch is LohiSoftBot's HTTP client: one GET at a time, IPv4 to
// public addresses only, bounded in size and time, with nothing that could
// bypass a site's protections (no cookies, no credentials, no redirects
// followed behind the crawler's back).
package fetch

import (
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Config's zero values.
const (
	DefaultMaxBody        = 2 << 20
	DefaultConnectTimeout = 10 * time.Second
	DefaultHeaderTimeout  = 20 * time.Second
	DefaultTotalTimeout   = 30 * time.Second
)

// Config sets up a Client.
type Config struct {
	UserAgent string
	Dialer    Dialer
	// MaxBody caps the bytes read from the wire; MaxDecoded caps the bytes
	// a compressed body may expand to. Reading stops there: the rest of the
	// response is never downloaded.
	MaxBody    int64
	MaxDecoded int64
	// HeaderTimeout bounds the wait for response headers once the request
	// is sent; TotalTimeout bounds the whole request including the body
	// (a server dripping bytes cannot hold the bot).
	HeaderTimeout time.Duration
	TotalTimeout  time.Duration
	// TLS sets the roots the client trusts: TLSWithExtraCAs for sites
	// behind a private CA, a test's own server. nil means the system roots.
	TLS *tls.Config
}

// Client does single GETs.
type Client struct {
	cfg Config
	hc  *http.Client

	bufMu sync.Mutex
	buf   []byte

	// received counts the bytes read from every connection the client
	// dialled (BytesReceived).
	received atomic.Int64
}

// New builds a Client.
func New(cfg Config) *Client {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxDecoded <= 0 {
		cfg.MaxDecoded = cfg.MaxBody
	}
	if cfg.Dialer.ConnectTimeout <= 0 {
		cfg.Dialer.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.TotalTimeout <= 0 {
		cfg.TotalTimeout = DefaultTotalTimeout
	}
	d := cfg.Dialer
	c := &Client{cfg: cfg}
	tr := &http.Transport{
		// Proxy deliberately nil: an HTTP(S)_PROXY in the environment
		// would carry requests past the address checks of the dialer.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: conn, n: &c.received}, nil
		},
		TLSClientConfig:        cfg.TLS,
		TLSHandshakeTimeout:    cfg.Dialer.ConnectTimeout,
		ResponseHeaderTimeout:  cfg.HeaderTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		// We ask for gzip ourselves so the decompressed size can be capped.
		DisableCompression: true,
		MaxIdleConns:       2,
		IdleConnTimeout:    30 * time.Second,
		ForceAttemptHTTP2:  true,
	}
	c.hc = &http.Client{
		Transport: tr,
		Jar:       nil, // no cookies, ever
		// The crawler follows redirects itself, so each hop is counted
		// against the budget and checked against robots.txt and the site.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// BytesReceived is how many bytes the client has read from the network so
// far: status lines, headers and bodies (as they came, compressed), and on
// https the TLS records, handshakes included. It is what a site sent the
// bot, so a conditional recrawl shows its saving here.
func (c *Client) BytesReceived() int64 { return c.received.Load() }

// countingConn adds every byte read to n.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Conditional holds the validators of a conditional GET (RFC 9110 §13.1):
// an empty field is not sent. The caller passes only validators the site
// sent before and the bot kept (runreport.ETag, runreport.LastModified), so
// none is invented and none can break out of its header.
type Conditional struct {
	IfNoneMatch     string
	IfModifiedSince string
}

// IsZero reports whether the request would be unconditional.
func (c Conditional) IsZero() bool { return c == Conditional{} }

// Response is what the crawler keeps of one HTTP response.
type Response struct {
	URL        *url.URL
	StatusCode int
	Header     http.Header
	// Body holds at most MaxDecoded bytes, and only when the caller's
	// wantBody accepted the response.
	Body []byte
	// Truncated is set when reading stopped at a cap.
	Truncated bool
	// Started is when the request was sent.
	Started time.Time
}

// Get sends one GET. wantBody decides, from status and headers, whether the
// body is read at all (a non-HTML page or an error page is not downloaded).
func (c *Client) Get(ctx context.Context, u *url.URL, wantBody func(*http.Response) bool) (*Response, error) {
	return c.GetIf(ctx, u, Conditional{}, wantBody)
}

// GetIf is Get with the validators of cond: a site that still has the same
// page may answer 304 Not Modified, without a body.
func (c *Client) GetIf(ctx context.Context, u *url.URL, cond Conditional, wantBody func(*http.Response) bool) (*Response, error) {
	return c.get(ctx, u, cond, func(resp *http.Response, out *Response) (err error) {
		if wantBody != nil && !wantBody(resp) {
			return nil
		}
		out.Body, out.Truncated, err = c.readBody(resp)
		return err
	})
}

// get sends one GET, with the validators of cond, and lets body read the
// response (within the request's time limit) before it is closed.
func (c *Client) get(ctx context.Context, u *url.URL, cond Conditional, body func(*http.Response, *Response) error) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.TotalTimeout)
	defer cancel()
	clean := *u
	clean.User = nil // credentials are never sent
	clean.Fragment = ""
	var conn net.Conn
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i.Conn }})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clean.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.5,*/*;q=0.1")
	req.Header.Set("Accept-Encoding", "gzip")
	if cond.IfNoneMatch != "" {
		req.Header.Set("If-None-Match", cond.IfNoneMatch)
	}
	if cond.IfModifiedSince != "" {
		req.Header.Set("If-Modified-Since", cond.IfModifiedSince)
	}
	started := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, classify(unwrapURLError(err))
	}
	defer resp.Body.Close()
	if announcesForbiddenBody(resp) && conn != nil {
		// Whatever the server sends as this answer's body would be read
		// as the answer to the next request on the connection: close it.
		conn.Close()
	}
	out := &Response{URL: &clean, StatusCode: resp.StatusCode, Header: resp.Header, Started: started}
	if err := body(resp, out); err != nil {
		return nil, classify(fmt.Errorf("reading body: %w", err))
	}
	return out, nil
}

// decode undoes the response's Content-Encoding (gzip is the only one the
// client asks for) on the bytes read from wire.
func decode(resp *http.Response, wire io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))) {
	case "", "identity":
		return wire, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return nil, &BrokenResponseError{What: "corrupt gzip body", Err: err}
		}
		return zr, nil
	}
	return nil, &BrokenResponseError{What: fmt.Sprintf("unsupported Content-Encoding %q", resp.Header.Get("Content-Encoding"))}
}

func (c *Client) readBody(resp *http.Response) ([]byte, bool, error) {
	wire := &io.LimitedReader{R: resp.Body, N: c.cfg.MaxBody + 1}
	r, err := decode(resp, wire)
	if err != nil {
		return nil, false, err
	}
	body, err := c.readAll(io.LimitReader(r, c.cfg.MaxDecoded+1))
	truncated := int64(len(body)) > c.cfg.MaxDecoded || wire.N <= 0
	if int64(len(body)) > c.cfg.MaxDecoded {
		body = body[:c.cfg.MaxDecoded]
	}
	if err != nil {
		// A body cut at the wire cap ends mid-stream; what was read is
		// still usable.
		if truncated || errors.Is(err, io.ErrUnexpectedEOF) && wire.N <= 0 {
			return body, true, nil
		}
		return nil, false, err
	}
	return body, truncated, nil
}

// readAll reads r into the client's read buffer, which grows to the body
// cap once and is reused, and copies the body out at its exact size: a 2 MiB
// page costs one 2 MiB allocation rather than a series of doublings.
func (c *Client) readAll(r io.Reader) ([]byte, error) {
	var buf []byte
	if c.bufMu.TryLock() {
		defer c.bufMu.Unlock()
		buf = c.buf[:0]
		defer func() { c.buf = buf[:0] }()
	}
	var err error
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		var n int
		n, err = r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	body := make([]byte, len(buf))
	copy(body, buf)
	return body, err
}

// announcesForbiddenBody reports whether an HTTP/1 response whose status
// has no body (204, 304) came with a chunked Transfer-Encoding or a
// Content-Length above zero. net/http reads no body for it, and would take
// the bytes that follow, if the server sends them, for the next response on
// that connection. RFC 9110 lets a 304 carry the Content-Length the 200
// would have had, so this costs an honest server one reconnection.
func announcesForbiddenBody(r *http.Response) bool {
	if r.ProtoMajor != 1 || r.StatusCode != http.StatusNoContent && r.StatusCode != http.StatusNotModified {
		return false
	}
	n, err := strconv.ParseInt(r.Header.Get("Content-Length"), 10, 64)
	return len(r.TransferEncoding) > 0 || err == nil && n > 0
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("GET %s: %w", ue.URL, ue.Err)
	}
	return err
}

// ErrBrokenResponse marks a response that arrived but cannot be used: an
// unsupported Content-Encoding, a corrupt gzip stream, a body shorter than
// its Content-Length or a broken chunked encoding, headers over the limit or
// malformed. Asking again gets the same answer, so the crawler skips the
// page and does not hold it against the host (unlike a refused connection,
// a timeout or a failed TLS handshake, which are the host's transport
// failing).
var ErrBrokenResponse = errors.New("broken response")

// BrokenResponseError says briefly what was wrong with a response; it is
// ErrBrokenResponse to errors.Is, and its text is the skip reason.
type BrokenResponseError struct {
	What string
	Err  error
}

func (e *BrokenResponseError) Error() string        { return "broken response: " + e.What }
func (e *BrokenResponseError) Unwrap() error        { return e.Err }
func (e *BrokenResponseError) Is(target error) bool { return target == ErrBrokenResponse }

// classify turns the errors of a response that arrived but is unusable into
// a BrokenResponseError. net/http reports most of them only as text: an
// oversized or malformed header, malformed chunking, an early EOF inside a
// body whose length was announced.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var broken *BrokenResponseError
	if errors.As(err, &broken) {
		return broken
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	msg := err.Error()
	var corrupt flate.CorruptInputError
	switch {
	case errors.As(err, &corrupt) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader):
		return &BrokenResponseError{What: "corrupt gzip body", Err: err}
	case strings.Contains(msg, "server response headers exceeded"):
		return &BrokenResponseError{What: "response headers over the limit", Err: err}
	case strings.Contains(msg, "malformed"):
		return &BrokenResponseError{What: "malformed response", Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF) && strings.HasPrefix(msg, "reading body"):
		return &BrokenResponseError{What: "body ended before its announced length", Err: err}
	}
	return err
}

// IsPermanent reports whether err comes from the address rules (IPv6, no A
// record, non-public address): retrying cannot help.
func IsPermanent(err error) bool {
	return errors.Is(err, ErrIPv6) || errors.Is(err, ErrNoIPv4) || errors.Is(err, ErrNonPublic)
}
