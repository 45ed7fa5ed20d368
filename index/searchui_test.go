package index_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

// The HTML pages on the manager's index port: the search page finds what
// the syncer indexed, and the dashboard shows each site's CrawlTarget state
// as the manager's cache has it, including a site whose target is gone.
func TestSearchPageAndDashboard(t *testing.T) {
	op := start(t, false)
	ns, sfx := newNS(t), suffix()
	host := "pages-" + sfx + ".example"
	word := "kelp" + sfx
	op.site(t, ns, "pages", host, word+" Bakery", "Visit "+word)
	eventually(t, "indexed", op.searchIs(word, host))

	r := op.mustGet(t, "/?q="+word)
	if r.status != http.StatusOK || r.header.Get("Content-Security-Policy") == "" ||
		!strings.Contains(r.body, `<a href="https://`+host+`/0">`) || !strings.Contains(r.body, `<a href="https://`+host+`/1">`) {
		t.Errorf("search page: %d %v\n%s", r.status, r.header, r.body)
	}
	for _, bad := range []string{"/?q=", "/?q=x&page=0", "/sites/..%2F..%2Fetc"} {
		if r := op.mustGet(t, bad); r.status != http.StatusBadRequest || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s = %d %s, want a 400 HTML page", bad, r.status, r.header.Get("Content-Type"))
		}
	}
	if r := op.mustGet(t, "/no-such-page"); r.status != http.StatusNotFound || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /no-such-page = %d %s, want a 404 HTML page", r.status, r.header.Get("Content-Type"))
	}

	// The dashboard row shows what the target's status says.
	ct := &crawlv1.CrawlTarget{}
	eventually(t, "dashboard shows the target's state", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pages"}, ct); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionReady)
		if ready == nil || ct.Status.Phase == "" {
			return fmt.Errorf("target has no status yet")
		}
		want := fmt.Sprintf("<code>%s/pages</code>: %s (%s)", ns, ct.Status.Phase, ready.Reason)
		row, err := dashboardRow(op, host)
		if err != nil {
			return err
		}
		if !strings.Contains(row, want) || !strings.Contains(row, `href="/sites/`+host+`"`) || !strings.Contains(row, "<td>2</td>") {
			return fmt.Errorf("row lacks %q, the pages link or the page count:\n%s", want, row)
		}
		return nil
	})
	r = op.mustGet(t, "/sites/"+host)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Visit "+word) || !strings.Contains(r.body, `<a href="https://`+host+`/1">`) {
		t.Errorf("/sites/%s: %d\n%s", host, r.status, r.body)
	}

	// The target goes, its SiteIndex stays (envtest runs no garbage
	// collector): the site is still indexed and says it has no target.
	if err := k8s.Delete(ctx, ct); err != nil {
		t.Fatal(err)
	}
	eventually(t, "dashboard shows the site without a target", func() error {
		row, err := dashboardRow(op, host)
		if err != nil {
			return err
		}
		if strings.Contains(row, "<code>") || !strings.Contains(row, "no CrawlTarget the manager watches") {
			return fmt.Errorf("row of a site without target:\n%s", row)
		}
		return nil
	})
	if err := k8s.Delete(ctx, &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages"}}); err != nil {
		t.Fatal(err)
	}
}

// dashboardRow returns the dashboard's row of host, or an error when it
// has none. Other tests' sites are in the index too, on other pages maybe.
func dashboardRow(op *harness, host string) (string, error) {
	for page := 1; ; page++ {
		r, err := op.get(fmt.Sprintf("/sites?page=%d", page))
		if err != nil || r.status != http.StatusOK {
			return "", fmt.Errorf("/sites?page=%d: %v %d", page, err, r.status)
		}
		for _, row := range strings.Split(r.body, `<tr class="site-row">`)[1:] {
			row, _, _ = strings.Cut(row, "</tr>")
			if strings.Contains(row, `href="https://`+host+`:443"`) {
				return row, nil
			}
		}
		if !strings.Contains(r.body, `rel="next"`) {
			return "", fmt.Errorf("no row for %s", host)
		}
	}
}
