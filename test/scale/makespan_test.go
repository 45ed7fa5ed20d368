//go:build scale

// The makespan measurement of issue 12: 16 sites on 8 crawl slots, on the
// dev cluster (a real scheduler, and the node agent running real crawler
// processes against web sites on loopback), with the manager binary as it
// ships. It logs figures; it asserts only what must hold whatever the
// speed: every site crawled once, completely, never more than 8 crawls at
// once and never more than 4 on one node.
//
// Run it alone, the dev cluster being a machine singleton:
//
//	flock /tmp/devcluster.lock go test -tags scale -run TestMakespan -v -timeout 20m ./test/scale/
package scale

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/hack/devcluster/agent"
	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

const (
	makespanSites   = 16
	makespanPerNode = 4 // two egress nodes: 8 slots
	makespanSlots   = 2 * makespanPerNode
	makespanPages   = 10
)

// TestMakespan measures, for a 1 s and a 100 ms delay, how long 16 sites
// take on 8 slots against the ideal.
//
// The ideal is ceil(16/8) × T1, where T1 is the time one site of the same
// shape takes alone on the idle cluster, measured in the same run and the
// same way: from creating its CrawlTarget to seeing it Ready with the
// crawl recorded, after one warm-up crawl. It is what perfect packing gives: two waves of eight,
// each as long as one crawl, with no slot idle between them. The makespan
// is from creating the first of the 16 CrawlTargets to seeing the last
// one Ready.
func TestMakespan(t *testing.T) {
	testenv.SetLogger()
	c := startMakespanCluster(t)
	startMakespanManager(t, c)
	// One crawl first, not measured: the first one also pays for the
	// manager's and the node agent's first informers, binaries and index.
	c.crawlAll(t, "warm-up", []*makespanSite{startMakespanSite(t, "127.0.3.1")}, 100*time.Millisecond)
	for i, delay := range []time.Duration{time.Second, 100 * time.Millisecond} {
		t.Run(fmt.Sprintf("delay %s", delay), func(t *testing.T) {
			// Each round has hosts of its own: 127.0.<round+1>.x.
			round := byte(i + 1)
			alone := startMakespanSite(t, fmt.Sprintf("127.0.%d.100", round))
			t1 := c.crawlAll(t, fmt.Sprintf("alone-%d", i), []*makespanSite{alone}, delay)

			var sites []*makespanSite
			for s := 0; s < makespanSites; s++ {
				sites = append(sites, startMakespanSite(t, fmt.Sprintf("127.0.%d.%d", round, s+1)))
			}
			makespan := c.crawlAll(t, fmt.Sprintf("wave-%d", i), sites, delay)
			waves := math.Ceil(float64(makespanSites) / float64(makespanSlots))
			ideal := time.Duration(waves * float64(t1))
			t.Logf("delay %s: one site alone %.2fs; %d sites on %d slots: makespan %.2fs, ideal %.0f × %.2fs = %.2fs, ratio %.2f",
				delay, t1.Seconds(), makespanSites, makespanSlots, makespan.Seconds(), waves, t1.Seconds(), ideal.Seconds(),
				makespan.Seconds()/ideal.Seconds())
		})
	}
}

type makespanCluster struct {
	*cluster.Cluster
	kubeconfig string
}

func startMakespanCluster(t *testing.T) *makespanCluster {
	t.Helper()
	assets := testenv.MustAssets(t, repoRoot)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cluster.Start(ctx, cluster.Options{BinDir: assets, Dir: t.TempDir()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	crawler := testutil.BuildBinary(t, repoRoot, "cmd/crawler")
	mgr, err := agent.NewManager(c.Config, agent.Options{
		NodeNames: []string{cluster.DefaultEgressNodes[0].Name, cluster.DefaultEgressNodes[1].Name},
		Commands:  map[string]string{"crawler": crawler},
		LogDir:    t.TempDir(),
	})
	if err != nil {
		cancel()
		c.Stop()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		c.Stop()
	})
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(repoRoot, "config", "crd", "bases")}, ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatal(err)
	}
	return &makespanCluster{Cluster: c, kubeconfig: c.Kubeconfig}
}

// startMakespanManager runs the manager binary as it ships, outside the
// cluster, with 4 crawls per node.
func startMakespanManager(t *testing.T, c *makespanCluster) {
	t.Helper()
	binary := testutil.BuildBinary(t, repoRoot, "cmd/manager")
	results, index, probe := testutil.FreeAddr(t), testutil.FreeAddr(t), testutil.FreeAddr(t)
	logs, err := os.Create(filepath.Join(t.TempDir(), "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary,
		"--metrics-bind-address=0",
		"--health-probe-bind-address="+probe,
		"--results-bind-address="+results,
		"--results-url=http://"+results,
		"--index-bind-address="+index,
		"--storage=sqlite://"+filepath.Join(t.TempDir(), "index.db"),
		"--require-egress-fcrdns=false",
		"--crawler-network-policy=false",
		"--crawler-image=crawler",
		"--crawler-allow-private",
		"--min-crawl-delay=100ms",
		fmt.Sprintf("--max-crawls-per-node=%d", makespanPerNode),
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("manager logs:\n%s", b)
		}
	})
	waitMakespan(t, 60*time.Second, "manager probe", func() error {
		resp, err := http.Get("http://" + probe + "/readyz?exclude=index")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	})
}

// crawlAll creates one CrawlTarget per site, back to back, and returns the
// time from the first creation until every one is Ready with its crawl
// recorded. It fails if more crawls ran at once than there are slots, or
// on one node than it has slots.
func (c *makespanCluster) crawlAll(t *testing.T, prefix string, sites []*makespanSite, delay time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix}}
	if err := c.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	obs := c.observe(t, ns.Name, len(sites))
	// The targets are created at once, as a GitOps tool applies a
	// directory with parallel requests: created one after the other, the
	// sixteen creates alone took 0.3–0.6 s on this machine, and the slots
	// sat idle for want of targets the harness had not sent yet, which
	// is not what the makespan measures.
	start := time.Now()
	obs.setStart(start)
	errs := make(chan error, len(sites))
	var creates sync.WaitGroup
	for i, s := range sites {
		ct := &crawlv1.CrawlTarget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("site-%02d", i)},
			Spec:       crawlv1.CrawlTargetSpec{URL: s.url + "/", Delay: &metav1.Duration{Duration: delay}},
		}
		creates.Go(func() { errs <- c.Client.Create(ctx, ct) })
	}
	creates.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: %d CrawlTargets created in %.2fs", prefix, len(sites), time.Since(start).Seconds())
	select {
	case <-obs.done:
	case <-time.After(10 * time.Minute):
		t.Fatalf("%s: not all %d Ready after 10 minutes", prefix, len(sites))
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.violation != "" {
		t.Fatal(obs.violation)
	}
	elapsed := obs.allReady
	maxRunning := obs.maxRunning
	var targets crawlv1.CrawlTargetList
	if err := c.Client.List(ctx, &targets, client.InNamespace(ns.Name)); err != nil {
		t.Fatal(err)
	}
	for _, ct := range targets.Items {
		if ct.Status.Runs != 1 || ct.Status.PagesIndexed != makespanPages {
			t.Errorf("%s: %d runs, %d pages; want 1 run of %d pages", ct.Name, ct.Status.Runs, ct.Status.PagesIndexed, makespanPages)
		}
	}
	t.Logf("%s: %d sites Ready after %.2fs, at most %d crawls at once", prefix, len(sites), elapsed.Seconds(), maxRunning)
	logSlotGaps(t, obs.created, obs.finished)
	logPhases(t, start, sites, obs)
	if len(obs.created) == 1 {
		for name, c := range obs.created {
			t.Logf("%s: its crawler Pod lived %.2fs", prefix, (obs.finished[name] - c).Seconds())
		}
	}
	return elapsed
}

// observer follows one namespace's crawler Pods, SiteIndexes and
// CrawlTargets through watches and notes, from the start, when it first
// saw each Pod, each Pod finished, each result and each target Ready:
// exact to the event, and without the load of listing everything every
// few milliseconds on the machine being measured. It checks the slot
// limits on every Pod event.
type observer struct {
	mu                           sync.Mutex
	start                        time.Time
	want                         int
	created, bound, started      map[string]time.Duration
	finished, delivered, readyAt map[string]time.Duration
	running                      map[string]string // unfinished Pod → its egress node
	maxRunning                   int
	violation                    string
	allReady                     time.Duration
	done                         chan struct{}
}

// observe starts watching ns, before anything is created in it, until
// want CrawlTargets are Ready with a crawl recorded.
func (c *makespanCluster) observe(t *testing.T, ns string, want int) *observer {
	t.Helper()
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: cluster.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	o := &observer{
		want: want, created: map[string]time.Duration{}, bound: map[string]time.Duration{}, started: map[string]time.Duration{},
		finished:  map[string]time.Duration{},
		delivered: map[string]time.Duration{}, readyAt: map[string]time.Duration{},
		running: map[string]string{}, done: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for _, list := range []client.ObjectList{&corev1.PodList{}, &crawlv1.SiteIndexList{}, &crawlv1.CrawlTargetList{}} {
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case e, ok := <-w.ResultChan():
					if !ok {
						o.fail("a watch of the measurement ended early")
						return
					}
					o.see(e.Type, e.Object)
				}
			}
		})
	}
	return o
}

func (o *observer) setStart(at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.start = at
}

func (o *observer) fail(why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.violation == "" && o.allReady == 0 {
		o.violation = why
		close(o.done)
	}
}

func (o *observer) see(typ watch.EventType, obj runtime.Object) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.violation != "" || o.allReady > 0 {
		return
	}
	at := time.Since(o.start)
	first := func(m map[string]time.Duration, name string) {
		if _, ok := m[name]; !ok {
			m[name] = at
		}
	}
	switch x := obj.(type) {
	case *corev1.Pod:
		first(o.created, x.Name)
		if x.Spec.NodeName != "" {
			first(o.bound, x.Name)
		}
		if x.Status.StartTime != nil {
			first(o.started, x.Name)
		}
		if typ == watch.Deleted {
			delete(o.running, x.Name)
			return
		}
		if crawlpod.Finished(x) {
			first(o.finished, x.Name)
			delete(o.running, x.Name)
			return
		}
		o.running[x.Name] = x.Annotations[crawlpod.AnnotationEgressNode]
		perNode := map[string]int{}
		for _, node := range o.running {
			perNode[node]++
		}
		o.maxRunning = max(o.maxRunning, len(o.running))
		for node, n := range perNode {
			if n > makespanPerNode {
				o.violation = fmt.Sprintf("%d crawls at once on node %s, more than its %d slots", n, node, makespanPerNode)
			}
		}
		if len(o.running) > makespanSlots {
			o.violation = fmt.Sprintf("%d crawls at once, more than the %d slots", len(o.running), makespanSlots)
		}
		if o.violation != "" {
			close(o.done)
		}
	case *crawlv1.SiteIndex:
		if x.Status.Complete {
			first(o.delivered, x.Name)
		}
	case *crawlv1.CrawlTarget:
		ready := meta.FindStatusCondition(x.Status.Conditions, crawlv1.ConditionReady)
		if ready != nil && ready.Status == metav1.ConditionTrue && x.Status.Runs >= 1 {
			first(o.readyAt, x.Name)
			if len(o.readyAt) == o.want {
				o.allReady = at
				close(o.done)
			}
		}
	}
}

// logSlotGaps logs, for the Pods that started once the first wave filled
// every slot, how long after the n-th crawl ended the n-th of them was
// created.
func logSlotGaps(t *testing.T, created, finished map[string]time.Duration) {
	t.Helper()
	if len(created) <= makespanSlots {
		return
	}
	var starts, ends []time.Duration
	for _, d := range created {
		starts = append(starts, d)
	}
	for _, d := range finished {
		ends = append(ends, d)
	}
	slices.Sort(starts)
	slices.Sort(ends)
	later := starts[makespanSlots:]
	var sum, worst time.Duration
	for i, s := range later {
		gap := s - ends[i]
		sum += gap
		worst = max(worst, gap)
	}
	// How long a crawler Pod lived: on two shared cores, eight crawls at
	// once each take longer than one alone, which no queue can help.
	var life time.Duration
	for name, c := range created {
		life += finished[name] - c
	}
	t.Logf("first wave created by %.2fs; a freed slot took on average %.2fs (at most %.2fs) to get its next Pod; a crawler Pod lived %.2fs on average",
		starts[makespanSlots-1].Seconds(), (sum / time.Duration(len(later))).Seconds(), worst.Seconds(),
		(life / time.Duration(len(created))).Seconds())
}

// makespanSite is one web site of the measurement, which notes when the
// crawler's first and last requests reached it.
type makespanSite struct {
	url         string
	mu          sync.Mutex
	first, last time.Time
}

func (s *makespanSite) requests() (first, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.last
}

// startMakespanSite serves makespanPages linked pages on ip (a host of its
// own: the operator never crawls one host twice at once).
func startMakespanSite(t *testing.T, ip string) *makespanSite {
	t.Helper()
	l, err := net.Listen("tcp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	site := &makespanSite{url: "http://" + l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site.mu.Lock()
		if site.first.IsZero() {
			site.first = time.Now()
		}
		site.last = time.Now()
		site.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		n := 0
		if r.URL.Path != "/" {
			if _, err := fmt.Sscanf(r.URL.Path, "/page-%d", &n); err != nil || n <= 0 || n >= makespanPages {
				http.NotFound(w, r)
				return
			}
		}
		next := "/"
		if n+1 < makespanPages {
			next = fmt.Sprintf("/page-%d", n+1)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>Page %d of %s</title></head><body><h1>Page %d</h1><a href="%s">next</a></body></html>`,
			n, ip, n, next)
	})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		wg.Wait()
	})
	return site
}

// logPhases logs where a crawl's time went, averaged over the sites: from
// its Pod being seen to it being bound to a node, to the node reporting
// it started, to the crawler's first request; the requests themselves
// (the site's delay makes most of it); from the last request to the
// result being seen in the SiteIndex and the Pod being seen finished; and
// from there to the CrawlTarget being seen Ready. Each is as its watch
// event arrived.
func logPhases(t *testing.T, start time.Time, sites []*makespanSite, o *observer) {
	t.Helper()
	var toBound, toStarted, toFirst, crawling, toDelivered, toFinished, toReady time.Duration
	n := 0
	for i, s := range sites {
		ct := fmt.Sprintf("site-%02d", i)
		pod := crawlpod.PodName(ct, 1)
		first, last := s.requests()
		c, okc := o.created[pod]
		b, okb := o.bound[pod]
		st, oks := o.started[pod]
		f, okf := o.finished[pod]
		r, okr := o.readyAt[ct]
		d, okd := o.delivered[ct]
		if first.IsZero() || !okc || !okb || !oks || !okf || !okr || !okd {
			continue
		}
		n++
		toBound += b - c
		toStarted += st - b
		toFirst += first.Sub(start) - st
		crawling += last.Sub(first)
		toDelivered += d - last.Sub(start)
		toFinished += f - last.Sub(start)
		toReady += r - f
	}
	if n == 0 {
		t.Logf("no site with every phase seen: %d delivered, %d finished, %d Ready", len(o.delivered), len(o.finished), len(o.readyAt))
		return
	}
	avg := func(d time.Duration) float64 { return (d / time.Duration(n)).Seconds() }
	t.Logf("where a crawl's time went (average of %d): Pod seen → bound %.2fs → started %.2fs → first request %.2fs; first → last request %.2fs; last request → result seen in the SiteIndex %.2fs, → Pod seen finished %.2fs; → CrawlTarget seen Ready %.2fs",
		n, avg(toBound), avg(toStarted), avg(toFirst), avg(crawling), avg(toDelivered), avg(toFinished), avg(toReady))
}

// waitMakespan polls check every 50 ms until it returns nil, failing the
// test after timeout.
func waitMakespan(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
