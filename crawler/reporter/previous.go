package reporter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// PreviousTimeout bounds the one GET of the previous run's validators: the
// crawl waits for it before its first request.
const PreviousTimeout = 10 * time.Second

// Previous asks the results endpoint, with the run's token, for the pages
// the index holds for this run's target and their validators (a GET of the
// report URL, answered with runreport.Previous). It tries once: when it
// fails the crawl is simply unconditional, which the caller logs.
func (c *Client) Previous(ctx context.Context) (runreport.Previous, error) {
	ctx, cancel := context.WithTimeout(ctx, PreviousTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return runreport.Previous{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return runreport.Previous{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return runreport.Previous{}, &StatusError{Code: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, runreport.MaxPreviousBytes+1))
	if err != nil {
		return runreport.Previous{}, err
	}
	if len(body) > runreport.MaxPreviousBytes {
		return runreport.Previous{}, fmt.Errorf("previous run: answer larger than %d bytes", runreport.MaxPreviousBytes)
	}
	var prev runreport.Previous
	if err := json.Unmarshal(body, &prev); err != nil {
		return runreport.Previous{}, fmt.Errorf("previous run: %w", err)
	}
	return prev, nil
}
