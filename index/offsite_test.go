package index_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// A run's token lets its holder report progress, but the texts of links to
// other sites take effect only from the run's final, accepted result, and
// no more than store.MaxLinksIntoSite pages of any one other site get
// them.
func TestOffSiteAnchorsOnlyFromTheFinalResult(t *testing.T) {
	op := start(t, false)
	endpoint := op.results
	ns, sfx := newNS(t), suffix()
	bakery := "bakery-" + sfx + ".example"
	word := "harbour" + sfx // other tests' SiteIndexes are in this index too
	var titles []string
	for i := range 8 {
		titles = append(titles, fmt.Sprintf("%s Bakery %d", word, i))
	}
	op.site(t, ns, "bakery", bakery, titles...)
	eventually(t, "bakery indexed", op.searchIs(word, bakery))

	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spammer"}, Spec: crawlv1.CrawlTargetSpec{URL: "https://spam-" + sfx + ".example/"}}
	if err := k8s.Create(ctx, ct); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	eventually(t, "crawler Pod", func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: crawlpod.PodName(ct.Name, 1)}, pod)
	})
	testutil.SetPodPhase(t, k8s, pod, corev1.PodRunning, 0)
	token := testutil.RunToken(t, k8s, pod)

	// Progress with a link into the bakery: its page shows up at once, the
	// link text does not.
	var links []runreport.OffSiteLink
	for i := range 8 {
		links = append(links, runreport.OffSiteLink{URL: fmt.Sprintf("https://%s/%d", bakery, i), Anchors: []string{"zqxinjected" + sfx}})
	}
	progress := runreport.Report{Result: runreport.Crawl{Pages: testutil.Pages("https://spam-"+sfx+".example", 1), OffSiteLinks: links}}
	if code, body := testutil.PostReport(t, endpoint, pod, token, progress); code != http.StatusOK {
		t.Fatalf("progress: %d %s", code, body)
	}
	eventually(t, "progress page indexed", func() error {
		r, err := op.get("/api/v1/sites/spam-" + sfx + ".example/pages")
		if err != nil || r.status != http.StatusOK {
			return fmt.Errorf("pages: %v %d %s", err, r.status, r.body)
		}
		return nil
	})
	consistently(t, "progress puts no text on the bakery", 2*time.Second, op.searchIs("zqxinjected"+sfx))

	// The final result's links count, at most MaxLinksIntoSite of them.
	for i := range links {
		links[i].Anchors = []string{"zqxfinal" + sfx}
	}
	final := runreport.Report{Final: true, Result: runreport.Crawl{Pages: testutil.Pages("https://spam-"+sfx+".example", 1), OffSiteLinks: links}}
	if code, body := testutil.PostReport(t, endpoint, pod, token, final); code != http.StatusOK {
		t.Fatalf("final: %d %s", code, body)
	}
	eventually(t, "final link texts on the bakery, capped", func() error {
		urls, err := searchURLCount(op, "zqxfinal"+sfx)
		if err != nil {
			return err
		}
		if urls != store.MaxLinksIntoSite {
			return fmt.Errorf("%d bakery pages carry the spammer's text, want %d", urls, store.MaxLinksIntoSite)
		}
		return nil
	})
	if err := op.searchIs("zqxinjected" + sfx)(); err != nil {
		t.Error(err)
	}
}

// searchURLCount counts the results of q.
func searchURLCount(op *harness, q string) (int, error) {
	r, err := op.get("/api/v1/search?limit=100&q=" + q)
	if err != nil {
		return 0, err
	}
	var res struct {
		Results []struct{ URL string } `json:"results"`
	}
	if r.status != http.StatusOK {
		return 0, fmt.Errorf("search %q: %d %s", q, r.status, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), &res); err != nil {
		return 0, err
	}
	return len(res.Results), nil
}
