package syncer

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/engine"
	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testsite"
	"github.com/lohisoft/crawl-operator/index/store/storetest"
	"github.com/lohisoft/crawl-operator/internal/reportendpoint"
	"github.com/lohisoft/crawl-operator/internal/site"
)

const bodyMarker = "Qbodytextmarker7f3a9c"

// TestBodyTextIsStoredNowhere follows real pages all the way: the crawler
// crawls a site whose body text carries a marker, the manager turns the
// report into the backend's document, the syncer writes it, and then every table of
// the database, FTS5's internal ones included, is read back byte by byte.
func TestBodyTextIsStoredNowhere(t *testing.T) {
	ts := testsite.New(t)
	ts.HTML("/", `<html><head><title>Cormorant colony</title><meta name="description" content="Seabird notes"></head>
		<body><h1>Cormorants</h1><p>`+bodyMarker+` first paragraph of body text.</p>
		<a href="/second">Second page</a><p>More body: `+bodyMarker+`</p></body></html>`)
	ts.HTML("/second", `<html><head><title>Shag roost</title></head><body><h2>Shags</h2><div>`+bodyMarker+`</div></body></html>`)

	crawl, err := engine.Crawl(ctx, engine.Config{
		Delay:   5 * time.Millisecond,
		Fetch:   fetch.Config{Dialer: fetch.Dialer{AllowPrivate: true}, TotalTimeout: 5 * time.Second},
		Timeout: 30 * time.Second,
	}, ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := site.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	res := reportendpoint.Convert(runreport.Report{Final: true, Result: crawl}, owner, "run-1", crawlv1.MaxIndexedPages, time.Now(), nil)
	if len(res.Doc.Pages) != 2 {
		t.Fatalf("crawl indexed %d pages, want 2: %+v", len(res.Doc.Pages), crawl)
	}

	st := openStore(t)
	m := startManager(t, st, false)
	ns := namespace(t)
	if err := m.syncer.WriteSite(ctx, client.ObjectKey{Namespace: ns, Name: "seabirds"}, res.Doc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "crawled pages indexed", searchFor(st, "cormorant", ts.URL+"/"))
	eventually(t, "link text indexed", searchFor(st, "second", ts.URL+"/second"))

	db := storetest.DB(t, st)
	tables := storetest.TableNames(t, db, "SELECT name FROM sqlite_schema WHERE type = 'table'")
	dump := storetest.DumpTables(t, db, tables, func(table string) string { return `SELECT * FROM "` + table + `"` })
	marker := []byte(strings.ToLower(bodyMarker))
	var sawTitle bool
	for _, table := range tables {
		cols := dump[table].Columns
		for _, row := range dump[table].Rows {
			for i, v := range row {
				var b []byte
				switch v := v.(type) {
				case string:
					b = []byte(v)
				case []byte:
					b = v
				}
				b = bytes.ToLower(b)
				if bytes.Contains(b, marker) {
					t.Errorf("%s.%s holds body text: %q", table, cols[i], b)
				}
				sawTitle = sawTitle || bytes.Contains(b, []byte("cormorant colony"))
			}
		}
	}
	if !sawTitle {
		t.Errorf("the dump of tables %v never showed the page title: the check read nothing", tables)
	}
}
