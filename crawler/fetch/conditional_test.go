package fetch

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The validators go out exactly as given, and only the ones given: an
// unconditional Get sends neither header.
func TestGetIfSendsOnlyTheGivenValidators(t *testing.T) {
	var got []http.Header
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		w.WriteHeader(http.StatusNotModified)
	})
	c := New(Config{UserAgent: "TestBot/1.0", Dialer: Dialer{AllowPrivate: true}})
	u := mustURL(t, srv.URL+"/")
	for _, cond := range []Conditional{
		{},
		{IfNoneMatch: `W/"v1"`},
		{IfModifiedSince: "Tue, 15 Nov 1994 08:12:31 GMT"},
		{IfNoneMatch: `"v2"`, IfModifiedSince: "Tue, 15 Nov 1994 08:12:31 GMT"},
	} {
		resp, err := c.GetIf(t.Context(), u, cond, all)
		if err != nil || resp.StatusCode != http.StatusNotModified || len(resp.Body) != 0 {
			t.Fatalf("GetIf(%+v) = %+v, %v", cond, resp, err)
		}
	}
	want := [][2]string{{"", ""}, {`W/"v1"`, ""}, {"", "Tue, 15 Nov 1994 08:12:31 GMT"}, {`"v2"`, "Tue, 15 Nov 1994 08:12:31 GMT"}}
	for i, h := range got {
		if h.Get("If-None-Match") != want[i][0] || h.Get("If-Modified-Since") != want[i][1] || len(h.Values("If-None-Match")) > 1 {
			t.Errorf("request %d: If-None-Match %q, If-Modified-Since %q; want %q", i, h.Values("If-None-Match"), h.Get("If-Modified-Since"), want[i])
		}
	}
}

// BytesReceived counts what came over the wire, headers included, and
// gzip bodies as compressed: a server that counts what it wrote agrees.
func TestBytesReceivedCountsTheWire(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	body := strings.Repeat("x", 5000)
	resp := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\nETag: \"abc\"\r\n\r\n%s", len(body), body)
	notModified := "HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\n\r\n"
	sent := make(chan int, 2)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		total := 0
		for _, answer := range []string{resp, notModified} {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			n, _ := io.WriteString(conn, answer)
			total += n
			sent <- total
		}
	}()
	c := New(Config{UserAgent: "TestBot/1.0", Dialer: Dialer{AllowPrivate: true}})
	u := mustURL(t, "http://"+ln.Addr().String()+"/")
	if _, err := c.Get(t.Context(), u, all); err != nil {
		t.Fatal(err)
	}
	if want := <-sent; c.BytesReceived() != int64(want) {
		t.Errorf("after a 200: BytesReceived = %d, the server wrote %d", c.BytesReceived(), want)
	}
	r, err := c.GetIf(t.Context(), u, Conditional{IfNoneMatch: `"abc"`}, all)
	if err != nil || r.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: %+v, %v", r, err)
	}
	if want := <-sent; c.BytesReceived() != int64(want) {
		t.Errorf("after a 304: BytesReceived = %d, the server wrote %d", c.BytesReceived(), want)
	}
}
