//go:build scale

// Package scale is the scale benchmark (`make scale`, or
// `SCALE_N="1000 5000" go test -tags scale -v ./test/scale`). For each N in
// $SCALE_N it starts a fresh kube-apiserver and etcd (internal/testenv),
// runs the manager binary as a process of its own under the RBAC that
// ships, registers egress Nodes with 8 crawl slots and no kubelet (so
// crawler Pods stay Pending and the other due targets wait), applies N
// CrawlTargets and measures what docs/scale.md reports: the time until all
// are reconciled, the manager's requests to the API server while the
// targets wait, its memory, etcd's size, and a restart with N SiteIndexes
// holding realistic results.
//
// Figures are reported (in the test log and in $SCALE_REPORT), never
// asserted: the tests fail on what is wrong (a target left without a
// SiteIndex, results missing from the search index, the manager dying),
// not on what is slow. A phase that takes longer than
// $SCALE_PHASE_TIMEOUT is reported as not finished and the benchmark
// goes on with the next.
package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/index/searchapi"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

var repoRoot = filepath.Join("..", "..")

const (
	// namespace holds the benchmark's CrawlTargets.
	namespace = "scale-sites"
	// Two egress nodes of four slots each: 8 crawls at once, as many as
	// the makespan benchmark's slots.
	slotsPerNode = 4
	// writers is how many requests the harness has in flight when it
	// creates targets or stores results, like a GitOps tool applying a
	// large repository.
	writers = 8
)

// The egress nodes and their published addresses, with the names the
// loopback DNS server gives them, so the FCrDNS self-check passes.
var egressNodes = []struct{ name, ip, host string }{
	{"egress-1", "79.139.58.98", "crawler1.bot.lohisoft.com"},
	{"egress-2", "79.139.58.121", "crawler2.bot.lohisoft.com"},
}

func targetName(i int) string { return fmt.Sprintf("site-%06d", i) }

// siteURL is site i's address: every target is a site and host of its own.
func siteURL(i int) string { return fmt.Sprintf("https://www.site-%06d.scale.example/", i) }

// Settings from the environment, with their defaults.
var (
	phaseLimit = envDuration("SCALE_PHASE_TIMEOUT", 15*time.Minute)
	// waitWindow is how long the manager's requests are counted while the
	// targets wait for a slot.
	waitWindow = envDuration("SCALE_WAIT_WINDOW", 60*time.Second)
	// settle lets the manager reach a steady state before a measurement:
	// a waiting target is reconciled again every 15 s.
	settle = envDuration("SCALE_SETTLE", 20*time.Second)
	// resultsCap is how many sites of a size get a crawl result
	// ($SCALE_RESULTS; default all): results for a subset of a large N,
	// such as 20,000 of 100,000, take the time of the subset only.
	resultsCap = envCount("SCALE_RESULTS", -1)
	// memoryLimit is the container memory limit the manager is told of
	// ($SCALE_MEMORY_LIMIT, a Kubernetes quantity such as 512Mi; default
	// none), in bytes through MEMORY_LIMIT as the chart's downward API
	// gives it: the manager then runs under the Go memory limit the chart
	// sets.
	memoryLimit = envQuantity("SCALE_MEMORY_LIMIT")
)

// withResults is how many of n sites get a result.
func withResults(n int) int {
	if resultsCap < 0 {
		return n
	}
	return min(n, resultsCap)
}

func envCount(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		panic(fmt.Sprintf("%s=%q: want a count", name, v))
	}
	return n
}

func envQuantity(name string) int64 {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Value() <= 0 {
		panic(fmt.Sprintf("%s=%q: want a memory quantity such as 512Mi", name, v))
	}
	return q.Value()
}

func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		panic(fmt.Sprintf("%s=%q: %v", name, v, err))
	}
	return d
}

// sizes are the Ns of $SCALE_N ("1000 5000 20000"); 1000 by default.
func sizes(t *testing.T) []int {
	t.Helper()
	v := os.Getenv("SCALE_N")
	if v == "" {
		v = "1000"
	}
	var out []int
	for _, f := range strings.Fields(v) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			t.Fatalf("SCALE_N=%q: %q is not a positive number", v, f)
		}
		out = append(out, n)
	}
	return out
}

// TestScale measures each size in turn, on a fresh control plane each, and
// reports every figure it got, those of a size that failed part-way too.
func TestScale(t *testing.T) {
	binary := testutil.BuildBinary(t, repoRoot, "cmd/manager")
	var measured []*sizeResult
	for _, n := range sizes(t) {
		r := &sizeResult{n: n}
		measured = append(measured, r)
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) { benchmarkSize(t, binary, r) })
	}
	writeReport(t, measured)
}

// sizeResult is everything measured for one N.
type sizeResult struct {
	n int
	// reconcile: from the first create until every target is reconciled
	// with its SiteIndex.
	reconcile timed
	// firstPass: the manager's requests until all were reconciled.
	firstPass requestRate
	// waiting: the manager's requests while n-8 targets wait for a slot.
	waiting requestRate
	// rss of the manager before any target, while they wait, and once
	// every SiteIndex holds a realistic result.
	baseRSS, waitingRSS, resultsRSS sample
	// heapResults is the manager's Go heap in use with the results.
	heapResults float64
	// etcd before any target, while they wait (targets, empty
	// SiteIndexes, Events), and with the results.
	etcdBase, etcdWaiting, etcdResults etcdSize
	// etcdCompacted is etcdResults after compaction and defragmentation.
	etcdCompacted etcdSize
	// stored is the average size of a CrawlTarget and a SiteIndex as
	// etcd holds them, with results.
	stored []string
	// reconcileCPU is the CPU each process used until all were
	// reconciled (or the phase was cut off).
	reconcileCPU string
	// baseUsage and withResults are the processes' memory before any
	// target and with the results.
	baseUsage, withResults usage
	// results is how many sites got a result (withResults); resultsSynced:
	// storing them (backend rows and SiteIndex status), as the results
	// endpoint does.
	results       int
	resultsSynced timed
	// restartReady: from the restart until /readyz (index included) is
	// 200; restartSynced: until the index start-up check has compared the
	// backend with every SiteIndex and no removal is queued.
	restartReady, restartSynced timed
	backendBefore, backendAfter [2]int64
}

// sample is a measured figure with the load average when it was taken.
type sample struct {
	value float64
	load  float64
}

func benchmarkSize(t *testing.T, binary string, r *sizeResult) {
	ctx := context.Background()
	n := r.n
	env, admin, m, w := startSize(t, binary)
	r.baseRSS = rssSample(t, m)
	r.etcdBase = etcdSample(t, env)
	t.Logf("baseline: manager RSS %s, etcd %s", mib(r.baseRSS.value), mib(r.etcdBase.total))

	before := usageSample(t, env, m)
	r.baseUsage = before
	offset, err := env.AuditOffset()
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	r.reconcile = applyTargets(t, admin, w, m, n)
	r.reconcileCPU = usageSample(t, env, m).cpuSince(before)
	if r.firstPass, err = measureRequests(env, offset, from, time.Now()); err != nil {
		t.Fatal(err)
	}
	t.Logf("reconciled: %s; %s; requests %s, top %v", r.reconcile, r.reconcileCPU, r.firstPass, r.firstPass.top)
	if r.reconcile.done {
		checkWaiting(t, ctx, admin, w, n)
	}

	r.waiting, r.waitingRSS = measureWaiting(t, env, m)
	r.etcdWaiting = etcdSample(t, env)
	t.Logf("waiting: %s, top %v; manager RSS %s; etcd %s (in use %s)", r.waiting, r.waiting.top,
		mib(r.waitingRSS.value), mib(r.etcdWaiting.total), mib(r.etcdWaiting.inUse))

	r.results = withResults(n)
	r.resultsSynced = storeResults(t, admin, m, n, r.results)
	t.Logf("results in the index: %s", r.resultsSynced)
	if r.resultsSynced.done {
		checkIndexed(t, m, n, r.results)
	}
	measureWithResults(t, env, m, r)

	restart(t, m, r)
	t.Logf("restart: ready %s, index start-up check done %s; backend %v -> %v bytes (db, wal)",
		r.restartReady, r.restartSynced, r.backendBefore, r.backendAfter)
	if r.restartSynced.done {
		checkIndexed(t, m, n, r.results)
	}
}

// startSize starts what one size runs on: a control plane with two egress
// Nodes, a DNS server that verifies them, the manager (ready, then left
// settle to reach its baseline) and the harness's watcher.
func startSize(t *testing.T, binary string) (*testenv.Env, client.Client, *managerProcess, *watcher) {
	t.Helper()
	env := startControlPlane(t)
	admin := adminClient(t, env)
	zone := dnstest.Zone{A: map[string][]string{}, PTR: map[string][]string{}}
	for _, node := range egressNodes {
		testutil.CreateEgressNode(t, admin, node.name, node.ip)
		zone.A[node.host] = []string{node.ip}
		zone.PTR[node.ip] = []string{node.host}
	}
	dns := dnstest.Start(t, zone)
	if err := testenv.EnsureNamespace(context.Background(), admin, namespace); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := env.ServiceAccountKubeconfig(testenv.ManagerNamespace, testenv.ManagerServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	m := newManagerProcess(t, binary, kubeconfig, dns.Addr)
	m.start(t)
	if p := waitFor(t, "manager ready", time.Now(), time.Minute, 100*time.Millisecond, readyCheck(m)); !p.done {
		t.Fatal("the manager did not become ready")
	}
	w := startWatcher(t, env.Admin)
	time.Sleep(settle)
	return env, admin, m, w
}

// measureWithResults samples memory and etcd once every SiteIndex holds
// its result (after settle, so the syncer's work is done).
func measureWithResults(t *testing.T, env *testenv.Env, m *managerProcess, r *sizeResult) {
	t.Helper()
	time.Sleep(settle)
	r.resultsRSS = rssSample(t, m)
	if mem, err := m.memory(); err == nil {
		t.Logf("with results: manager RSS %s: anonymous %s, file %s", mib(float64(mem["VmRSS"])), mib(float64(mem["RssAnon"])), mib(float64(mem["RssFile"])))
	}
	if metrics, err := m.scrape(); err == nil {
		r.heapResults = metrics["go_memstats_heap_inuse_bytes"]
	}
	profile := filepath.Join(repoRoot, "bin", fmt.Sprintf("scale-heap-%d.pprof", r.n))
	if err := m.saveHeapProfile(profile); err != nil {
		t.Errorf("manager heap profile: %v", err)
	} else {
		t.Logf("manager heap profile with results: %s", profile)
	}
	r.etcdResults = etcdSample(t, env)
	if err := compactEtcd(env); err != nil {
		t.Fatal(err)
	}
	r.etcdCompacted = etcdSample(t, env)
	for _, resource := range []string{"crawltargets", "siteindexes"} {
		avg, sample, err := storedSize(env, resource)
		if err != nil {
			t.Errorf("stored %s: %v", resource, err)
			continue
		}
		r.stored = append(r.stored, fmt.Sprintf("%s %.0f B", resource, avg))
		t.Logf("etcd holds %s of %.0f bytes on average; one of them:\n%s", resource, avg, sample)
	}
	t.Logf("etcd after compaction and defragmentation: %s (%s per site)", mib(r.etcdCompacted.total), perSite(r.etcdBase.total, r.etcdCompacted.total, r.n))
	r.withResults = usageSample(t, env, m)
	t.Logf("with results: manager RSS %s (Go heap in use %s), etcd %s (in use %s); kube-apiserver RSS %s, etcd RSS %s",
		mib(r.resultsRSS.value), mib(r.heapResults), mib(r.etcdResults.total), mib(r.etcdResults.inUse),
		mib(r.withResults.apiserverRSS), mib(r.withResults.etcdRSS))
}

// startControlPlane starts a kube-apiserver and etcd for one size, with
// the CRDs, config/rbac and the audit log of the manager's requests, and
// checks at the end that stopping it removed etcd's data.
func startControlPlane(t *testing.T) *testenv.Env {
	t.Helper()
	testenv.SetLogger()
	env, err := testenv.Start(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := env.EtcdDataDir()
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
		if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
			t.Errorf("etcd's data directory %s is still there after the control plane stopped", dataDir)
		}
	})
	return env
}

// adminClient has every permission and no client-side rate limit: the
// harness plays a GitOps tool applying N manifests as fast as the API
// server takes them.
func adminClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Admin)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readyCheck(m *managerProcess) func() (bool, string, error) {
	return func() (bool, string, error) {
		if err := m.running(); err != nil {
			return false, "", err
		}
		return m.ready(), "/readyz not 200 yet", nil
	}
}

func rssSample(t *testing.T, m *managerProcess) sample {
	t.Helper()
	b, err := m.rss()
	if err != nil {
		t.Fatal(err)
	}
	return sample{value: float64(b), load: load1()}
}

func usageSample(t *testing.T, env *testenv.Env, m *managerProcess) usage {
	t.Helper()
	u, err := processUsage(env, m)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func etcdSample(t *testing.T, env *testenv.Env) etcdSize {
	t.Helper()
	s, err := etcdDB(env)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forEach runs f for 0..n-1 on the harness's writers and returns the
// first error.
func forEach(n int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// applyTargets creates n due CrawlTargets and times how long it takes
// from the first create until every one is reconciled with its SiteIndex.
func applyTargets(t *testing.T, c client.Client, w *watcher, m *managerProcess, n int) timed {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	err := forEach(n, func(i int) error {
		ct := &crawlv1.CrawlTarget{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: targetName(i)},
			Spec:       crawlv1.CrawlTargetSpec{URL: siteURL(i)},
		}
		return c.Create(ctx, ct)
	})
	if err != nil {
		t.Fatalf("create CrawlTargets: %v", err)
	}
	t.Logf("%d CrawlTargets created in %.1f s (load %.1f)", n, time.Since(start).Seconds(), load1())
	return waitFor(t, "every CrawlTarget reconciled with its SiteIndex", start, phaseLimit, time.Second, func() (bool, string, error) {
		if err := m.running(); err != nil {
			return false, "", err
		}
		p, err := w.progress(ctx)
		return p.reconciled(n), p.String(), err
	})
}

// checkWaiting checks the state the waiting phase needs: every slot holds
// a Pending crawler Pod, and every other target waits for capacity.
func checkWaiting(t *testing.T, ctx context.Context, c client.Client, w *watcher, n int) {
	t.Helper()
	slots := slotsPerNode * len(egressNodes)
	running := min(n, slots)
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{crawlpod.LabelName: crawlpod.NameValue}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != running {
		t.Errorf("%d crawler Pods, want one per slot: %d", len(pods.Items), running)
	}
	p, err := w.progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.phases[crawlv1.PhaseRunning] != running || p.phases[crawlv1.PhaseWaiting] != n-running {
		t.Errorf("phases %v, want %d Running and %d Waiting", p.phases, running, n-running)
	}
}

// measureWaiting counts the manager's requests over waitWindow while the
// targets wait for a slot (after settle, so the window sees the steady
// state), and samples its memory at the end.
func measureWaiting(t *testing.T, env *testenv.Env, m *managerProcess) (requestRate, sample) {
	t.Helper()
	time.Sleep(settle)
	offset, err := env.AuditOffset()
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	time.Sleep(waitWindow)
	to := time.Now()
	rss := rssSample(t, m)
	// A request received just before the window closed is logged when
	// its response is complete.
	time.Sleep(2 * time.Second)
	rate, err := measureRequests(env, offset, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return rate, rss
}

// storeResults gives the first k of n sites their realistic result, the
// way the results endpoint stores one, and times it.
func storeResults(t *testing.T, c client.Client, m *managerProcess, n, k int) timed {
	t.Helper()
	ctx := context.Background()
	st, err := index.OpenStore(ctx, m.storage)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	start := time.Now()
	err = forEach(k, func(i int) error {
		err := giveResult(ctx, c, st, n, i, now)
		// When the first pass was cut off, the manager is still creating
		// SiteIndexes: a site gets its result once its SiteIndex exists.
		for apierrors.IsNotFound(err) && time.Since(start) < phaseLimit {
			time.Sleep(time.Second)
			err = giveResult(ctx, c, st, n, i, now)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("%d results stored in %.1f s (load %.1f)", k, took.Seconds(), load1())
	return timed{took: took, load: load1(), done: true}
}

// checkIndexed checks through the search API that the backend holds the k
// sites of n that got a result, each with its 20 pages, and that a few
// sites' pages carry the titles their results gave them.
func checkIndexed(t *testing.T, m *managerProcess, n, k int) {
	t.Helper()
	var sites searchapi.SitesResponse
	getJSON(t, "http://"+m.index+"/api/v1/sites", &sites)
	full := 0
	for _, s := range sites.Sites {
		if s.Pages == resultPages {
			full++
		}
	}
	if full != k {
		t.Errorf("the index has %d sites with %d pages (of %d listed), want %d", full, resultPages, len(sites.Sites), k)
	}
	if k == 0 {
		return
	}
	for _, i := range []int{0, k / 2, k - 1} {
		host := strings.TrimSuffix(strings.TrimPrefix(siteURL(i), "https://"), "/")
		var pages searchapi.PagesResponse
		getJSON(t, "http://"+m.index+"/api/v1/sites/"+host+"/pages", &pages)
		want := map[string]string{}
		for _, p := range realisticCrawl(n, i, time.Now()).Pages {
			want[p.URL] = p.Title
		}
		for _, p := range pages.Pages {
			if want[p.URL] != p.Title {
				t.Errorf("site %d page %s has title %q, its result says %q", i, p.URL, p.Title, want[p.URL])
			}
		}
		if len(pages.Pages) != len(want) {
			t.Errorf("site %d: %d pages in the index, want %d", i, len(pages.Pages), len(want))
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// restart stops the manager and starts it again on the same index file,
// with every SiteIndex unchanged, and times its readiness and the
// syncer's start-up pass over every SiteIndex.
func restart(t *testing.T, m *managerProcess, r *sizeResult) {
	t.Helper()
	db, wal := m.backendBytes()
	r.backendBefore = [2]int64{db, wal}
	m.stop(t)
	start := time.Now()
	m.start(t)
	r.restartReady = waitFor(t, "ready after a restart", start, phaseLimit, 100*time.Millisecond, readyCheck(m))
	r.restartSynced = waitFor(t, "the index start-up check after a restart", start, phaseLimit, 250*time.Millisecond, func() (bool, string, error) {
		if err := m.running(); err != nil {
			return false, "", err
		}
		metrics, err := m.scrape()
		if err != nil {
			return false, err.Error(), nil
		}
		checked := metrics["crawl_operator_index_start_checked"]
		queued := sumSeries(metrics, "workqueue_depth", `name="index-sync"`)
		return checked == 1 && queued == 0, fmt.Sprintf("start-up check done: %v, %.0f removals queued", checked == 1, queued), nil
	})
	db, wal = m.backendBytes()
	r.backendAfter = [2]int64{db, wal}
}

// sumSeries adds the samples of metric name whose labels include label.
func sumSeries(metrics map[string]float64, name, label string) float64 {
	total := 0.0
	for k, v := range metrics {
		if strings.HasPrefix(k, name+"{") && strings.Contains(k, label) {
			total += v
		}
	}
	return total
}
