//go:build scale

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// load1 is the machine's load average over the last minute: every figure
// is reported with it, because other work shares these two cores.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// timed is a phase that ends when a condition holds, or is cut off.
type timed struct {
	took  time.Duration
	load  float64
	done  bool
	limit time.Duration
	// progress is how far it got when it was cut off.
	progress string
}

func (p timed) String() string {
	if !p.done {
		return fmt.Sprintf("did not finish within %s (%s)", p.limit, p.progress)
	}
	return fmt.Sprintf("%.1f s (load %.1f)", p.took.Seconds(), p.load)
}

// waitFor polls check every interval from start until it reports done, or
// until limit has passed since start: the benchmark reports a phase that
// did not finish rather than hanging. check describes its progress, which
// is logged every 15 s; an error from check fails the test (the manager
// died, the API server refused).
func waitFor(t *testing.T, what string, start time.Time, limit, interval time.Duration, check func() (done bool, progress string, err error)) timed {
	t.Helper()
	lastLog := time.Now()
	for {
		done, progress, err := check()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if done {
			return timed{took: time.Since(start), load: load1(), done: true, limit: limit}
		}
		if time.Since(start) > limit {
			t.Logf("%s: did not finish within %s: %s", what, limit, progress)
			return timed{load: load1(), limit: limit, progress: progress}
		}
		if time.Since(lastLog) > 15*time.Second {
			t.Logf("%s: %s after %.0f s (load %.1f)", what, progress, time.Since(start).Seconds(), load1())
			lastLog = time.Now()
		}
		time.Sleep(interval)
	}
}

// etcdSize is etcd's database: the file (bolt allocates and keeps pages;
// the API server compacts old revisions every 5 minutes but never
// defragments) and the part of it in use.
type etcdSize struct {
	total, inUse float64
	keys         float64
	load         float64
}

func etcdDB(env *testenv.Env) (etcdSize, error) {
	m, err := testutil.Scrape(env.EtcdURL() + "/metrics")
	if err != nil {
		return etcdSize{}, err
	}
	return etcdSize{
		total: m["etcd_mvcc_db_total_size_in_bytes"],
		inUse: m["etcd_mvcc_db_total_size_in_use_in_bytes"],
		keys:  m["etcd_debugging_mvcc_keys_total"],
		load:  load1(),
	}, nil
}

// compactEtcd does what a cluster does to etcd over time: the API server
// compacts old revisions every 5 minutes and an operator defragments. The
// figure after it is what the objects themselves take, without the
// history of their writes. It goes through etcd's JSON gateway (/v3/...),
// so the benchmark needs no etcd client.
func compactEtcd(env *testenv.Env) error {
	var head struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := etcdCall(env, "/v3/kv/range", `{"key":"AA=="}`, &head); err != nil {
		return err
	}
	if err := etcdCall(env, "/v3/kv/compaction", `{"revision":"`+head.Header.Revision+`","physical":true}`, nil); err != nil {
		return err
	}
	return etcdCall(env, "/v3/maintenance/defragment", `{}`, nil)
}

func etcdCall(env *testenv.Env, path, body string, out any) error {
	resp, err := http.Post(env.EtcdURL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// usage is what the API server (its watch cache holds every CrawlTarget
// and SiteIndex), etcd and the manager have used so far: resident memory
// and CPU seconds, from their own process_* metrics.
type usage struct {
	apiserverRSS, etcdRSS             float64
	apiserverCPU, etcdCPU, managerCPU float64
}

func processUsage(env *testenv.Env, m *managerProcess) (usage, error) {
	hc, err := rest.HTTPClientFor(env.Admin)
	if err != nil {
		return usage{}, err
	}
	api, err := testutil.ScrapeWith(hc, strings.TrimSuffix(env.Admin.Host, "/")+"/metrics")
	if err != nil {
		return usage{}, err
	}
	etcd, err := testutil.Scrape(env.EtcdURL() + "/metrics")
	if err != nil {
		return usage{}, err
	}
	mgr, err := m.scrape()
	if err != nil {
		return usage{}, err
	}
	const rss, cpu = "process_resident_memory_bytes", "process_cpu_seconds_total"
	return usage{apiserverRSS: api[rss], etcdRSS: etcd[rss], apiserverCPU: api[cpu], etcdCPU: etcd[cpu], managerCPU: mgr[cpu]}, nil
}

// cpuSince is the CPU seconds each process used from u0 to u.
func (u usage) cpuSince(u0 usage) string {
	return fmt.Sprintf("CPU: manager %.1f s, kube-apiserver %.1f s, etcd %.1f s",
		u.managerCPU-u0.managerCPU, u.apiserverCPU-u0.apiserverCPU, u.etcdCPU-u0.etcdCPU)
}

// requestRate is what the manager asked of the API server in a window,
// from the audit log: every request of a ServiceAccount, which only the
// manager is here.
type requestRate struct {
	perSecond float64
	// top are the most frequent kinds of request, with their rates.
	top  []string
	load float64
}

func (r requestRate) String() string {
	return fmt.Sprintf("%.1f/s (load %.1f)", r.perSecond, r.load)
}

// measureRequests counts the manager's requests received in [from, to);
// offset is where the audit log stood at from.
func measureRequests(env *testenv.Env, offset int64, from, to time.Time) (requestRate, error) {
	reqs, err := env.RequestsFrom(offset)
	if err != nil {
		return requestRate{}, err
	}
	// Per kind of request: how many, and how long the API server took
	// to answer them.
	count := map[string]int{}
	took := map[string]time.Duration{}
	total := 0
	for _, r := range reqs {
		if r.Received.Before(from) || !r.Received.Before(to) {
			continue
		}
		total++
		kind := r.Permission().String()
		count[kind]++
		took[kind] += r.Completed.Sub(r.Received)
	}
	secs := to.Sub(from).Seconds()
	kinds := make([]string, 0, len(count))
	for k := range count {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return count[kinds[i]] > count[kinds[j]] })
	out := requestRate{perSecond: float64(total) / secs, load: load1()}
	for _, k := range kinds[:min(4, len(kinds))] {
		mean := took[k] / time.Duration(count[k])
		out.top = append(out.top, fmt.Sprintf("%s %.1f/s (%.1f ms each)", k, float64(count[k])/secs, float64(mean.Microseconds())/1000))
	}
	return out, nil
}

// watcher follows the benchmark's CrawlTargets and SiteIndexes (their
// metadata only) in the harness's own cache, so that checking progress
// every second costs the API server two watches, not a list of N objects
// each time.
type watcher struct {
	cache cache.Cache
}

func startWatcher(t *testing.T, cfg *rest.Config) *watcher {
	t.Helper()
	c, err := cache.New(cfg, cache.Options{Scheme: testenv.Scheme, DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = c.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	w := &watcher{cache: c}
	if _, err := c.GetInformer(ctx, &crawlv1.CrawlTarget{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(ctx, siteIndexMeta()); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("harness cache did not sync")
	}
	return w
}

func siteIndexMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(crawlv1.GroupVersion.WithKind("SiteIndex"))
	return m
}

// progress counts what the manager has done with the targets so far.
type progress struct {
	targets, observed, indexes int
	phases                     map[crawlv1.CrawlPhase]int
}

func (p progress) String() string {
	return fmt.Sprintf("%d CrawlTargets, %d with their status observed, %d SiteIndexes, phases %v",
		p.targets, p.observed, p.indexes, p.phases)
}

// reconciled is the benchmark's "all reconciled": every CrawlTarget's
// status describes its current generation (with a Ready condition) and
// every one has its SiteIndex.
func (p progress) reconciled(n int) bool {
	return p.targets == n && p.observed == n && p.indexes == n
}

func (w *watcher) progress(ctx context.Context) (progress, error) {
	var targets crawlv1.CrawlTargetList
	if err := w.cache.List(ctx, &targets, client.UnsafeDisableDeepCopy); err != nil {
		return progress{}, err
	}
	indexes := &metav1.PartialObjectMetadataList{}
	indexes.SetGroupVersionKind(crawlv1.GroupVersion.WithKind("SiteIndexList"))
	if err := w.cache.List(ctx, indexes, client.UnsafeDisableDeepCopy); err != nil {
		return progress{}, err
	}
	p := progress{targets: len(targets.Items), indexes: len(indexes.Items), phases: map[crawlv1.CrawlPhase]int{}}
	for i := range targets.Items {
		ct := &targets.Items[i]
		p.phases[ct.Status.Phase]++
		if ct.Status.ObservedGeneration == ct.Generation && meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionReady) != nil {
			p.observed++
		}
	}
	return p, nil
}

// storedSize is the average size of the first 100 objects etcd holds
// under the API server's prefix for resource (in namespace), as the API
// server stored them (JSON for custom resources), and one of them: what a
// site costs in etcd before the database's own overhead.
func storedSize(env *testenv.Env, resource string) (avg float64, sample []byte, err error) {
	prefix := "/registry/crawl.lohisoft.com/" + resource + "/" + namespace + "/"
	end := []byte(prefix)
	end[len(end)-1]++
	var out struct {
		Kvs []struct {
			Value []byte `json:"value"`
		} `json:"kvs"`
	}
	body, _ := json.Marshal(map[string]any{"key": []byte(prefix), "range_end": end, "limit": 100})
	if err := etcdCall(env, "/v3/kv/range", string(body), &out); err != nil {
		return 0, nil, err
	}
	if len(out.Kvs) == 0 {
		return 0, nil, fmt.Errorf("etcd holds no %s under %s", resource, prefix)
	}
	total := 0
	for _, kv := range out.Kvs {
		total += len(kv.Value)
	}
	return float64(total) / float64(len(out.Kvs)), out.Kvs[len(out.Kvs)/2].Value, nil
}
