// Package botpage serves what site owners use to recognise LohiSoftBot: the
// bot page (GET /bot, in five languages) and the machine-readable list of
// its source addresses (GET /bot/ips.json). Both are rendered on every
// request from the Identity the crawler Pods are configured with and from
// the egress addresses live in the cluster, so they cannot drift from what
// the bot does.
package botpage

import (
	"context"
	_ "embed"
	"encoding/json"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"html/template"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lohisoft/crawl-operator/index/i18n"
	"github.com/lohisoft/crawl-operator/index/identity"
)

// Paths served. Nothing else under /bot exists: no redirects, no variants.
const (
	PagePath = "/bot"
	IPsPath  = "/bot/ips.json"
)

// Source returns the addresses to publish now.
type Source func(ctx context.Context) ([]egress.Address, error)

// Handler serves the bot page and the IP list.
type Handler struct {
	Identity identity.Identity
	Egress   Source
	Now      func() time.Time

	// The IP list's creationTime is when this process first saw the
	// current set of addresses, so it changes when the list does, not on
	// every request.
	mu       sync.Mutex
	lastSet  string
	changeAt time.Time
}

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("bot").Parse(pageHTML))

// ServeHTTP answers GET and HEAD of exactly PagePath, PagePath+"/" and
// IPsPath; anything else is 404, never a redirect.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var serve func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case PagePath, PagePath + "/":
		serve = h.servePage
	case IPsPath:
		serve = h.serveIPs
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	serve(w, r)
}

// ipList is the format WAF tools already read for other crawlers.
type ipList struct {
	CreationTime string   `json:"creationTime"`
	Prefixes     []prefix `json:"prefixes"`
}

type prefix struct {
	IPv4Prefix string `json:"ipv4Prefix"`
}

func (h *Handler) serveIPs(w http.ResponseWriter, r *http.Request) {
	eg, err := h.egress(r.Context())
	if err != nil {
		// Better no answer than an empty list, which a WAF would apply.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]string{"error": "egress addresses unavailable"})
		return
	}
	list := ipList{Prefixes: []prefix{}}
	for _, e := range eg {
		list.Prefixes = append(list.Prefixes, prefix{IPv4Prefix: e.IP + "/32"})
	}
	list.CreationTime = h.changedAt(eg).UTC().Format(time.RFC3339)
	body, _ := json.MarshalIndent(list, "", "  ") // plain structs always marshal
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Write(append(body, '\n'))
}

// pageData is what the template is filled from.
type pageData struct {
	T          *text
	ID         identity.Identity
	Egress     []egress.Address
	Example    *egress.Address
	BareDomain string
	Languages  []i18n.Language
}

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	eg, err := h.egress(r.Context())
	if err != nil {
		http.Error(w, "egress addresses unavailable, try again shortly", http.StatusServiceUnavailable)
		return
	}
	t := i18n.Pick(languages, i18n.Negotiate(r.URL.Query().Get("lang"), r.Header.Get("Accept-Language")))
	data := pageData{T: t, ID: h.Identity, Egress: eg, BareDomain: bareDomain(h.Identity.HostnameSuffix), Languages: i18n.Languages}
	for i := range eg {
		if eg[i].Hostname != "" {
			data.Example = &eg[i]
			break
		}
	}
	var b strings.Builder
	if err := page.Execute(&b, data); err != nil {
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Language", t.Tag)
	w.Header().Set("Vary", "Accept-Language")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write([]byte(b.String()))
}

// egress returns the IPv4 addresses of the source, deduplicated and sorted
// numerically; anything else a source might hand over is dropped, because
// the bot never uses it.
func (h *Handler) egress(ctx context.Context) ([]egress.Address, error) {
	raw, err := h.Egress(ctx)
	if err != nil {
		return nil, err
	}
	byIP := map[netip.Addr]egress.Address{}
	for _, e := range raw {
		a, err := netip.ParseAddr(e.IP)
		if err != nil || !a.Is4() {
			continue
		}
		if prev, seen := byIP[a]; seen && prev.Hostname != "" {
			continue
		}
		byIP[a] = egress.Address{IP: a.String(), Hostname: e.Hostname}
	}
	addrs := make([]netip.Addr, 0, len(byIP))
	for a := range byIP {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	out := make([]egress.Address, len(addrs))
	for i, a := range addrs {
		out[i] = byIP[a]
	}
	return out, nil
}

func (h *Handler) changedAt(eg []egress.Address) time.Time {
	var key strings.Builder
	for _, e := range eg {
		key.WriteString(e.IP + " ")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changeAt.IsZero() || key.String() != h.lastSet {
		h.lastSet, h.changeAt = key.String(), h.now()
	}
	return h.changeAt
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// bareDomain is the suffix's parent domain, which owners must not match on
// (".bot.lohisoft.com" → "lohisoft.com"); "" when the suffix has no parent
// below a top-level domain.
func bareDomain(suffix string) string {
	_, parent, ok := strings.Cut(strings.TrimPrefix(suffix, "."), ".")
	if !ok || !strings.Contains(parent, ".") {
		return ""
	}
	return parent
}
