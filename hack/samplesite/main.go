// Command samplesite serves a small website for the demos: a handful of
// linked pages, a robots.txt with a disallowed section, and a noindex page,
// so a demo crawl shows what LohiSoftBot keeps and skips. Its log is the
// site owner's access log: who asked (source address), what, and as which
// user agent.
//
// It listens on loopback for `make demo`, or on a dev internet site's
// addresses (IPv4 and IPv6), over HTTP and, with a certificate, HTTPS, where
// --redirect-https sends every plain HTTP request, as most sites do.
package main

import (
	"embed"
	"errors"
	"flag"
	"io/fs"
	"log"
	"net/http"
	"strings"
	"time"
)

//go:embed site
var content embed.FS

func main() {
	addrs := flag.String("addr", "127.0.0.1:8090", "Addresses to serve HTTP on, comma-separated (an IPv6 one in brackets).")
	tlsAddrs := flag.String("tls-addr", "", "Addresses to serve HTTPS on, comma-separated (needs --tls-cert and --tls-key).")
	cert := flag.String("tls-cert", "", "The site's certificate (PEM).")
	key := flag.String("tls-key", "", "The certificate's key (PEM).")
	redirect := flag.Bool("redirect-https", false, "Answer every HTTP request with a redirect to the same URL over HTTPS.")
	flag.Parse()
	if *tlsAddrs != "" && (*cert == "" || *key == "") {
		log.Fatal("--tls-addr needs --tls-cert and --tls-key")
	}
	site, _ := fs.Sub(content, "site")
	pages := logRequests(http.FileServerFS(site))
	plain := pages
	if *redirect {
		plain = logRequests(http.HandlerFunc(toHTTPS))
	}
	errc := make(chan error)
	serve := func(addr string, h http.Handler, tls bool) {
		srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
		if tls {
			log.Printf("sample site on https://%s/", addr)
			errc <- srv.ListenAndServeTLS(*cert, *key)
			return
		}
		log.Printf("sample site on http://%s/", addr)
		errc <- srv.ListenAndServe()
	}
	for _, a := range list(*addrs) {
		go serve(a, plain, false)
	}
	for _, a := range list(*tlsAddrs) {
		go serve(a, pages, true)
	}
	err := <-errc
	if !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// toHTTPS redirects to the same host and path over HTTPS.
func toHTTPS(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.HasPrefix(host, "[") {
		host = h
	}
	http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusMovedPermanently)
}

// logRequests is the access log: which requests the bot makes, from which
// address and when, so the delay between them and the source address are
// visible in the demo.
func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		log.Printf("%s %s %s://%s%s (%s)", r.RemoteAddr, r.Method, scheme, r.Host, r.URL.Path, r.UserAgent())
		h.ServeHTTP(w, r)
	})
}
