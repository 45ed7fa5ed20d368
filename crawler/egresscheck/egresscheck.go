// Package egresscheck verifies, before a crawl sends anything to a site,
// the source address sites will see: it asks an echo service outside the
// cluster (LohiSoft's, --egress-echo-url) which address the request came
// from, over the same dialer the crawl uses, and compares the answer with
// the address the bot publishes for this egress node (--expect-egress-ip).
//
// The bot page promises that requests come only from the published
// addresses. A Node's ExternalIP is what the operator publishes, but a NAT
// gateway, a second address on the node or a CNI that masquerades
// differently decides what sites see. A periodic probe would leave a window
// between a change and its next run; a check by every crawler before its
// first request to a site leaves none.
//
// The echo service answers a GET with status 200 and the caller's address,
// as plain text ("79.139.58.98", white space around it allowed) or as JSON
// ({"ip":"79.139.58.98"}), in at most MaxAnswer bytes. Anything else
// (another status, a redirect, a bigger or unreadable body, an address that
// is not IPv4) leaves the address unverified.
package egresscheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
)

const (
	// MaxAnswer bounds the echo's answer: an address with some JSON
	// around it fits many times over, and nothing longer is read.
	MaxAnswer = 256
	// DefaultTimeout bounds the whole exchange with the echo, connection
	// included.
	DefaultTimeout = 10 * time.Second
)

// Check is one verification.
type Check struct {
	// URL is the echo service, http or https; its host is resolved like
	// any site's.
	URL *url.URL
	// Expected is the address the bot publishes for this node.
	Expected netip.Addr
	// Fetch is the crawl's own client configuration: the echo is asked
	// through the same dialer (source address, IPv4 only, the address
	// rules) and TLS settings. Its size and time limits are replaced by
	// the check's own.
	Fetch fetch.Config
	// Timeout is DefaultTimeout when zero.
	Timeout time.Duration
}

// Error says why the address was not verified. Observed is the address the
// echo reported when it answered with a different one, and zero when the
// echo could not be asked or its answer could not be read.
type Error struct {
	Expected netip.Addr
	Observed netip.Addr
	Err      error
}

func (e *Error) Error() string {
	if e.Observed.IsValid() {
		return fmt.Sprintf("egress address mismatch: sites would see %s, not the published %s", e.Observed, e.Expected)
	}
	return fmt.Sprintf("egress address not verified (expected %s): %v", e.Expected, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrMismatch is what a mismatch's Error wraps.
var ErrMismatch = errors.New("egress address mismatch")

// Run asks the echo once and returns the verified address, or an *Error.
func (c Check) Run(ctx context.Context) (netip.Addr, error) {
	observed, err := c.observe(ctx)
	if err != nil {
		return netip.Addr{}, &Error{Expected: c.Expected, Err: err}
	}
	if observed != c.Expected.Unmap() {
		return netip.Addr{}, &Error{Expected: c.Expected, Observed: observed, Err: ErrMismatch}
	}
	return observed, nil
}

func (c Check) observe(ctx context.Context) (netip.Addr, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	fc := c.Fetch
	fc.MaxBody, fc.MaxDecoded = MaxAnswer, MaxAnswer
	fc.TotalTimeout, fc.HeaderTimeout = timeout, timeout
	if fc.Dialer.ConnectTimeout <= 0 || fc.Dialer.ConnectTimeout > timeout {
		fc.Dialer.ConnectTimeout = timeout
	}
	resp, err := fetch.New(fc).Get(ctx, c.URL, func(r *http.Response) bool { return r.StatusCode == http.StatusOK })
	if err != nil {
		return netip.Addr{}, fmt.Errorf("asking %s: %w", c.URL.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		// A redirect too: the address the echo saw is only worth
		// something from the echo itself.
		return netip.Addr{}, fmt.Errorf("%s answered HTTP %d, want 200 with the caller's address", c.URL.Redacted(), resp.StatusCode)
	}
	if resp.Truncated {
		return netip.Addr{}, fmt.Errorf("%s answered more than %d bytes", c.URL.Redacted(), MaxAnswer)
	}
	return ParseAnswer(resp.Body)
}

// ParseAnswer reads the echo's answer: an IPv4 address as plain text or as
// the "ip" member of a JSON object. An IPv4-mapped IPv6 form (a dual-stack
// socket's view of an IPv4 peer) counts as the IPv4 address; any other
// IPv6 address is refused: the bot connects over IPv4 only, so an echo
// reporting one is not describing this request.
func ParseAnswer(body []byte) (netip.Addr, error) {
	text := bytes.TrimSpace(body)
	if bytes.HasPrefix(text, []byte("{")) {
		var v struct {
			IP *string `json:"ip"`
		}
		if err := json.Unmarshal(text, &v); err != nil || v.IP == nil {
			return netip.Addr{}, fmt.Errorf("echo answer is not {\"ip\":\"ADDRESS\"}: %q", cut(text))
		}
		text = []byte(*v.IP)
	}
	a, err := netip.ParseAddr(string(text))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("echo answer is not an IP address: %q", cut(text))
	}
	if a = a.Unmap(); !a.Is4() {
		return netip.Addr{}, fmt.Errorf("echo answered the IPv6 address %s; the bot connects over IPv4 only", a)
	}
	return a, nil
}

// cut keeps an unusable answer short enough for a log line.
func cut(b []byte) []byte {
	const n = 64
	if len(b) > n {
		return b[:n]
	}
	return b
}
