// Package reporter delivers crawl results to the manager's results endpoint:
// progress after the first page and then at most every ProgressEvery (best
// effort) and the final document (retried
// until the manager takes it, or the time is up). Once the crawler is told
// to stop (SIGTERM: the kubelet is ending the Pod), the final report gets
// only a few more seconds, so the crawler exits within the Pod's
// termination grace period whatever the endpoint does.
package reporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/politeness"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// Client posts runreport.Report documents.
type Client struct {
	URL   string
	Token string
	// HTTP is the client used. The results endpoint is an in-cluster
	// address, so this is deliberately not the crawler's public-only
	// client. nil means a plain client with short timeouts.
	HTTP *http.Client
	Log  *slog.Logger
	// FinalFor is how long the final report is retried (default 2
	// minutes: long enough for the manager to restart).
	FinalFor time.Duration
	// StopGrace bounds the final report once the crawl's context is
	// cancelled (default DefaultStopGrace): attempts, waits and a request
	// in flight all end by then.
	StopGrace time.Duration
	// Backoff paces the retries of the final report.
	Backoff politeness.Backoff
	// ProgressEvery is the least time between two progress posts
	// (default DefaultProgressEvery).
	ProgressEvery time.Duration

	// now is the clock; lastProgress when the last progress post started.
	now          func() time.Time
	lastProgress time.Time
}

// DefaultProgressEvery spaces progress posts. Each one the manager takes
// during a first crawl is a write of the site into the index backend and
// a SiteIndex status write into etcd, and the crawl waits for it: after
// every page, eight crawls with a 100 ms delay sent 80 a second and ran
// slower than their delay. Every 5 s, a crawl of 20 pages at the default
// 1 s delay sends 4 instead of 20, the first page still shows at once,
// and the final report carries everything.
const DefaultProgressEvery = 5 * time.Second

// DefaultStopGrace is how long the final report may still take after the
// crawler was told to stop. Crawler Pods have a termination grace period of
// 10 s; stopping the crawl and printing the result take milliseconds, so 5 s
// leaves the rest as margin before the kubelet's SIGKILL.
const DefaultStopGrace = 5 * time.Second

// New returns a Client with the defaults.
func New(url, token string, log *slog.Logger) *Client {
	return &Client{URL: url, Token: token, Log: log}
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 15 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (c *Client) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// StatusError is a non-2xx answer from the manager.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("results endpoint answered HTTP %d", e.Code) }

// retryable reports whether the manager may take the report later: network
// errors, 5xx and 429. Any other 4xx (bad token, bad document) will not
// change by retrying.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code == http.StatusTooManyRequests || se.Code >= 500
	}
	return err != nil
}

func (c *Client) post(ctx context.Context, rep runreport.Report) (http.Header, error) {
	body, err := runreport.Marshal(rep)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return resp.Header, &StatusError{Code: resp.StatusCode}
	}
	return resp.Header, nil
}

// Progress posts the crawl so far, unless the last progress post started
// less than ProgressEvery ago: then it does nothing, a later call or the
// final report carrying these pages too. Failures are logged and otherwise
// ignored: the crawl goes on, and the final report carries everything.
// Calls come from the crawl's one loop, never at once.
func (c *Client) Progress(ctx context.Context, crawl runreport.Crawl) {
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	every := c.ProgressEvery
	if every <= 0 {
		every = DefaultProgressEvery
	}
	if t := now(); c.lastProgress.IsZero() || t.Sub(c.lastProgress) >= every {
		c.lastProgress = t
	} else {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.post(ctx, runreport.Report{Final: false, Result: crawl}); err != nil {
		c.log().Warn("progress report not delivered", "err", err)
	}
}

// Final posts the final document, retrying network errors, 5xx and 429 with
// exponential back-off (honouring Retry-After) for up to FinalFor. It
// returns the last error when the report could not be delivered.
//
// ctx is the crawl's context: its cancellation means "stop" (SIGTERM), not
// "give up now". The report still goes out, a partial result being worth
// having, but from the moment ctx is done Final takes at most StopGrace
// more, a request in flight included.
func (c *Client) Final(ctx context.Context, crawl runreport.Crawl) error {
	limit := c.FinalFor
	if limit <= 0 {
		limit = 2 * time.Minute
	}
	grace := c.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	deadline := time.Now().Add(limit)
	bounded, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	var (
		mu     sync.Mutex
		stopBy time.Time // zero until ctx is done
		timer  *time.Timer
	)
	unwatch := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		stopBy = time.Now().Add(grace)
		timer = time.AfterFunc(grace, cancel)
	})
	defer func() {
		unwatch()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
	}()
	// end is when Final must have returned: the retry window, or the stop
	// grace once ctx is done.
	end := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if !stopBy.IsZero() && stopBy.Before(deadline) {
			return stopBy
		}
		return deadline
	}
	for attempt := 1; ; attempt++ {
		h, err := c.post(bounded, runreport.Report{Final: true, Result: crawl})
		if err == nil {
			c.log().Info("final report delivered", "attempts", attempt)
			return nil
		}
		if !retryable(err) {
			return fmt.Errorf("final report rejected: %w", err)
		}
		if bounded.Err() != nil {
			return fmt.Errorf("final report not delivered after %d attempts (%s): %w", attempt, stopCause(ctx), err)
		}
		wait := c.Backoff.Delay(attempt)
		if ra, ok := politeness.ParseRetryAfter(h.Get("Retry-After"), time.Now()); ok && ra > wait {
			wait = ra
		}
		if time.Now().Add(wait).After(end()) {
			return fmt.Errorf("final report not delivered after %d attempts (%s): %w", attempt, stopCause(ctx), err)
		}
		c.log().Warn("final report failed, retrying", "err", err, "attempt", attempt, "wait", wait)
		if err := politeness.Sleep(bounded, wait); err != nil {
			return fmt.Errorf("final report not delivered after %d attempts (%s)", attempt, stopCause(ctx))
		}
	}
}

func stopCause(ctx context.Context) string {
	if ctx.Err() != nil {
		return "stopping: the retries after a stop signal are bounded"
	}
	return "retry time is up"
}
