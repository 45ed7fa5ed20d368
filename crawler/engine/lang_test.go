package engine

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
)

// A page's language comes from its <html lang>, else the server's
// Content-Language; whatever a hostile site writes there, only a valid
// tag reaches the report, lower-case.
func TestPageLanguage(t *testing.T) {
	s := testsite.New(t)
	pages := []struct {
		path, htmlLang, header, want string
	}{
		{"/", "nl-BE", "", "nl-be"},
		{"/header", "", "sk", "sk"},
		{"/both", "it", "en", "it"},
		{"/bad-attr-good-header", "english please", "BG", "bg"},
		{"/hostile", `en"><script>x</script>`, "de, en", ""},
		{"/long", strings.Repeat("a", 5000), strings.Repeat("en-", 100), ""},
		{"/none", "", "", ""},
	}
	var links strings.Builder
	for _, p := range pages {
		fmt.Fprintf(&links, `<a href="%s">x</a>`, p.path)
	}
	for _, p := range pages {
		attr := ""
		if p.htmlLang != "" {
			attr = ` lang='` + strings.ReplaceAll(p.htmlLang, "'", "") + `'`
		}
		body := `<!doctype html><html` + attr + `><title>t</title>` + links.String()
		s.Handle(p.path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if p.header != "" {
				w.Header().Set("Content-Language", p.header)
			}
			fmt.Fprint(w, body)
		})
	}
	res := crawl(t, testConfig(), s.URL)
	got := map[string]string{}
	for _, p := range res.Pages {
		got[strings.TrimPrefix(p.URL, s.URL)] = p.Lang
	}
	for _, p := range pages {
		if l, ok := got[p.path]; !ok || l != p.want {
			t.Errorf("%s: lang %q (crawled %v), want %q", p.path, l, ok, p.want)
		}
	}
}
