package httpserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Told to stop while a request is in flight, Start returns at once with the
// listener closed (the manager's stop, and the Lease's release, do not
// wait for the request); the request still gets its answer, and Wait
// returns once it has.
func TestStopDoesNotWaitForRequestsInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	inFlight, finish := make(chan struct{}), make(chan struct{})
	r := &Runnable{Name: "test", Addr: addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(inFlight)
		<-finish
		io.WriteString(w, "answered")
	})}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }()

	answer := make(chan string, 1)
	go func() {
		var resp *http.Response
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if resp, err = http.Get("http://" + addr + "/"); err == nil {
				break
			}
		}
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	<-inFlight

	cancel()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start waited for the request in flight")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the listener still takes connections after Start returned")
	}
	waited := make(chan struct{})
	go func() { r.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while a request was in flight")
	case <-time.After(100 * time.Millisecond):
	}

	close(finish)
	if got := <-answer; got != "answered" {
		t.Errorf("the request in flight got %q", got)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return once the request was answered")
	}
}

// Without Start, Wait has nothing to wait for.
func TestWaitWithoutStart(t *testing.T) {
	done := make(chan struct{})
	go func() { (&Runnable{}).Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait blocked without Start")
	}
}
