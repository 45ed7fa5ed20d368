package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/lohisoft/crawl-operator/crawler/internal/limit"
)

// ErrBodyTooLarge ends a streamed body that goes on past its limit.
var ErrBodyTooLarge = errors.New("body over the size limit")

// Stream is Get for a body too large to hold (a sitemap may be 50 MiB):
// read gets the response and its body as it arrives, gzip undone, failing
// with ErrBodyTooLarge past max bytes on the wire. Nothing is kept in
// Response.Body. The request's time limit covers read, and what read does
// not read is never downloaded. An error from read is returned with the
// Response; an error before the response, without one.
func (c *Client) Stream(ctx context.Context, u *url.URL, max int64, read func(*http.Response, io.Reader) error) (*Response, error) {
	var readErr error
	out, err := c.get(ctx, u, Conditional{}, func(resp *http.Response, _ *Response) error {
		body, err := decode(resp, limit.Reader(resp.Body, max, fmt.Errorf("%w (%d bytes)", ErrBodyTooLarge, max)))
		if err != nil {
			return err
		}
		readErr = read(resp, body)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, readErr
}
