package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Stream hands the body over as it arrives, gzip undone, stops at its wire
// limit with ErrBodyTooLarge, keeps nothing, and returns read's error with
// the response.
func TestStream(t *testing.T) {
	text := strings.Repeat("0123456789", 1000) // 10,000 bytes
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, text)
	zw.Close()
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(zipped.Bytes())
		case "/br":
			w.Header().Set("Content-Encoding", "br")
			io.WriteString(w, text)
		case "/missing":
			http.NotFound(w, r)
		default:
			io.WriteString(w, text)
		}
	})
	c := New(Config{UserAgent: "T", Dialer: Dialer{AllowPrivate: true}})
	errRead := errors.New("parser gave up")
	for _, tc := range []struct {
		path    string
		max     int64
		readErr error
		status  int
		got     int   // bytes read gets
		err     error // returned with the response
		noResp  bool
	}{
		{"/plain", 1 << 20, nil, 200, len(text), nil, false},
		{"/gzip", 1 << 20, nil, 200, len(text), nil, false},
		{"/plain", 4000, nil, 200, 4000, ErrBodyTooLarge, false},
		{"/plain", 1 << 20, errRead, 200, len(text), errRead, false},
		{"/missing", 1 << 20, nil, 404, len("404 page not found\n"), nil, false},
		{"/br", 1 << 20, nil, 0, 0, ErrBrokenResponse, true},
	} {
		var n int
		var status int
		resp, err := c.Stream(context.Background(), mustURL(t, srv.URL+tc.path), tc.max, func(r *http.Response, body io.Reader) error {
			status = r.StatusCode
			b, err := io.ReadAll(body)
			n = len(b)
			if err != nil {
				return err
			}
			return tc.readErr
		})
		if (resp == nil) != tc.noResp || !errors.Is(err, tc.err) && (err != nil || tc.err != nil) {
			t.Errorf("%s max %d: response %v, error %v; want error %v", tc.path, tc.max, resp != nil, err, tc.err)
			continue
		}
		if resp == nil {
			continue
		}
		if status != tc.status || n != tc.got || resp.Body != nil || resp.StatusCode != tc.status {
			t.Errorf("%s max %d: status %d, read %d bytes, kept %d; want %d, %d, none", tc.path, tc.max, status, n, len(resp.Body), tc.status, tc.got)
		}
	}
}
