package botpage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/i18n"
	"github.com/lohisoft/crawl-operator/index/identity"
)

var live = []egress.Address{
	{IP: "79.139.58.121", Hostname: "crawler2.bot.lohisoft.com"},
	{IP: "79.139.58.98", Hostname: "crawler1.bot.lohisoft.com"},
}

func handler(id identity.Identity, eg []egress.Address) *Handler {
	return &Handler{Identity: id, Egress: func(context.Context) ([]egress.Address, error) { return eg, nil }}
}

func get(t *testing.T, h http.Handler, target string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// facts are the strings a page for id and eg must state, as they appear
// in the HTML.
func facts(tx *text, id identity.Identity, eg []egress.Address) []string {
	out := []string{
		id.Operator, id.Contact, id.UserAgent, id.HostnameSuffix, id.IPsURL,
		"User-agent: " + id.ProductToken + "\nDisallow: /",
		fmt.Sprintf(tx.BudgetText, id.MaxPages), fmt.Sprintf(tx.BudgetValue, id.MaxPages),
		fmt.Sprintf(tx.FCrDNSSteps[0], id.HostnameSuffix),
		fmt.Sprintf(tx.BlockByEmail, id.Contact),
	}
	out = append(out, id.OtherUserAgents...)
	for i := range out {
		out[i] = esc(out[i])
	}
	for _, e := range eg {
		out = append(out, "<code>"+esc(e.IP)+"</code>", "<code>"+esc(e.Hostname)+"</code>")
	}
	return out
}

// esc escapes s as the page's template does.
func esc(s string) string {
	var b strings.Builder
	if err := template.Must(template.New("").Parse("{{.}}")).Execute(&b, s); err != nil {
		panic(err)
	}
	return b.String()
}

func TestEveryLanguageStatesTheLiveFacts(t *testing.T) {
	id := identity.Default()
	h := handler(id, live)
	for _, tx := range languages {
		t.Run(tx.Tag, func(t *testing.T) {
			r := get(t, h, "/bot?lang="+tx.Tag)
			page := body(t, r)
			if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" || r.Header.Get("Content-Language") != tx.Tag {
				t.Fatalf("status %d, headers %v", r.StatusCode, r.Header)
			}
			if !strings.Contains(page, `<html lang="`+tx.Tag+`">`) {
				t.Errorf("page is not marked as %s", tx.Tag)
			}
			for _, f := range facts(tx, id, live) {
				if !strings.Contains(page, f) {
					t.Errorf("page in %s does not state %q", tx.Tag, f)
				}
			}
			// The example uses a verified pair, in DNS order.
			if !strings.Contains(page, "$ dig +short -x 79.139.58.98\ncrawler1.bot.lohisoft.com.") {
				t.Errorf("page in %s has no dig example of the first address", tx.Tag)
			}
			if !strings.Contains(page, esc(fmt.Sprintf(tx.FCrDNSBare, ".bot.lohisoft.com", "lohisoft.com"))) {
				t.Errorf("page in %s does not warn against matching the bare domain", tx.Tag)
			}
			for _, other := range languages {
				if !strings.Contains(page, `href="?lang=`+other.Tag+`"`) {
					t.Errorf("page in %s does not link to %s", tx.Tag, other.Tag)
				}
			}
		})
	}
}

// Every fact on the page comes from configuration and the cluster: with a
// different identity and different addresses, nothing of the default ones
// is left on any page.
func TestChangingTheConfigurationChangesThePage(t *testing.T) {
	id := identity.Identity{
		Operator: "Example Search Ltd", Contact: "crawler@example.org",
		UserAgent: "ExampleBot/2.0 (+https://example.org/bot)", OtherUserAgents: []string{"ExampleBot/1.9"},
		ProductToken: "ExampleBot", HostnameSuffix: ".crawl.example.net", MaxPages: 7,
		IPsURL: "https://example.org/bot/ips.json",
	}
	if err := id.Validate(); err != nil {
		t.Fatal(err)
	}
	eg := []egress.Address{{IP: "192.0.2.7", Hostname: "c7.crawl.example.net"}, {IP: "192.0.2.8"}}
	h := handler(id, eg)
	def := identity.Default()
	for _, tx := range languages {
		page := body(t, get(t, h, "/bot?lang="+tx.Tag))
		for _, f := range facts(tx, id, eg[:1]) {
			if !strings.Contains(page, f) {
				t.Errorf("%s: page does not state %q", tx.Tag, f)
			}
		}
		if !strings.Contains(page, "<code>192.0.2.8</code></th><td>"+esc(tx.NotVerified)) {
			t.Errorf("%s: an address without verified hostname is not marked so", tx.Tag)
		}
		for _, old := range []string{"LohiSoft", "lohisoft", "79.139.", def.UserAgent, esc(fmt.Sprintf(tx.BudgetText, def.MaxPages))} {
			if strings.Contains(page, old) {
				t.Errorf("%s: page still states %q, which is not in the configuration", tx.Tag, old)
			}
		}
	}
	// Without other user-agents the transition note goes.
	id.OtherUserAgents = nil
	if page := body(t, get(t, handler(id, eg), "/bot")); strings.Contains(page, english.UATransition) {
		t.Error("page mentions a user-agent transition with only one user-agent")
	}
}

func TestNoAddresses(t *testing.T) {
	h := handler(identity.Default(), nil)
	for _, tx := range languages {
		page := body(t, get(t, h, "/bot?lang="+tx.Tag))
		if !strings.Contains(page, esc(tx.NoIPs)) || strings.Contains(page, "dig +short") {
			t.Errorf("%s: page without addresses does not say so", tx.Tag)
		}
	}
}

// The language choice itself is i18n's; the page follows it and says so.
func TestLanguageChoice(t *testing.T) {
	if got := body(t, get(t, handler(identity.Default(), live), "/bot?lang=xx", "Accept-Language", "it-IT")); !strings.Contains(got, `<html lang="it">`) {
		t.Error("?lang=xx with Accept-Language it-IT is not in Italian")
	}
	r := get(t, handler(identity.Default(), live), "/bot", "Accept-Language", "sk-SK")
	if r.Header.Get("Content-Language") != "sk" || r.Header.Get("Vary") != "Accept-Language" {
		t.Errorf("headers %v", r.Header)
	}
}

// Every language has every text, with the same facts put in the same
// places as English, and is not English.
func TestTextsAreComplete(t *testing.T) {
	for _, err := range i18n.CheckTranslations(languages) {
		t.Error(err)
	}
	for _, tx := range languages[1:] {
		if tx.Intro == english.Intro || tx.NotStored == english.NotStored {
			t.Errorf("%s: text is not translated", tx.Tag)
		}
	}
}

func TestIPsJSON(t *testing.T) {
	now := time.Date(2026, 8, 23, 10, 0, 0, 0, time.UTC)
	eg := append([]egress.Address{}, live...)
	h := handler(identity.Default(), nil)
	h.Egress = func(context.Context) ([]egress.Address, error) { return eg, nil }
	h.Now = func() time.Time { return now }

	read := func() (map[string]json.RawMessage, ipList) {
		t.Helper()
		r := get(t, h, IPsPath)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, Content-Type %q", r.StatusCode, r.Header.Get("Content-Type"))
		}
		b := body(t, r)
		var raw map[string]json.RawMessage
		var list ipList
		if err := json.Unmarshal([]byte(b), &raw); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, b)
		}
		dec := json.NewDecoder(strings.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&list); err != nil {
			t.Fatalf("unexpected shape: %v\n%s", err, b)
		}
		return raw, list
	}

	raw, list := read()
	if len(raw) != 2 || raw["creationTime"] == nil || raw["prefixes"] == nil {
		t.Errorf("top-level keys = %v, want exactly creationTime and prefixes", raw)
	}
	// Sorted as numbers: .98 before .121.
	want := []prefix{{"79.139.58.98/32"}, {"79.139.58.121/32"}}
	if !reflect.DeepEqual(list.Prefixes, want) {
		t.Errorf("prefixes = %v, want %v", list.Prefixes, want)
	}
	if ct, err := time.Parse(time.RFC3339, list.CreationTime); err != nil || !ct.Equal(now) {
		t.Errorf("creationTime = %q (%v), want %s", list.CreationTime, err, now.Format(time.RFC3339))
	}

	// Same set later: same creationTime. New set: new creationTime.
	now = now.Add(time.Hour)
	if _, l := read(); l.CreationTime != list.CreationTime {
		t.Errorf("creationTime moved without a change: %s → %s", list.CreationTime, l.CreationTime)
	}
	eg = append(eg, egress.Address{IP: "192.0.2.1"}, egress.Address{IP: "2001:db8::1"}, egress.Address{IP: "79.139.58.98"}, egress.Address{IP: "bogus"})
	_, l := read()
	if l.CreationTime != now.Format(time.RFC3339) {
		t.Errorf("creationTime = %s after the set changed, want %s", l.CreationTime, now.Format(time.RFC3339))
	}
	want = []prefix{{"79.139.58.98/32"}, {"79.139.58.121/32"}, {"192.0.2.1/32"}}
	if !reflect.DeepEqual(l.Prefixes, want) {
		t.Errorf("prefixes = %v, want %v (IPv4 only, each once)", l.Prefixes, want)
	}

	eg = nil
	if b := body(t, get(t, h, IPsPath)); !strings.Contains(b, `"prefixes": []`) {
		t.Errorf("empty list rendered as %s", b)
	}
}

func TestRoutesMethodsAndErrors(t *testing.T) {
	h := handler(identity.Default(), live)
	for _, tc := range []struct {
		method, target string
		want           int
	}{
		{"GET", "/bot", 200},
		{"GET", "/bot/", 200},
		{"GET", "/bot/ips.json", 200},
		{"GET", "/bot/ips.json?x=1", 200},
		{"HEAD", "/bot/ips.json", 200},
		{"GET", "/bot/ips.json/", 404},
		{"GET", "/bot//ips.json", 404},
		{"GET", "/bot/./ips.json", 404},
		{"GET", "/BOT/ips.json", 404},
		{"GET", "/bot/ips", 404},
		{"GET", "/bot/other", 404},
		{"POST", "/bot/ips.json", 405},
		{"DELETE", "/bot", 405},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
		if rec.Code != tc.want || rec.Header().Get("Location") != "" {
			t.Errorf("%s %s = %d (Location %q), want %d", tc.method, tc.target, rec.Code, rec.Header().Get("Location"), tc.want)
		}
	}
	broken := &Handler{Identity: identity.Default(), Egress: func(context.Context) ([]egress.Address, error) { return nil, errors.New("cache down") }}
	for _, p := range []string{"/bot", IPsPath} {
		if r := get(t, broken, p); r.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s with the source failing = %d, want 503", p, r.StatusCode)
		}
	}
}

func TestBareDomain(t *testing.T) {
	for in, want := range map[string]string{
		".bot.lohisoft.com":    "lohisoft.com",
		".crawl.example.co.uk": "example.co.uk",
		".example.com":         "",
	} {
		if got := bareDomain(in); got != want {
			t.Errorf("bareDomain(%q) = %q, want %q", in, got, want)
		}
	}
}
