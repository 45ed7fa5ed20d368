package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/hack/devcluster/agent"
	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// localCluster is the dev cluster of `make dev-cluster`, run in-process:
// a real scheduler and garbage collector, and the node agent running real
// crawler processes against web sites on loopback.
type localCluster struct {
	*cluster.Cluster
	kubectl string
	manager *managerProcess
}

func startLocalCluster(t *testing.T) *localCluster {
	t.Helper()
	assets := testenv.MustAssets(t, repoRoot)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cluster.Start(ctx, cluster.Options{BinDir: assets, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	crawler := buildBinary(t, "cmd/crawler")
	mgr, err := agent.NewManager(c.Config, agent.Options{
		NodeNames: []string{"egress-1", "egress-2"},
		Commands:  map[string]string{"crawler": crawler},
		LogDir:    t.TempDir(),
	})
	if err != nil {
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
	lc := &localCluster{Cluster: c, kubectl: filepath.Join(assets, "kubectl")}
	lc.mustKubectl(t, "", "apply", "-f", filepath.Join(repoRoot, "config", "crd", "bases"))
	lc.mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
	return lc
}

func (c *localCluster) kubectlCmd(stdin string, args ...string) (string, error) {
	cmd := exec.Command(c.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *localCluster) mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := c.kubectlCmd(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// managerProcess is bin/manager running against the local cluster, with
// an SQLite index that survives restarts.
type managerProcess struct {
	binary, kubeconfig, storage string
	index, results              string
	// resultsURL is where crawler Pods reach the results endpoint
	// (default: http://results).
	resultsURL string
	// crawlerArgs replace the flags for the node agent's crawler Pods.
	crawlerArgs []string
	cmd         *exec.Cmd
	logs        *os.File
}

func startManagerProcess(t *testing.T, c *localCluster) *managerProcess {
	t.Helper()
	return startManagerFor(t, c.Kubeconfig, nil)
}

// startManagerFor runs bin/manager against kubeconfig; configure may set
// the fields that say how crawler Pods are made and reach it.
func startManagerFor(t *testing.T, kubeconfig string, configure func(*managerProcess)) *managerProcess {
	t.Helper()
	m := &managerProcess{
		binary:      buildBinary(t, "cmd/manager"),
		kubeconfig:  kubeconfig,
		storage:     "sqlite://" + filepath.Join(t.TempDir(), "index.db"),
		index:       freeAddr(t),
		results:     freeAddr(t),
		crawlerArgs: []string{"--crawler-image=crawler", "--crawler-allow-private", "--min-crawl-delay=100ms"},
	}
	if configure != nil {
		configure(m)
	}
	if m.resultsURL == "" {
		m.resultsURL = "http://" + m.results
	}
	logs, err := os.Create(filepath.Join(t.TempDir(), "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	m.logs = logs
	m.start(t)
	t.Cleanup(func() {
		m.stop(syscall.SIGTERM)
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("manager logs:\n%s", b)
		}
	})
	return m
}

func (m *managerProcess) start(t *testing.T) {
	t.Helper()
	m.cmd = exec.Command(m.binary, append([]string{
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + freeAddr(t),
		"--results-bind-address=" + m.results,
		"--results-url=" + m.resultsURL,
		"--index-bind-address=" + m.index,
		"--storage=" + m.storage,
		"--require-egress-fcrdns=false",
		// A manager outside the cluster: no NetworkPolicy can let crawler
		// Pods reach it.
		"--crawler-network-policy=false",
	}, m.crawlerArgs...)...)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+m.kubeconfig)
	m.cmd.Stdout, m.cmd.Stderr = m.logs, m.logs
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "manager index API", func() error {
		resp, err := http.Get("http://" + m.index + "/api/v1/sites")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}

func (m *managerProcess) stop(sig syscall.Signal) {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	_ = m.cmd.Wait()
	m.cmd = nil
}

// testSite serves n linked pages on its own loopback address (a host of
// its own: the operator never crawls one host twice at once). Each page
// carries body text that must never reach the index.
type testSite struct {
	url      string
	requests atomic.Int64
}

const bodyMarker = "BODY-TEXT-MUST-NOT-BE-STORED"

func startSite(t *testing.T, ip string, pages int, perRequest time.Duration) *testSite {
	t.Helper()
	l, err := net.Listen("tcp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testSite{url: "http://" + l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		s.requests.Add(1)
		time.Sleep(perRequest)
		n := 0
		if r.URL.Path != "/" {
			if _, err := fmt.Sscanf(r.URL.Path, "/page-%d", &n); err != nil || n <= 0 || n >= pages {
				http.NotFound(w, r)
				return
			}
		}
		next := "/"
		if n+1 < pages {
			next = fmt.Sprintf("/page-%d", n+1)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<html><head><title>Page %d of the %s site</title><meta name="description" content="Description %d"></head>
<body><h1>Heading %d</h1><p>%s</p><a href="%s">next page</a> <a href="/private">private</a></body></html>`,
			n, ip, n, n, bodyMarker, next)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (c *localCluster) applyTarget(t *testing.T, name, siteURL string) {
	t.Helper()
	c.mustKubectl(t, fmt.Sprintf(`apiVersion: crawl.lohisoft.com/v1beta1
kind: CrawlTarget
metadata: {name: %s, namespace: default}
spec: {url: "%s/", delay: 100ms}
`, name, siteURL), "apply", "-f", "-")
}

func (c *localCluster) target(t *testing.T, name string) *crawlv1.CrawlTarget {
	t.Helper()
	ct := &crawlv1.CrawlTarget{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, ct); err != nil {
		t.Fatal(err)
	}
	return ct
}

func (c *localCluster) siteIndex(t *testing.T, name string) *crawlv1.SiteIndex {
	t.Helper()
	si := &crawlv1.SiteIndex{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, si); err != nil {
		t.Fatal(err)
	}
	return si
}

func (c *localCluster) pods(t *testing.T, name string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.Client.List(context.Background(), &pods, client.InNamespace("default"),
		client.MatchingLabels{crawlpod.LabelTarget: name}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// indexPages asks the manager's index API for a host's pages.
func indexPages(t *testing.T, m *managerProcess, host string) []string {
	t.Helper()
	resp, err := http.Get("http://" + m.index + "/api/v1/sites/" + url.PathEscape(host) + "/pages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var body struct {
		Pages []struct {
			URL string `json:"url"`
		} `json:"pages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("decode pages of %s: %v", host, err)
	}
	var out []string
	for _, p := range body.Pages {
		out = append(out, p.URL)
	}
	return out
}

func search(t *testing.T, m *managerProcess, q string) string {
	t.Helper()
	resp, err := http.Get("http://" + m.index + "/api/v1/search?q=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, resp.StatusCode, " ")
	buf := make([]byte, 64<<10)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return b.String()
}

func readyReason(ct *crawlv1.CrawlTarget) string {
	if c := meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionReady); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

func TestLocalClusterEndToEnd(t *testing.T) {
	c := startLocalCluster(t)
	m := startManagerProcess(t, c)
	ctx := context.Background()

	t.Run("apply, crawl, SiteIndex and index hold the pages, kubectl wait works", func(t *testing.T) {
		site := startSite(t, "127.0.0.2", 6, 0)
		c.applyTarget(t, "alpha", site.url)
		c.mustKubectl(t, "", "wait", "--for=condition=Ready", "--timeout=90s", "crawltarget/alpha", "-n", "default")
		ct := c.target(t, "alpha")
		if ct.Status.PagesIndexed != 6 || ct.Status.EgressIP == "" || ct.Status.Runs != 1 {
			t.Errorf("status = %+v", ct.Status)
		}
		si := c.siteIndex(t, "alpha")
		if len(si.Status.Pages) != 6 {
			t.Fatalf("SiteIndex has %d pages, want 6", len(si.Status.Pages))
		}
		for _, p := range si.Status.Pages {
			if strings.Contains(p.URL, "private") {
				t.Errorf("disallowed page indexed: %s", p.URL)
			}
		}
		testutil.Eventually(t, 30*time.Second, "pages in the index backend", func() error {
			if got := indexPages(t, m, "127.0.0.2"); len(got) != 6 {
				return fmt.Errorf("index has %d pages", len(got))
			}
			return nil
		})
		if res := search(t, m, "Heading"); !strings.Contains(res, "127.0.0.2") {
			t.Errorf("search does not find the site: %s", res)
		}
		if res := search(t, m, bodyMarker); strings.Contains(res, "127.0.0.2") {
			t.Errorf("body text is searchable: %s", res)
		}
		pods := c.pods(t, "alpha")
		if len(pods) != 1 || pods[0].Status.Phase != corev1.PodSucceeded || pods[0].Spec.NodeName != ct.Status.EgressNodeName {
			t.Errorf("crawler Pods: %d, phase %s, node %s", len(pods), pods[0].Status.Phase, pods[0].Spec.NodeName)
		}
	})

	t.Run("manager killed mid-crawl and restarted: one crawl, nothing lost", func(t *testing.T) {
		site := startSite(t, "127.0.0.3", 8, 400*time.Millisecond)
		c.applyTarget(t, "beta", site.url)
		testutil.Eventually(t, 60*time.Second, "crawl under way", func() error {
			if site.requests.Load() < 2 {
				return fmt.Errorf("%d requests", site.requests.Load())
			}
			return nil
		})
		m.stop(syscall.SIGKILL)
		time.Sleep(2 * time.Second)
		m.start(t)
		c.mustKubectl(t, "", "wait", "--for=condition=Ready", "--timeout=120s", "crawltarget/beta", "-n", "default")
		ct := c.target(t, "beta")
		if ct.Status.Runs != 1 || len(c.pods(t, "beta")) != 1 {
			t.Errorf("runs = %d, pods = %d: want exactly one crawl", ct.Status.Runs, len(c.pods(t, "beta")))
		}
		if n := len(c.siteIndex(t, "beta").Status.Pages); n != 8 || ct.Status.PagesIndexed != 8 {
			t.Errorf("SiteIndex has %d pages, status %d, want 8", n, ct.Status.PagesIndexed)
		}
		testutil.Eventually(t, 30*time.Second, "pages in the index backend", func() error {
			if got := indexPages(t, m, "127.0.0.3"); len(got) != 8 {
				return fmt.Errorf("index has %d pages", len(got))
			}
			return nil
		})
	})

	t.Run("crawler Pod deleted mid-crawl is retried", func(t *testing.T) {
		// Slow enough (8 pages, ~5 s) that the deletion lands mid-crawl.
		site := startSite(t, "127.0.0.4", 8, 600*time.Millisecond)
		c.applyTarget(t, "gamma", site.url)
		pod := &corev1.Pod{}
		testutil.Eventually(t, 60*time.Second, "crawler running", func() error {
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: crawlpod.PodName("gamma", 1)}, pod); err != nil {
				return err
			}
			if pod.Status.Phase != corev1.PodRunning || site.requests.Load() < 1 {
				return fmt.Errorf("phase %s, %d requests", pod.Status.Phase, site.requests.Load())
			}
			return nil
		})
		c.mustKubectl(t, "", "delete", "pod", pod.Name, "-n", "default", "--wait=true")
		testutil.Eventually(t, 30*time.Second, "failure recorded", func() error {
			if ct := c.target(t, "gamma"); ct.Status.ConsecutiveFailures != 1 {
				return fmt.Errorf("failures = %d, ready = %s", ct.Status.ConsecutiveFailures, readyReason(ct))
			}
			return nil
		})
		// The retry comes after the first backoff step (1m); ask for it now,
		// the way an operator would.
		c.mustKubectl(t, "", "annotate", "crawltarget/gamma", "-n", "default", crawlv1.RequestedAtAnnotation+"=retry-now")
		c.mustKubectl(t, "", "wait", "--for=condition=Ready", "--timeout=120s", "crawltarget/gamma", "-n", "default")
		if ct := c.target(t, "gamma"); ct.Status.Runs != 2 || ct.Status.PagesIndexed != 8 {
			t.Errorf("status after retry = %+v", ct.Status)
		}
	})

	t.Run("Exclusion: running Pod gone, pages purged from SiteIndex and index", func(t *testing.T) {
		slow := startSite(t, "127.0.0.5", 10, 500*time.Millisecond)
		c.applyTarget(t, "delta", slow.url)
		pod := &corev1.Pod{}
		testutil.Eventually(t, 60*time.Second, "crawler running", func() error {
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: crawlpod.PodName("delta", 1)}, pod); err != nil {
				return err
			}
			if pod.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("phase %s", pod.Status.Phase)
			}
			return nil
		})
		// alpha (127.0.0.2) is crawled and indexed; exclude both hosts.
		for _, host := range []string{"127.0.0.2", "127.0.0.5"} {
			c.mustKubectl(t, fmt.Sprintf(`apiVersion: crawl.lohisoft.com/v1beta1
kind: Exclusion
metadata: {name: ex-%s}
spec: {domain: "%s", description: e2e}
`, strings.ReplaceAll(host, ".", "-"), host), "apply", "-f", "-")
		}
		testutil.Eventually(t, 10*time.Second, "running crawler Pod deleted", func() error {
			err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		})
		testutil.Eventually(t, 30*time.Second, "pages purged", func() error {
			for name, host := range map[string]string{"alpha": "127.0.0.2", "delta": "127.0.0.5"} {
				if n := len(c.siteIndex(t, name).Status.Pages); n != 0 {
					return fmt.Errorf("SiteIndex %s still has %d pages", name, n)
				}
				if got := indexPages(t, m, host); len(got) != 0 {
					return fmt.Errorf("index still has %d pages of %s", len(got), host)
				}
				if r := readyReason(c.target(t, name)); r != "False/Excluded" {
					return fmt.Errorf("%s Ready = %s", name, r)
				}
			}
			return nil
		})
		ex := &crawlv1.Exclusion{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: "ex-127-0-0-2"}, ex); err != nil {
			t.Fatal(err)
		}
		if ex.Status.MatchedTargets != 1 || ex.Status.PurgedPages != 6 {
			t.Errorf("Exclusion status = %+v, want 1 target and its 6 pages purged", ex.Status)
		}
	})
}
