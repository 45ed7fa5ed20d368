package internet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
)

// EchoURL is the egress echo's URL, for --egress-echo-url.
func EchoURL() string { return "http://" + EchoName + "/" }

func (w Internet) echo() hostproc.Proc { return hostproc.Proc{Dir: w.Dir, Name: "echo"} }

// EchoHandler answers every request with the caller's address as plain
// text: what LohiSoft's echo service outside the cluster tells each
// crawler Pod about the address sites see (crawler/egresscheck).
func EchoHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			http.Error(rw, "no address", http.StatusInternalServerError)
			return
		}
		// The echo's access log: which address each crawler left with.
		fmt.Fprintf(os.Stderr, "%s %s %s (%s)\n", time.Now().UTC().Format(time.RFC3339), host, r.URL.Path, r.UserAgent())
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.Header().Set("Cache-Control", "no-store")
		io.WriteString(rw, host+"\n")
	})
}

// ServeEcho runs the echo on addr until ctx ends (`devcluster internet
// echo`, which the internet starts inside its namespace).
func ServeEcho(ctx context.Context, addr string) error {
	srv := &http.Server{Addr: addr, Handler: EchoHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "echo on http://%s/\n", addr)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// startEcho runs the echo (this very program, `devcluster internet echo`)
// inside the namespace and waits until it answers.
func (w Internet) startEcho(ctx context.Context, devcluster string) error {
	if err := w.echo().Start(nil, "ip", "netns", "exec", w.Netns, devcluster, "internet", "echo", "--addr", EchoAddr.String()+":80"); err != nil {
		return err
	}
	return w.echo().WaitHealthy(ctx, "http://"+EchoAddr.String()+"/", 10*time.Second)
}
