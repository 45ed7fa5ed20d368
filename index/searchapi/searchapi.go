// Package searchapi is the search index's HTTP JSON API:
//
//	GET /api/v1/search?q=...&limit=...   ranked results: url, title, description, site
//	GET /api/v1/sites                     indexed sites
//	GET /api/v1/sites/{host}/pages        pages of every site on host
//
// There is no body text anywhere to answer with, so a result only points
// the way back to the page. Bad input gets a 4xx with {"error": "..."}; while
// the backend is unreachable every query gets a 503 with Retry-After.
package searchapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lohisoft/crawl-operator/index/store"
)

// Prefix is where the API lives.
const Prefix = "/api/v1/"

// requestTimeout bounds one backend call.
const requestTimeout = 10 * time.Second

// RetryAfterSeconds is the Retry-After of a 503: about how long the manager
// takes to notice that an unreachable backend is back.
const RetryAfterSeconds = 2

// Reader is the part of a store the API reads.
type Reader interface {
	Search(ctx context.Context, query string, limit int) ([]store.Result, error)
	Sites(ctx context.Context) ([]store.SiteInfo, error)
	Pages(ctx context.Context, host string) ([]store.SitePage, error)
}

// Handler serves the API.
type Handler struct {
	Store Reader
}

// ServeHTTP routes by exact path: no path cleaning, no redirects.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec, endpoint := &statusRecorder{ResponseWriter: w}, endpointOther
	w = rec
	start := time.Now()
	defer func() { observe(endpoint, rec, start) }()
	defer func() {
		// A bug must cost one request a 500, never the process.
		if v := recover(); v != nil {
			log.FromContext(r.Context()).Error(fmt.Errorf("panic: %v", v), "index API", "path", r.URL.Path)
			writeError(w, http.StatusInternalServerError, "internal error")
		}
	}()
	var serve func(http.ResponseWriter, *http.Request) (any, error)
	switch p := r.URL.Path; {
	case p == Prefix+"search":
		serve, endpoint = h.search, endpointSearch
	case p == Prefix+"sites":
		serve, endpoint = h.sites, endpointSites
	case strings.HasPrefix(p, Prefix+"sites/") && strings.HasSuffix(p, "/pages"):
		serve, endpoint = h.pages, endpointPages
	default:
		writeError(w, http.StatusNotFound, "no such endpoint; see "+Prefix+"search, "+Prefix+"sites and "+Prefix+"sites/{host}/pages")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "only GET and HEAD are allowed")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	body, err := serve(w, r.WithContext(ctx))
	if err != nil {
		status, msg := Classify(err)
		switch status {
		case http.StatusInternalServerError:
			log.FromContext(ctx).Error(err, "index API", "path", r.URL.Path)
		case http.StatusServiceUnavailable:
			w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		}
		writeError(w, status, msg)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// Problem names what is wrong with a request, so that the HTML pages can
// say it in the visitor's language while applying the very same rules.
type Problem string

// The problems the shared rules find.
const (
	MalformedQuery Problem = "malformed-query" // the query string does not parse
	Repeated       Problem = "repeated"        // a parameter given twice
	QueryMissing   Problem = "q-missing"
	QueryTooLong   Problem = "q-too-long"
	QueryNotText   Problem = "q-not-text"
	BadLimit       Problem = "bad-limit"
	BadHost        Problem = "bad-host"
)

// BadRequest is an error in what the client sent; Msg is shown to it.
type BadRequest struct {
	Problem Problem
	Param   string // the parameter at fault, if one is
	Msg     string
}

func (e *BadRequest) Error() string { return e.Msg }

// Classify maps an error of a request to its HTTP status and the message
// the client may see.
func Classify(err error) (int, string) {
	var br *BadRequest
	switch {
	case errors.As(err, &br):
		return http.StatusBadRequest, br.Msg
	case errors.Is(err, store.ErrBadQuery):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, store.ErrUnavailable):
		return http.StatusServiceUnavailable, "the search backend is unavailable; retry later"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the search backend did not answer in time"
	default:
		// Backend errors can name tables and hosts; they go to the log.
		return http.StatusInternalServerError, "the search backend failed"
	}
}

// SearchResult is one hit.
type SearchResult struct {
	URL         string `json:"url"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Site        string `json:"site"`
}

// SearchResponse answers /search.
type SearchResponse struct {
	Query   string         `json:"query"`
	Results []SearchResult `json:"results"`
}

func (h *Handler) search(_ http.ResponseWriter, r *http.Request) (any, error) {
	params, err := Params(r)
	if err != nil {
		return nil, err
	}
	q, err := ParseQ(params)
	if err != nil {
		return nil, err
	}
	limit, err := parseLimit(params)
	if err != nil {
		return nil, err
	}
	res, err := h.Store.Search(r.Context(), q, limit)
	if err != nil {
		return nil, err
	}
	out := SearchResponse{Query: q, Results: make([]SearchResult, len(res))}
	for i, x := range res {
		// Only these fields: the API's JSON shape stays as published.
		out.Results[i] = SearchResult{URL: x.URL, Title: x.Title, Description: x.Description, Site: x.Site}
	}
	return out, nil
}

// Params parses the query string of r; a malformed one is a BadRequest.
func Params(r *http.Request) (url.Values, error) {
	params, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &BadRequest{Problem: MalformedQuery, Msg: "malformed query string"}
	}
	return params, nil
}

// Once returns the value of a parameter given at most once ("" when it is
// absent); a repeated one is a BadRequest, because which one counts would
// be a guess.
func Once(params url.Values, name string) (string, error) {
	if len(params[name]) > 1 {
		return "", &BadRequest{Problem: Repeated, Param: name, Msg: "give " + name + " once"}
	}
	return params.Get(name), nil
}

// ParseQ returns the search query q, trimmed: required, at most
// store.MaxQueryLength bytes of UTF-8 text without NUL.
func ParseQ(params url.Values) (string, error) {
	q, err := Once(params, "q")
	if err != nil {
		return "", err
	}
	q = strings.TrimSpace(q)
	switch {
	case q == "":
		return "", &BadRequest{Problem: QueryMissing, Param: "q", Msg: "q is required: what to search for"}
	case len(q) > store.MaxQueryLength:
		return "", &BadRequest{Problem: QueryTooLong, Param: "q", Msg: fmt.Sprintf("q is longer than %d bytes", store.MaxQueryLength)}
	case !utf8.ValidString(q) || strings.ContainsRune(q, 0):
		return "", &BadRequest{Problem: QueryNotText, Param: "q", Msg: "q must be UTF-8 text"}
	}
	return q, nil
}

func parseLimit(params url.Values) (int, error) {
	v, err := Once(params, "limit")
	switch {
	case err != nil:
		return 0, err
	case v == "" && !params.Has("limit"):
		return store.DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxLimit {
		return 0, &BadRequest{Problem: BadLimit, Param: "limit", Msg: fmt.Sprintf("limit must be a whole number from 1 to %d", store.MaxLimit)}
	}
	return n, nil
}

// Site is one indexed site.
type Site struct {
	Site      string     `json:"site"`
	Host      string     `json:"host"`
	Pages     int        `json:"pages"`
	CrawledAt *time.Time `json:"crawledAt,omitempty"`
}

// SitesResponse answers /sites.
type SitesResponse struct {
	Sites []Site `json:"sites"`
}

func (h *Handler) sites(_ http.ResponseWriter, r *http.Request) (any, error) {
	sites, err := h.Store.Sites(r.Context())
	if err != nil {
		return nil, err
	}
	out := SitesResponse{Sites: make([]Site, len(sites))}
	for i, s := range sites {
		out.Sites[i] = Site{Site: s.Site, Host: s.Host, Pages: s.Pages, CrawledAt: timeOrNil(s.CrawledAt)}
	}
	return out, nil
}

// Page is everything kept of one page.
type Page struct {
	URL         string   `json:"url"`
	Site        string   `json:"site"`
	StatusCode  int      `json:"statusCode,omitempty"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Headings    Headings `json:"headings"`
	// InboundAnchors are the texts of links to the page, from its own
	// site and from others.
	InboundAnchors []string   `json:"inboundAnchors"`
	FetchedAt      *time.Time `json:"fetchedAt,omitempty"`
	// Lang is the page's language tag, when it declared one.
	Lang string `json:"lang,omitempty"`
}

// Headings are a page's h1–h3 texts.
type Headings struct {
	H1 []string `json:"h1"`
	H2 []string `json:"h2"`
	H3 []string `json:"h3"`
}

// PagesResponse answers /sites/{host}/pages.
type PagesResponse struct {
	Host  string `json:"host"`
	Pages []Page `json:"pages"`
}

// hostPattern accepts what an Exclusion's domain accepts: a lower-case DNS
// name or IPv4 address.
var hostPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`)

// ParseHost returns the host a path segment names, lower-cased and without
// a trailing dot: a DNS name or IPv4 address, never a path (no "/", "..").
func ParseHost(raw string) (string, error) {
	host := strings.TrimSuffix(strings.ToLower(raw), ".")
	if len(host) > 253 || !hostPattern.MatchString(host) {
		return "", &BadRequest{Problem: BadHost, Msg: "host must be a DNS name or IPv4 address, without scheme or port"}
	}
	return host, nil
}

func (h *Handler) pages(_ http.ResponseWriter, r *http.Request) (any, error) {
	host, err := ParseHost(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, Prefix+"sites/"), "/pages"))
	if err != nil {
		return nil, err
	}
	pages, err := h.Store.Pages(r.Context(), host)
	if err != nil {
		return nil, err
	}
	out := PagesResponse{Host: host, Pages: make([]Page, len(pages))}
	for i, p := range pages {
		out.Pages[i] = Page{
			URL: p.URL, Site: p.Site, StatusCode: p.StatusCode, Title: p.Title, Description: p.Description,
			Headings:       Headings{H1: list(p.H1), H2: list(p.H2), H3: list(p.H3)},
			InboundAnchors: list(append(append([]string{}, p.Anchors...), p.ExternalAnchors...)),
			FetchedAt:      timeOrNil(p.FetchedAt),
			Lang:           p.Lang,
		}
	}
	return out, nil
}

// list renders no items as [] rather than null.
func list(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Error is the body of every error answer.
type Error struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, Error{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
