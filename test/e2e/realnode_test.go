package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// The real node of `make dev-cluster REAL_NODE=1` (`devcluster nodes`,
// hack/devcluster/node): a kubelet and containerd that run crawler Pods as
// containers of the project's image. The test drives it through
// `devcluster up` like a person does, with its own state directory,
// node names, bridges and image tag.
const (
	rnNamePrefix   = "realnode-e2e"
	rnBridgePrefix = "crawle2e"
	rnNode         = rnNamePrefix + "-1"
	rnBridge       = rnBridgePrefix + "1"
	rnImage        = "ghcr.io/lohisoft/crawl-operator:e2e"
	rnExternalIP   = "79.139.58.98"
	rnNamespace    = "crawl-restricted"
	// rnDeadline is --crawl-deadline: the crawler stops itself at half of
	// it (crawlpod), the kubelet at all of it.
	rnDeadline = 16 * time.Second
)

// rnDir is the real node's state directory. It is the same for every run,
// so a run killed before its cleanup is cleaned up by the next one.
func rnDir() string { return filepath.Join(os.TempDir(), "crawl-operator-e2e-realnode") }

type realNodeCluster struct {
	dc         devCluster
	kubeconfig string
	kubectl    string
	client     client.Client
	gw         string
	sock       string
	before     machineState
	downDone   bool
	// lastRequest is when a crawl was last requested (world_test.go).
	lastRequest time.Time
}

// requireRealNode skips the test, or fails it with CI=true, when this
// machine cannot run a real node; `devcluster nodes preflight` says why in
// one line.
func requireRealNode(t *testing.T, assets, devcluster string) {
	t.Helper()
	out, err := exec.Command(devcluster, "nodes", "preflight", "--bin-dir", assets).CombinedOutput()
	if err == nil {
		return
	}
	reason := strings.TrimSpace(string(out))
	if reason == "" {
		reason = err.Error()
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the real-node end-to-end test cannot run on this machine: %s", reason)
	}
	t.Skipf("real node not available: %s (with CI=true this is a failure)", reason)
}

// startRealNodeCluster starts the cluster and installs the CRDs.
func startRealNodeCluster(t *testing.T) *realNodeCluster {
	t.Helper()
	c := startRealNode(t)
	c.mustKubectl(t, "", "apply", "-f", filepath.Join(repoRoot, "config", "crd", "bases"))
	c.mustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
	return c
}

// startRealNode starts the dev cluster with a real node, its add-ons
// (kube-proxy, CoreDNS, local-path-provisioner) included, and nothing of
// the operator.
func startRealNode(t *testing.T) *realNodeCluster {
	t.Helper()
	return startRealNodes(t, 1)
}

// startRealNodes is startRealNode with n nodes (rnNamePrefix-1, -2, ...).
func startRealNodes(t *testing.T, n int) *realNodeCluster {
	t.Helper()
	testenv.SetLogger()
	assets := testenv.MustAssets(t, repoRoot)
	devcluster := buildBinary(t, "hack/devcluster")
	requireRealNode(t, assets, devcluster)
	testutil.LockMachine(t)
	dir := t.TempDir()
	c := &realNodeCluster{
		kubeconfig: filepath.Join(dir, "kubeconfig"),
		kubectl:    filepath.Join(assets, "kubectl"),
	}
	c.dc = newDevCluster(dir, assets, devcluster)
	c.dc.common = append(c.dc.common[:len(c.dc.common)-1], rnDir()) // --nodes-dir: shared by every run
	upArgs := []string{
		"--real-nodes", strconv.Itoa(n), "--crawler", buildBinary(t, "cmd/crawler"),
		"--name-prefix", rnNamePrefix, "--bridge-prefix", rnBridgePrefix, "--image", rnImage,
	}
	// What the machine looks like before: teardown must give it back so.
	// A run that died before its cleanup is removed first.
	if out, err := exec.Command(devcluster, "nodes", "down", "--dir", rnDir()).CombinedOutput(); err != nil {
		t.Errorf("devcluster nodes down (the remains of an earlier run): %v\n%s", err, out)
	}
	c.before = snapshotMachine(t)
	start := time.Now()
	t.Cleanup(func() {
		if !c.downDone {
			c.down(t)
		}
	})
	// A cold machine under load (images imported, kubelets started for
	// the first time) has taken more than 5 minutes; up's own timeout
	// comes first, with its account of what it waited for.
	upArgs = append(upArgs, "--timeout", "10m")
	if out, err := c.dc.run(11*time.Minute, "up", upArgs...); err != nil {
		t.Fatalf("devcluster up --real-nodes %d: %v\n%s\nkubelet log tail:\n%s", n, err, out, tailFile(filepath.Join(rnDir(), rnNode, "kubelet.log"), 3000))
	}
	t.Logf("dev cluster with a real node up in %s", time.Since(start).Round(100*time.Millisecond))

	env, err := os.ReadFile(filepath.Join(rnDir(), "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(env), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "RN_GW":
			c.gw = v
		case "RN_SOCK":
			c.sock = v
		}
	}
	kc, err := os.ReadFile(c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	if c.client, err = client.New(cfg, client.Options{Scheme: testenv.Scheme}); err != nil {
		t.Fatal(err)
	}
	return c
}

// restrictedNamespace makes rnNamespace, where the restricted Pod Security
// level is enforced.
func (c *realNodeCluster) restrictedNamespace(t *testing.T) {
	t.Helper()
	c.mustKubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: latest
`, rnNamespace), "apply", "-f", "-")
}

// down is make dev-cluster-down.
func (c *realNodeCluster) down(t *testing.T) {
	t.Helper()
	if out, err := c.dc.run(3*time.Minute, "down"); err != nil {
		t.Errorf("devcluster down: %v\n%s", err, out)
	}
}

func (c *realNodeCluster) mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(c.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *realNodeCluster) applyTarget(t *testing.T, name, siteURL string) {
	t.Helper()
	c.mustKubectl(t, fmt.Sprintf(`apiVersion: crawl.lohisoft.com/v1beta1
kind: CrawlTarget
metadata: {name: %s, namespace: %s}
spec: {url: "%s/", delay: 100ms}
`, name, rnNamespace, siteURL), "apply", "-f", "-")
}

func (c *realNodeCluster) target(t *testing.T, name string) *crawlv1.CrawlTarget {
	t.Helper()
	ct := &crawlv1.CrawlTarget{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: rnNamespace, Name: name}, ct); err != nil {
		t.Fatal(err)
	}
	return ct
}

// runningPod waits until run 1 of a target runs and the site has had a
// request, and returns the Pod.
func (c *realNodeCluster) runningPod(t *testing.T, target string, site *testSite) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	testutil.Eventually(t, 90*time.Second, target+" crawling in a container", func() error {
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: rnNamespace, Name: crawlpod.PodName(target, 1)}, pod); err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning || site.requests.Load() < 1 {
			return fmt.Errorf("phase %s, %d requests", pod.Status.Phase, site.requests.Load())
		}
		return nil
	})
	return pod
}

// writtenToRoot lists what is in a container's writable layer besides the
// (empty) mount points of its OCI spec and their parent directories.
func (c *realNodeCluster) writtenToRoot(t *testing.T, id string) []string {
	t.Helper()
	out, err := exec.Command("ctr", "-a", c.sock, "-n", "k8s.io", "snapshots", "--snapshotter", "overlayfs", "mounts", "/mnt", id).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr snapshots mounts: %v\n%s", err, out)
	}
	upper := regexp.MustCompile(`upperdir=([^,\s]+)`).FindSubmatch(out)
	if upper == nil {
		t.Fatalf("no upperdir in %s", out)
	}
	info, err := exec.Command("ctr", "-a", c.sock, "-n", "k8s.io", "containers", "info", id).Output()
	if err != nil {
		t.Fatalf("ctr containers info: %v", err)
	}
	var ci struct {
		Spec struct {
			Mounts []struct {
				Destination string `json:"destination"`
			} `json:"mounts"`
		} `json:"Spec"`
	}
	if err := json.Unmarshal(info, &ci); err != nil || len(ci.Spec.Mounts) == 0 {
		t.Fatalf("container spec: %v\n%s", err, info)
	}
	allowed := map[string]bool{}
	for _, m := range ci.Spec.Mounts {
		for d := filepath.Clean(m.Destination); d != "/"; d = filepath.Dir(d) {
			allowed[d] = true
		}
	}
	root := string(upper[1])
	var written []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel := strings.TrimPrefix(p, root)
		fi, _ := d.Info()
		if allowed[rel] && (d.IsDir() || (fi != nil && fi.Size() == 0)) {
			return nil
		}
		written = append(written, rel)
		return nil
	})
	return written
}

// containerPID finds the host pid of a Pod's crawler container.
func (c *realNodeCluster) containerPID(t *testing.T, pod *corev1.Pod) int {
	t.Helper()
	if len(pod.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s has no container status", pod.Name)
	}
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := exec.Command("ctr", "-a", c.sock, "-n", "k8s.io", "tasks", "ls").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr tasks ls: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no task for container %s:\n%s", id, out)
	return 0
}

func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	// A zombie waiting for its shim is gone for our purposes.
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return bytes.Contains(b, []byte(") Z "))
}

// resultsProxy stands between crawler Pods and the manager's results
// endpoint, on the bridge address the Pods can reach. It records when
// each final report arrives, and can leave a run's final report
// unanswered, like a results endpoint that hangs.
type resultsProxy struct {
	url, upstream string
	mu            sync.Mutex
	progress      map[string]int
	finals        map[string]finalSeen
	hold          map[string]bool
	stop          chan struct{}
}

type finalSeen struct {
	at    time.Time
	pages int
	code  int
}

func startResultsProxy(t *testing.T, ip string) *resultsProxy {
	t.Helper()
	l, err := net.Listen("tcp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	p := &resultsProxy{
		url:      "http://" + l.Addr().String(),
		progress: map[string]int{},
		finals:   map[string]finalSeen{},
		hold:     map[string]bool{},
		stop:     make(chan struct{}),
	}
	srv := &http.Server{Handler: p}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { close(p.stop); _ = srv.Close() })
	return p
}

func (p *resultsProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	run := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	var rep runreport.Report
	_ = json.Unmarshal(body, &rep)
	p.mu.Lock()
	hold := p.hold[run]
	if rep.Final {
		p.finals[run] = finalSeen{at: arrived, pages: len(rep.Result.Pages)}
	} else {
		p.progress[run]++
	}
	p.mu.Unlock()
	if rep.Final && hold {
		select {
		case <-p.stop:
		case <-r.Context().Done():
		}
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if rep.Final {
		p.mu.Lock()
		f := p.finals[run]
		f.code = resp.StatusCode
		p.finals[run] = f
		p.mu.Unlock()
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *resultsProxy) final(run string) (finalSeen, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.finals[run]
	return f, ok
}

func (p *resultsProxy) progressCount(run string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progress[run]
}

func (p *resultsProxy) holdFinal(run string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold[run] = true
}

// TestRealNodeEndToEnd runs the operator's crawler Pods as real containers
// of the project's image on a real kubelet, in a namespace that enforces
// the restricted Pod Security level, and then checks that
// `make dev-cluster-down` gives the machine back as it was.
func TestRealNodeEndToEnd(t *testing.T) {
	c := startRealNodeCluster(t)
	ctx := context.Background()
	proxy := startResultsProxy(t, c.gw)
	m := startManagerFor(t, c.kubeconfig, func(m *managerProcess) {
		m.resultsURL = proxy.url
		m.crawlerArgs = []string{
			"--crawler-image=" + rnImage,
			"--crawler-image-pull-policy=Never",
			"--crawler-allow-private", // the sites are on the bridge's private range
			"--min-crawl-delay=100ms",
			"--crawl-deadline=" + rnDeadline.String(),
		}
	})
	proxy.upstream = "http://" + m.results
	c.restrictedNamespace(t)

	t.Run("the namespace enforces the restricted Pod Security level", func(t *testing.T) {
		bad := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "not-restricted", Namespace: rnNamespace},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: rnImage}}},
		}
		err := c.client.Create(ctx, bad, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
			t.Fatalf("a non-restricted Pod was admitted (err = %v)", err)
		}
	})

	t.Run("a CrawlTarget is crawled by a real container and becomes Ready", func(t *testing.T) {
		site := startSite(t, c.gw, 6, 0)
		start := time.Now()
		c.applyTarget(t, "bakery", site.url)
		c.mustKubectl(t, "", "wait", "--for=condition=Ready", "--timeout=120s", "crawltarget/bakery", "-n", rnNamespace)
		t.Logf("Ready %s after kubectl apply", time.Since(start).Round(100*time.Millisecond))
		ct := c.target(t, "bakery")
		if ct.Status.PagesIndexed != 6 || ct.Status.EgressNodeName != rnNode || ct.Status.EgressIP != rnExternalIP {
			t.Errorf("status: pages %d, egress %s %s", ct.Status.PagesIndexed, ct.Status.EgressNodeName, ct.Status.EgressIP)
		}
		si := &crawlv1.SiteIndex{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: rnNamespace, Name: "bakery"}, si); err != nil {
			t.Fatal(err)
		}
		if len(si.Status.Pages) != 6 {
			t.Errorf("SiteIndex has %d pages, want 6", len(si.Status.Pages))
		}
		testutil.Eventually(t, 30*time.Second, "pages in the index", func() error {
			if got := indexPages(t, m, c.gw); len(got) != 6 {
				return fmt.Errorf("index has %d pages", len(got))
			}
			return nil
		})

		pod := &corev1.Pod{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: rnNamespace, Name: crawlpod.PodName("bakery", 1)}, pod); err != nil {
			t.Fatal(err)
		}
		cs := pod.Status.ContainerStatuses
		if pod.Spec.NodeName != rnNode || pod.Status.Phase != corev1.PodSucceeded || len(cs) != 1 ||
			!strings.HasPrefix(cs[0].ContainerID, "containerd://") || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 {
			t.Fatalf("crawler Pod: node %s, phase %s, containers %+v", pod.Spec.NodeName, pod.Status.Phase, cs)
		}
		node := &corev1.Node{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: rnNode}, node); err != nil {
			t.Fatal(err)
		}
		if rt := node.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rt, "containerd://") {
			t.Errorf("node runtime %q, want containerd", rt)
		}
		// The crawler wrote nothing to its root filesystem (read-only; the
		// image's /tmp is in it too): the container's writable layer holds
		// only the empty mount points runc made for /proc, /etc/hosts, ...
		id := strings.TrimPrefix(cs[0].ContainerID, "containerd://")
		if written := c.writtenToRoot(t, id); len(written) != 0 {
			t.Errorf("the crawler wrote to its root filesystem: %v", written)
		}
		logRealNodeMemory(t, c)
	})

	t.Run("restricted at run time, and SIGTERM's partial result arrives within the grace period", func(t *testing.T) {
		site := startSite(t, c.gw, 12, 700*time.Millisecond)
		c.applyTarget(t, "partial", site.url)
		pod := c.runningPod(t, "partial", site)
		run := pod.Name
		testutil.Eventually(t, 30*time.Second, "progress reports", func() error {
			if n := proxy.progressCount(run); n < 2 {
				return fmt.Errorf("%d progress reports", n)
			}
			return nil
		})
		pid := c.containerPID(t, pod)
		// What the kubelet and runc enforce, seen from the host.
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Uid:\t65532\t65532\t65532\t65532", "Gid:\t65532\t65532\t65532\t65532",
			"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !bytes.Contains(status, []byte(want+"\n")) {
				t.Errorf("crawler process lacks %q:\n%s", want, status)
			}
		}
		mounts, _ := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		if !rootIsReadOnly(mounts) {
			t.Errorf("the crawler's root filesystem is writable:\n%s", mounts)
		}
		if bytes.Contains(mounts, []byte("serviceaccount")) {
			t.Errorf("a service account token is mounted:\n%s", mounts)
		}
		// Nothing off the machine: the host drops whatever would be
		// forwarded from the bridge but to the cluster (or an internet),
		// and the Pod reaches the machine only at the Pod ranges'
		// addresses, not at its uplink's, which no Node object lists.
		if out, err := exec.Command("iptables", "-w", "-S", "CRAWL-FWD-"+rnBridge).CombinedOutput(); err != nil || !strings.Contains(string(out), "-i "+rnBridge+" -j DROP") {
			t.Errorf("forwarding from the bridge is not dropped: %v\n%s", err, out)
		}
		checkMachineAddressesFromPod(t, pid, c.gw)

		grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
		deleted := time.Now()
		if err := c.client.Delete(ctx, pod); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, grace+5*time.Second, "the partial result", func() error {
			if _, ok := proxy.final(run); !ok {
				return errors.New("no final report yet")
			}
			return nil
		})
		f, _ := proxy.final(run)
		t.Logf("partial result (%d of 12 pages) arrived %s after SIGTERM", f.pages, f.at.Sub(deleted).Round(time.Millisecond))
		if f.at.Sub(deleted) > grace || f.pages == 0 || f.pages >= 12 {
			t.Errorf("final report %s after the deletion with %d pages, want a partial result within the %s grace period", f.at.Sub(deleted), f.pages, grace)
		}
		testutil.Eventually(t, grace+10*time.Second, "container and Pod gone", func() error {
			if !processGone(pid) {
				return fmt.Errorf("crawler process %d still runs", pid)
			}
			if err := c.client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("pod still there (%v)", err)
			}
			return nil
		})
		c.mustKubectl(t, "", "delete", "crawltarget", "partial", "-n", rnNamespace, "--wait=true")
	})

	t.Run("a crawl that outlives --crawl-deadline is ended by the kubelet and counts as a failure", func(t *testing.T) {
		// The crawler stops crawling at half the deadline and reports; the
		// results endpoint hangs, so it is still retrying when the kubelet
		// ends the Pod at the deadline, and must then exit within the
		// grace period (no SIGKILL).
		site := startSite(t, c.gw, 20, 1500*time.Millisecond)
		run := crawlpod.PodName("overdue", 1)
		proxy.holdFinal(run)
		c.applyTarget(t, "overdue", site.url)
		c.runningPod(t, "overdue", site)
		pod := &corev1.Pod{}
		testutil.Eventually(t, rnDeadline+60*time.Second, "Pod failed by its deadline", func() error {
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: rnNamespace, Name: run}, pod); err != nil {
				return err
			}
			if pod.Status.Phase != corev1.PodFailed || len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].State.Terminated == nil {
				return fmt.Errorf("phase %s reason %q", pod.Status.Phase, pod.Status.Reason)
			}
			return nil
		})
		if pod.Status.Reason != "DeadlineExceeded" {
			t.Errorf("pod reason %q, want DeadlineExceeded", pod.Status.Reason)
		}
		term := pod.Status.ContainerStatuses[0].State.Terminated
		ran := term.FinishedAt.Sub(pod.Status.StartTime.Time)
		t.Logf("container ran %s (deadline %s), exit code %d", ran.Round(100*time.Millisecond), rnDeadline, term.ExitCode)
		if term.ExitCode == 137 || ran > rnDeadline+10*time.Second {
			t.Errorf("crawler killed after its grace period (exit %d after %s)", term.ExitCode, ran)
		}
		if _, ok := proxy.final(run); !ok {
			t.Error("the crawler never tried to report: it did not stop at its own timeout")
		}
		testutil.Eventually(t, 30*time.Second, "failure recorded", func() error {
			ct := c.target(t, "overdue")
			if ct.Status.ConsecutiveFailures < 1 || readyReason(ct) != "False/"+crawlv1.ReasonCrawlFailed {
				return fmt.Errorf("failures %d, Ready %s", ct.Status.ConsecutiveFailures, readyReason(ct))
			}
			return nil
		})
		c.mustKubectl(t, "", "delete", "crawltarget", "overdue", "-n", rnNamespace, "--wait=true")
	})

	t.Run("an Exclusion kills the running container within 10s and purges its pages", func(t *testing.T) {
		site := startSite(t, c.gw, 12, 700*time.Millisecond)
		c.applyTarget(t, "doomed", site.url)
		pod := c.runningPod(t, "doomed", site)
		pid := c.containerPID(t, pod)
		start := time.Now()
		// Every site here is on the bridge address: this excludes bakery too.
		c.mustKubectl(t, fmt.Sprintf(`apiVersion: crawl.lohisoft.com/v1beta1
kind: Exclusion
metadata: {name: realnode-e2e}
spec: {domain: "%s", description: e2e}
`, c.gw), "apply", "-f", "-")
		testutil.Eventually(t, 10*time.Second, "container killed and Pod gone", func() error {
			if !processGone(pid) {
				return fmt.Errorf("crawler process %d still runs", pid)
			}
			if err := c.client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("pod still there (%v)", err)
			}
			return nil
		})
		t.Logf("Exclusion ended the container in %s", time.Since(start).Round(100*time.Millisecond))
		testutil.Eventually(t, 30*time.Second, "pages purged", func() error {
			si := &crawlv1.SiteIndex{}
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: rnNamespace, Name: "bakery"}, si); err != nil {
				return err
			}
			if len(si.Status.Pages) != 0 {
				return fmt.Errorf("SiteIndex bakery has %d pages", len(si.Status.Pages))
			}
			if got := indexPages(t, m, c.gw); len(got) != 0 {
				return fmt.Errorf("index has %d pages", len(got))
			}
			for _, name := range []string{"bakery", "doomed"} {
				if r := readyReason(c.target(t, name)); r != "False/"+crawlv1.ReasonExcluded {
					return fmt.Errorf("%s Ready = %s", name, r)
				}
			}
			return nil
		})
	})

	t.Run("make dev-cluster-down leaves the machine as it found it", func(t *testing.T) {
		m.stop(syscall.SIGTERM)
		start := time.Now()
		c.downDone = true
		c.down(t)
		t.Logf("down in %s", time.Since(start).Round(100*time.Millisecond))
		for _, problem := range c.before.leftovers(t, rnDir(), rnBridge) {
			t.Error(problem)
		}
	})
}

func rootIsReadOnly(mountinfo []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 5 && f[4] == "/" {
			return strings.HasPrefix(f[5], "ro,") || f[5] == "ro"
		}
	}
	return false
}

// logRealNodeMemory logs what the real node costs in memory: kubelet and
// containerd resident sets.
func logRealNodeMemory(t *testing.T, c *realNodeCluster) {
	var parts []string
	for _, name := range []string{"kubelet", "containerd"} {
		b, err := os.ReadFile(filepath.Join(rnDir(), rnNode, name+".pid"))
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(status); m != nil {
			kb, _ := strconv.Atoi(string(m[1]))
			parts = append(parts, fmt.Sprintf("%s %d MiB", name, kb/1024))
		}
	}
	t.Logf("real node resident memory: %s", strings.Join(parts, ", "))
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// machineState is what a real node may change on the machine, read before
// it starts: teardown must leave it the same.
type machineState struct {
	chains  map[string]bool
	netns   map[string]bool
	paths   map[string]bool
	sysctls map[string]string
}

var (
	rnSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables"}
	rnOutsidePaths = []string{"/run/containerd", "/run/netns", "/run/mount", "/var/log/containers", "/var/log/pods",
		"/var/lib/cni", "/var/lib/kubelet", "/etc/cni", "/opt/cni", "/opt/containerd"}
	chainKinds = regexp.MustCompile(`^-N ((KUBE|CNI|CRAWL)-\S+)`)
)

func snapshotMachine(t *testing.T) machineState {
	t.Helper()
	s := machineState{chains: map[string]bool{}, netns: map[string]bool{}, paths: map[string]bool{}, sysctls: map[string]string{}}
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			out, err := exec.Command(ipt, "-w", "-t", table, "-S").Output()
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(out), "\n") {
				if m := chainKinds.FindStringSubmatch(line); m != nil {
					s.chains[ipt+" "+table+" "+m[1]] = true
				}
			}
		}
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		s.netns[e.Name()] = true
	}
	for _, p := range rnOutsidePaths {
		if _, err := os.Lstat(p); err == nil {
			s.paths[p] = true
		}
	}
	for _, k := range rnSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			t.Fatal(err)
		}
		s.sysctls[k] = strings.TrimSpace(string(b))
	}
	return s
}

// leftovers lists, one line each, what a real node left behind: its
// processes and containers, mounts under its state directory, its bridge,
// network namespaces, iptables chains, kubepods cgroups, directories, and
// sysctls not restored.
func (before machineState) leftovers(t *testing.T, dir, bridge string) []string {
	t.Helper()
	var out []string
	now := snapshotMachine(t)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		name := filepath.Base(args[0])
		cmdline := strings.Join(args, " ")
		switch {
		case (name == "kubelet" || name == "kube-proxy" || name == "containerd" || strings.HasPrefix(name, "containerd-shim")) && strings.Contains(cmdline, dir+"/"):
			out = append(out, "process still runs: "+cmdline)
		case args[0] == "crawler" || args[0] == "manager" || args[0] == "/pause" || args[0] == "/coredns" || args[0] == "/local-path-provisioner":
			out = append(out, "container process still runs: "+cmdline)
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, "mount left: "+f[4])
		}
	}
	if _, err := net.InterfaceByName(bridge); err == nil {
		out = append(out, "bridge left: "+bridge)
	}
	// kube-proxy's state and the provisioner's volumes.
	if _, err := os.Stat(filepath.Join(dir, "addons")); err == nil {
		out = append(out, "add-on state left: "+filepath.Join(dir, "addons"))
	}
	for ns := range now.netns {
		if !before.netns[ns] {
			out = append(out, "network namespace left: "+ns)
		}
	}
	for ch := range now.chains {
		if !before.chains[ch] {
			out = append(out, "iptables chain left: "+ch)
		}
	}
	for _, pattern := range []string{"/sys/fs/cgroup/kubepods*", "/sys/fs/cgroup/*/kubepods*", "/sys/fs/cgroup/*/crawl-*"} {
		found, _ := filepath.Glob(pattern)
		for _, f := range found {
			out = append(out, "cgroup left: "+f)
		}
	}
	for p := range now.paths {
		if !before.paths[p] {
			out = append(out, "directory left: "+p)
		}
	}
	for k, v := range before.sysctls {
		if now.sysctls[k] != v {
			out = append(out, fmt.Sprintf("sysctl %s is %s, was %s", strings.ReplaceAll(k, "/", "."), now.sysctls[k], v))
		}
	}
	return out
}
