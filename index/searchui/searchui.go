// Package searchui is the index's HTML face, for people with a browser:
//
//	GET /                 the search page: a form, ranked results, pages of results
//	GET /sites            the crawl dashboard: every site, its pages and crawl state
//	GET /sites/{host}     what the index keeps of each page of a host
//
// Everything is server-rendered with html/template, needs no JavaScript and
// loads nothing from elsewhere; the Content-Security-Policy forbids scripts
// outright. The pages are read-only: GET and HEAD only, and no form but the
// search box. Requests follow the JSON API's rules (searchapi), and the
// interface speaks the /bot page's five languages, chosen the same way
// (i18n).
package searchui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lohisoft/crawl-operator/index/i18n"
	"github.com/lohisoft/crawl-operator/index/searchapi"
	"github.com/lohisoft/crawl-operator/index/store"
)

// Paths served.
const (
	SearchPath = "/"
	SitesPath  = "/sites"
)

// requestTimeout bounds the backend calls of one page.
const requestTimeout = 10 * time.Second

// Handler serves the HTML pages.
type Handler struct {
	Store searchapi.Reader
	// Targets lists the CrawlTargets for the dashboard; nil shows the
	// index alone.
	Targets Targets
}

var (
	//go:embed *.html
	templateFS embed.FS
	//go:embed style.css
	css string
)

// cspHeader allows the one inline style sheet by its hash and nothing else
// to load or run: no scripts at all, no frames, forms to this origin only.
var cspHeader = fmt.Sprintf("default-src 'none'; style-src 'sha256-%s'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
	func() string { h := sha256.Sum256([]byte(css)); return base64.StdEncoding.EncodeToString(h[:]) }())

var templates = func() map[string]*template.Template {
	base := template.Must(template.ParseFS(templateFS, "layout.html"))
	out := map[string]*template.Template{}
	for _, name := range []string{"search", "sites", "host", "error"} {
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, name+".html"))
	}
	return out
}()

// view is what every page is rendered from.
type view struct {
	T         *text
	CSS       template.CSS
	Title     string
	Lang      string // the ?lang= the visitor chose, kept in links and the form
	Nav       nav
	Languages []langLink
	MaxQuery  int
	Query     string
	Error     string
	Search    *searchView
	Sites     *sitesView
	Host      *hostView
}

type nav struct{ Search, Sites string }

type langLink struct {
	i18n.Language
	URL string
}

type searchView struct {
	Results     []resultView
	Total       int
	Page, Pages int
	Capped      bool
	Limit       int
	Prev, Next  string
}

type resultView struct {
	Title, URL, Href, Description string
	Display                       string // the URL shortened for reading (DisplayURL)
}

type sitesView struct {
	Rows         []rowView
	Total        int
	Page, Pages  int
	Prev, Next   string
	StateUnknown bool
}

type rowView struct {
	SiteRow
	Href    string // the site itself, when it may be a link
	HostURL string // its pages on the dashboard
}

type hostView struct {
	Host  string
	Rows  []SiteRow
	Pages []pageView
}

type pageView struct {
	store.Page
	Href    string
	Anchors []string
}

// request is one request's language choice and parameters.
type request struct {
	*http.Request
	t      *text
	lang   string // a valid ?lang=, or ""
	params url.Values
}

// ServeHTTP routes by exact path, like the JSON API: no cleaning, no
// redirects, so /sites/../x is a bad host, not another page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := &request{Request: r}
	params, perr := searchapi.Params(r)
	req.params = params
	if l, ok := i18n.Lookup(params.Get("lang")); ok && len(params["lang"]) == 1 {
		req.lang = l.Tag
	}
	req.t = i18n.Pick(languages, i18n.Negotiate(req.lang, r.Header.Get("Accept-Language")))
	defer func() {
		// A bug must cost one request a 500, never the process.
		if v := recover(); v != nil {
			log.FromContext(r.Context()).Error(fmt.Errorf("panic: %v", v), "search pages", "path", r.URL.Path)
			h.fail(w, req, http.StatusInternalServerError, req.t.ErrInternal)
		}
	}()
	var serve func(context.Context, *request) (int, string, *view)
	switch p := r.URL.Path; {
	case p == SearchPath:
		serve = h.search
	case p == SitesPath:
		serve = h.sites
	case strings.HasPrefix(p, SitesPath+"/"):
		serve = h.host
	default:
		h.fail(w, req, http.StatusNotFound, req.t.ErrNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.fail(w, req, http.StatusMethodNotAllowed, req.t.ErrMethod)
		return
	}
	if perr != nil {
		h.fail(w, req, http.StatusBadRequest, req.t.problem(perr))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	status, name, v := serve(ctx, req)
	h.render(w, req, status, name, v)
}

// search serves the search page: the form alone without q, results with it.
func (h *Handler) search(ctx context.Context, r *request) (int, string, *view) {
	v := r.view(r.t.SearchTitle)
	v.Languages = r.langLinks(SearchPath, nil)
	if !r.params.Has("q") {
		return http.StatusOK, "search", v
	}
	q, err := searchapi.ParseQ(r.params)
	if err != nil {
		return r.failOn(v, "search", err)
	}
	v.Query = q
	v.Title = q + " – " + r.t.SearchTitle
	v.Languages = r.langLinks(SearchPath, url.Values{"q": {q}})
	page, err := parsePage(r.params)
	if err != nil {
		return r.failOn(v, "search", err)
	}
	res, err := h.Store.Search(ctx, q, store.MaxLimit)
	if err != nil {
		return r.failOn(v, "search", err)
	}
	pages := Paginate(res, PerPage, PerSite)
	if page > max(len(pages), 1) {
		v.Error = fmt.Sprintf(r.t.ErrNoSuchPage, page, len(pages))
		return http.StatusNotFound, "search", v
	}
	sv := &searchView{Total: len(res), Page: page, Pages: len(pages), Capped: len(res) == store.MaxLimit, Limit: store.MaxLimit}
	if len(pages) > 0 {
		for _, x := range pages[page-1] {
			href, _ := LinkURL(x.URL)
			display := DisplayURL(x.URL)
			title := x.Title
			if strings.TrimSpace(title) == "" {
				title = display
			}
			sv.Results = append(sv.Results, resultView{Title: title, URL: x.URL, Href: href, Description: x.Description, Display: display})
		}
	}
	sv.Prev, sv.Next = r.pager(SearchPath, url.Values{"q": {q}}, page, len(pages))
	if page > 1 {
		v.Languages = r.langLinks(SearchPath, url.Values{"q": {q}, "page": {strconv.Itoa(page)}})
	}
	v.Search = sv
	return http.StatusOK, "search", v
}

// sites serves the dashboard.
func (h *Handler) sites(ctx context.Context, r *request) (int, string, *view) {
	v := r.view(r.t.SitesTitle)
	v.Languages = r.langLinks(SitesPath, nil)
	page, err := parsePage(r.params)
	if err != nil {
		return r.failOn(v, "sites", err)
	}
	rows, stateUnknown, err := h.rows(ctx)
	if err != nil {
		return r.failOn(v, "sites", err)
	}
	from, to, ok := Window(len(rows), page, SitesPerPage)
	pages := PageCount(len(rows), SitesPerPage)
	if !ok {
		v.Error = fmt.Sprintf(r.t.ErrNoSuchPage, page, pages)
		return http.StatusNotFound, "sites", v
	}
	sv := &sitesView{Total: len(rows), Page: page, Pages: pages, StateUnknown: stateUnknown}
	for _, row := range rows[from:to] {
		rv := rowView{SiteRow: row}
		rv.Href, _ = LinkURL(row.Site)
		if row.Host != "" {
			rv.HostURL = r.link(SitesPath+"/"+url.PathEscape(row.Host), nil)
		}
		sv.Rows = append(sv.Rows, rv)
	}
	sv.Prev, sv.Next = r.pager(SitesPath, nil, page, pages)
	if page > 1 {
		v.Languages = r.langLinks(SitesPath, url.Values{"page": {strconv.Itoa(page)}})
	}
	v.Sites = sv
	return http.StatusOK, "sites", v
}

// host serves the pages of one host.
func (h *Handler) host(ctx context.Context, r *request) (int, string, *view) {
	v := r.view(r.t.SitesTitle)
	v.Languages = r.langLinks(SitesPath, nil)
	host, err := searchapi.ParseHost(strings.TrimPrefix(r.URL.Path, SitesPath+"/"))
	if err != nil {
		return r.failOn(v, "error", err)
	}
	v.Title = fmt.Sprintf(r.t.HostTitle, host)
	v.Languages = r.langLinks(SitesPath+"/"+url.PathEscape(host), nil)
	pages, err := h.Store.Pages(ctx, host)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return r.failOn(v, "error", err)
	}
	// The crawl state of the host only decorates the page: without it the
	// pages are still worth showing.
	rows, _, rerr := h.rows(ctx)
	if rerr != nil {
		rows = nil
	}
	hv := &hostView{Host: host, Rows: OnHost(rows, host)}
	if errors.Is(err, store.ErrNotFound) && len(hv.Rows) == 0 {
		v.Error = fmt.Sprintf(r.t.ErrHostUnknown, host)
		return http.StatusNotFound, "error", v
	}
	for _, p := range pages {
		href, _ := LinkURL(p.URL)
		anchors := append(append([]string{}, p.Anchors...), p.ExternalAnchors...)
		hv.Pages = append(hv.Pages, pageView{Page: p.Page, Href: href, Anchors: anchors})
	}
	v.Host = hv
	return http.StatusOK, "host", v
}

// rows joins the index's sites with the CrawlTargets; stateUnknown says the
// targets could not be listed, so the rows show the index alone.
func (h *Handler) rows(ctx context.Context) (rows []SiteRow, stateUnknown bool, err error) {
	sites, err := h.Store.Sites(ctx)
	if err != nil {
		return nil, false, err
	}
	var targets []Target
	if h.Targets != nil {
		if targets, err = h.Targets(ctx); err != nil {
			log.FromContext(ctx).Error(err, "dashboard: list CrawlTargets")
			targets, stateUnknown = nil, true
		}
	}
	return Join(sites, targets), stateUnknown, nil
}

// pagePattern is a page number as people write it: no sign, no leading
// zero, no exponent, and short enough that it cannot overflow.
var pagePattern = regexp.MustCompile(`^[1-9][0-9]{0,3}$`)

// badPage is the searchapi.Problem of a bad ?page=.
const badPage searchapi.Problem = "bad-page"

// parsePage returns ?page= (1 when absent), from 1 to MaxPage.
func parsePage(params url.Values) (int, error) {
	v, err := searchapi.Once(params, "page")
	if err != nil || (v == "" && !params.Has("page")) {
		return 1, err
	}
	n, err := strconv.Atoi(v)
	if !pagePattern.MatchString(v) || err != nil || n > MaxPage {
		return 0, &searchapi.BadRequest{Problem: badPage, Param: "page", Msg: fmt.Sprintf("page must be a whole number from 1 to %d", MaxPage)}
	}
	return n, nil
}

// failOn shows err on the page it happened on, with the status the JSON
// API would answer.
func (r *request) failOn(v *view, name string, err error) (int, string, *view) {
	status, _ := searchapi.Classify(err)
	if status == http.StatusInternalServerError {
		log.FromContext(r.Context()).Error(err, "search pages", "path", r.URL.Path)
	}
	v.Error = r.t.problem(err)
	return status, name, v
}

// problem says what is wrong, in the visitor's language. Backend errors
// are never shown: they can name tables and hosts.
func (t *text) problem(err error) string {
	var br *searchapi.BadRequest
	switch {
	case errors.As(err, &br):
		switch br.Problem {
		case searchapi.MalformedQuery:
			return t.ErrMalformed
		case searchapi.Repeated:
			return fmt.Sprintf(t.ErrRepeated, br.Param)
		case searchapi.QueryMissing:
			return t.ErrQueryMissing
		case searchapi.QueryTooLong:
			return fmt.Sprintf(t.ErrQueryTooLong, store.MaxQueryLength)
		case searchapi.QueryNotText:
			return t.ErrQueryNotText
		case searchapi.BadHost:
			return t.ErrBadHost
		case badPage:
			return fmt.Sprintf(t.ErrBadPage, MaxPage)
		}
		return t.ErrBadQuery
	case errors.Is(err, store.ErrBadQuery):
		return t.ErrBadQuery
	case errors.Is(err, store.ErrNotFound):
		return t.ErrNotFound
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return t.ErrUnavailable
	}
	return t.ErrInternal
}

func (r *request) view(title string) *view {
	return &view{
		T: r.t, CSS: template.CSS(css), Title: title, Lang: r.lang, MaxQuery: store.MaxQueryLength,
		Nav: nav{Search: r.link(SearchPath, nil), Sites: r.link(SitesPath, nil)},
	}
}

// link is path with params and the visitor's chosen language.
func (r *request) link(path string, params url.Values) string {
	q := url.Values{}
	for k, v := range params {
		q[k] = v
	}
	if r.lang != "" {
		q.Set("lang", r.lang)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// langLinks are this page in every language. Only parameters that passed
// the rules go into them: nothing a visitor typed is echoed unchecked.
func (r *request) langLinks(path string, params url.Values) []langLink {
	out := make([]langLink, len(i18n.Languages))
	for i, l := range i18n.Languages {
		q := url.Values{"lang": {l.Tag}}
		for k, v := range params {
			q[k] = v
		}
		out[i] = langLink{Language: l, URL: path + "?" + q.Encode()}
	}
	return out
}

// pager returns the links to the previous and next page ("" where none).
func (r *request) pager(path string, params url.Values, page, pages int) (prev, next string) {
	at := func(n int) string {
		q := url.Values{}
		for k, v := range params {
			q[k] = v
		}
		if n > 1 {
			q.Set("page", strconv.Itoa(n))
		}
		return r.link(path, q)
	}
	if page > 1 {
		prev = at(page - 1)
	}
	if page < pages {
		next = at(page + 1)
	}
	return prev, next
}

func (h *Handler) fail(w http.ResponseWriter, r *request, status int, msg string) {
	v := r.view(r.t.ErrorTitle)
	v.Error = msg
	v.Languages = r.langLinks(SearchPath, nil)
	h.render(w, r, status, "error", v)
}

func (h *Handler) render(w http.ResponseWriter, r *request, status int, name string, v *view) {
	var b bytes.Buffer
	if err := templates[name].ExecuteTemplate(&b, "layout", v); err != nil {
		log.FromContext(r.Context()).Error(err, "render", "page", name)
		status, b = http.StatusInternalServerError, bytes.Buffer{}
		b.WriteString("<!DOCTYPE html><title>500</title><p>internal error</p>\n")
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", cspHeader)
	hd.Set("X-Content-Type-Options", "nosniff")
	// Results lead to other sites: they learn nothing of the query.
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Language", r.t.Tag)
	hd.Set("Vary", "Accept-Language")
	if status == http.StatusServiceUnavailable {
		hd.Set("Retry-After", strconv.Itoa(searchapi.RetryAfterSeconds))
	}
	w.WriteHeader(status)
	w.Write(b.Bytes())
}
