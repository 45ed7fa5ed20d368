// Command samplesite serves a small website on loopback for `make demo`:
// a handful of linked pages, a robots.txt with a disallowed section, and a
// noindex page, so a demo crawl shows what LohiSoftBot keeps and skips.
package main

import (
	"embed"
	"flag"
	"io/fs"
	"log"
	"net/http"
	"time"
)

//go:embed site
var content embed.FS

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "Address to serve the sample site on.")
	flag.Parse()
	site, _ := fs.Sub(content, "site")
	srv := &http.Server{Addr: *addr, Handler: logRequests(http.FileServerFS(site)), ReadHeaderTimeout: 5 * time.Second}
	log.Printf("sample site on http://%s/", *addr)
	log.Fatal(srv.ListenAndServe())
}

// logRequests shows which requests the bot makes and when, so the delay
// between them is visible in the demo.
func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Printf("%s %s %s (%s)", r.RemoteAddr, r.Method, r.URL.Path, r.UserAgent())
		h.ServeHTTP(w, r)
	})
}
