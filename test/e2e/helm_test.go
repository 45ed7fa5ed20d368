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
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/operator"
	"github.com/lohisoft/crawl-operator/internal/testutil"
	"github.com/lohisoft/crawl-operator/internal/uninstall"
)

// The chart as users install it (README, Install): helm install on the dev
// cluster's real node with the laptop values of make demo-helm, then the
// first days of operating it through Helm.
const (
	helmRelease   = "crawl-operator"
	helmNamespace = "crawl-system"
)

// helmBinary is bin/helm (make helm-bin); without it the test cannot run.
func helmBinary(t *testing.T) string {
	t.Helper()
	return testutil.BuiltTool(t, repoRoot, filepath.Join("bin", "helm"), "helm-bin")
}

func (c *realNodeCluster) helm(t *testing.T, helm string, args ...string) string {
	t.Helper()
	out, err := c.helmRun(t, helm, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s\nmanager log:\n%s", strings.Join(args, " "), err, out,
			c.managerLog(t))
	}
	return out
}

// helmRun is helm, for a command that may fail.
func (c *realNodeCluster) helmRun(t *testing.T, helm string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig, "HELM_CACHE_HOME="+t.TempDir(),
		"HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installArgs is the README's helm install with make demo-helm's values.
func installArgs() []string {
	return []string{"install", helmRelease, "charts/crawl-operator", "--namespace", helmNamespace, "--create-namespace",
		"-f", "hack/demo/helm-values.yaml", "--set", "image.tag=" + rnImage[strings.LastIndex(rnImage, ":")+1:],
		"--wait", "--timeout", "5m"}
}

// field is `kubectl get RESOURCE -o jsonpath={FIELD}`, standard output
// only: every v1alpha1 read also warns, on stderr.
func (c *realNodeCluster) field(t *testing.T, resource, field string, ns ...string) string {
	t.Helper()
	cmd := exec.Command(c.kubectl, append([]string{"--kubeconfig", c.kubeconfig, "get", resource, "-o", "jsonpath={" + field + "}"}, ns...)...)
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("kubectl get %s: %v\n%s", resource, err, exit.Stderr)
		}
		t.Fatalf("kubectl get %s: %v", resource, err)
	}
	return strings.TrimSpace(string(out))
}

// managerPods are the manager's Pods that are not being deleted.
func (c *realNodeCluster) managerPods(t *testing.T) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.client.List(context.Background(), pods, client.InNamespace(helmNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "crawl-operator", "app.kubernetes.io/instance": helmRelease}); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// runningManager waits until exactly one manager Pod runs and is Ready,
// and returns it.
func (c *realNodeCluster) runningManager(t *testing.T) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	testutil.Eventually(t, 3*time.Minute, "one Ready manager Pod", func() error {
		pods := c.managerPods(t)
		if len(pods) != 1 {
			return fmt.Errorf("%d manager Pods", len(pods))
		}
		pod = pods[0]
		if pod.Status.Phase != corev1.PodRunning || !podReady(pod) {
			return fmt.Errorf("manager Pod %s: %s, ready %t", pod.Name, pod.Status.Phase, podReady(pod))
		}
		return nil
	})
	return pod
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (c *realNodeCluster) managerLog(t *testing.T) string {
	out, _ := exec.Command(c.kubectl, "--kubeconfig", c.kubeconfig, "-n", helmNamespace, "logs", "deploy/"+helmRelease,
		"--tail=40").CombinedOutput()
	return string(out)
}

// leader is the holder of the manager's leader-election Lease.
func (c *realNodeCluster) leader(t *testing.T) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: helmNamespace, Name: "crawl-operator.crawl.lohisoft.com"}, l); err != nil {
		return ""
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitCrawled waits until a target's run number run (or a later one)
// finished Ready with pages pages.
func (c *realNodeCluster) waitCrawled(t *testing.T, name string, run int64, pages int32, within time.Duration) {
	t.Helper()
	testutil.Eventually(t, within, name+" crawled", func() error {
		// A read may fail for a moment while no manager serves
		// conversions (a rollout): retried like any other.
		ct := &crawlv1.CrawlTarget{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: rnNamespace, Name: name}, ct); err != nil {
			return err
		}
		if ct.Status.LastFinishedRun < run || ct.Status.PagesIndexed != pages || ct.Status.Phase != crawlv1.PhaseSucceeded {
			return fmt.Errorf("phase %s, last finished run %d (want %d), %d pages (want %d)", ct.Status.Phase,
				ct.Status.LastFinishedRun, run, ct.Status.PagesIndexed, pages)
		}
		return nil
	})
}

// portForward runs `kubectl port-forward svc/NAME :PORT` as a user would
// and returns the local base URL.
func (c *realNodeCluster) portForward(t *testing.T, svc string, port int) string {
	t.Helper()
	cmd := exec.Command(c.kubectl, "--kubeconfig", c.kubeconfig, "-n", helmNamespace, "port-forward",
		"--address", "127.0.0.1", "svc/"+svc, fmt.Sprintf(":%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) ->`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl port-forward svc/%s printed no local address: %s", svc, stderr.String())
		return ""
	}
}

// searchURLs asks the index API for q and returns the result URLs.
func searchURLs(t *testing.T, base, q string) []string {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/search?limit=50&q=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			URL string `json:"url"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("search %q: %s, %v", q, resp.Status, err)
	}
	var urls []string
	for _, r := range out.Results {
		urls = append(urls, r.URL)
	}
	return urls
}

// crawlObjects lists, as Kind/namespace/name, the crawler Pods, Secrets
// and NetworkPolicies the manager made, anywhere.
func (c *realNodeCluster) crawlObjects(t *testing.T) []string {
	t.Helper()
	var out []string
	pods := &corev1.PodList{}
	secrets := &corev1.SecretList{}
	policies := &networkingv1.NetworkPolicyList{}
	for _, l := range []client.ObjectList{pods, secrets, policies} {
		if err := c.client.List(context.Background(), l, uninstall.Selector); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods.Items {
		out = append(out, "Pod/"+p.Namespace+"/"+p.Name)
	}
	for _, s := range secrets.Items {
		out = append(out, "Secret/"+s.Namespace+"/"+s.Name)
	}
	for _, p := range policies.Items {
		out = append(out, "NetworkPolicy/"+p.Namespace+"/"+p.Name)
	}
	return out
}

func TestHelmOnRealNode(t *testing.T) {
	helm := helmBinary(t)
	c := startRealNode(t)
	ctx := context.Background()
	c.restrictedNamespace(t)
	site := startSite(t, c.gw, 6, 0)
	// 1.5 s a page, and the manager's 1 s floor between them: a crawl of
	// it outlasts a manager rollout.
	slow := startSite(t, c.gw, 8, 1500*time.Millisecond)
	host := strings.TrimPrefix(site.url, "http://")
	var firstManager corev1.Pod

	if !t.Run("helm install runs the manager as the chart's Pod", func(t *testing.T) {
		start := time.Now()
		c.helm(t, helm, installArgs()...)
		t.Logf("helm install --wait: %s", time.Since(start).Round(100*time.Millisecond))
		firstManager = c.runningManager(t)
		if firstManager.Spec.NodeName != rnNode || firstManager.Spec.Containers[0].Image != rnImage {
			t.Errorf("manager Pod on %s from %s, want %s from %s", firstManager.Spec.NodeName, firstManager.Spec.Containers[0].Image, rnNode, rnImage)
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: helmNamespace, Name: helmRelease + "-index"}, pvc); err != nil {
			t.Fatal(err)
		}
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "local-path" {
			t.Errorf("index PVC %s, class %v: want Bound by the default StorageClass", pvc.Status.Phase, pvc.Spec.StorageClassName)
		}
		testutil.Eventually(t, time.Minute, "the manager Pod leads", func() error {
			if l := c.leader(t); !strings.HasPrefix(l, firstManager.Name+"_") {
				return fmt.Errorf("lease held by %q", l)
			}
			return nil
		})
		// The downward API gave the manager its container's memory limit,
		// and the Go runtime got the chart's fraction of what the binary's
		// pages and SQLite's page caches (outside the Go heap) leave of it.
		limit := firstManager.Spec.Containers[0].Resources.Limits.Memory().Value()
		goLimit, err := operator.Defaults().Manager.GoMemLimit("", strconv.FormatInt(limit, 10), index.MemoryOutsideGoHeap("sqlite:///data/index.db"))
		if err != nil || goLimit == 0 {
			t.Fatalf("GoMemLimit for the chart's %d bytes: %d, %v", limit, goLimit, err)
		}
		want := fmt.Sprintf(`"bytes":%d`, goLimit)
		out, err := exec.Command(c.kubectl, "--kubeconfig", c.kubeconfig, "-n", helmNamespace, "logs", firstManager.Name).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"msg":"Go memory limit set"`) || !strings.Contains(string(out), want) {
			t.Errorf("the manager's log does not say it set Go's memory limit from %d bytes (%s; %v):\n%s", limit, want, err, firstLines(string(out), 5))
		}
	}) {
		return
	}

	if !t.Run("a CrawlTarget is crawled through the chart's Services and found through its index Service", func(t *testing.T) {
		c.applyTarget(t, "bakery", site.url)
		// The crawler reports to http://crawl-operator-results.crawl-system.svc:8083:
		// cluster DNS, then kube-proxy's rules to the manager Pod.
		c.waitCrawled(t, "bakery", 1, 6, 2*time.Minute)
		np := &networkingv1.NetworkPolicy{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: rnNamespace, Name: crawlpod.NetworkPolicyName}, np); err != nil {
			t.Errorf("the manager wrote no crawler NetworkPolicy in %s: %v", rnNamespace, err)
		}
		base := c.portForward(t, helmRelease+"-index", 8082)
		testutil.Eventually(t, 30*time.Second, "the site's pages in a search", func() error {
			if got := searchURLs(t, base, "heading"); len(got) == 0 || !strings.Contains(strings.Join(got, " "), host) {
				return fmt.Errorf("search answered %v", got)
			}
			return nil
		})
	}) {
		return
	}

	if !t.Run("v1alpha1 manifests still apply, through the chart's conversion webhook, and are stored as v1beta1", func(t *testing.T) {
		// What a GitOps repository written for v1alpha1 holds: fields
		// v1beta1 renamed (suspend, reason). A site of its own: two
		// targets of one site are duplicates.
		alpha := startSite(t, c.gw, 6, 0)
		out := c.mustKubectl(t, fmt.Sprintf(`apiVersion: crawl.lohisoft.com/v1alpha1
kind: CrawlTarget
metadata: {name: alpha-bakery, namespace: %s}
spec: {url: "%s/", delay: 100ms, maxPages: 20}
---
apiVersion: crawl.lohisoft.com/v1alpha1
kind: CrawlTarget
metadata: {name: alpha-paused, namespace: %s}
spec: {url: "http://alpha-paused.example/", suspend: true}
---
apiVersion: crawl.lohisoft.com/v1alpha1
kind: Exclusion
metadata: {name: alpha-excluded}
spec: {domain: alpha-excluded.example, reason: "asked by email", requestedBy: webmaster@alpha-excluded.example}
`, rnNamespace, alpha.url, rnNamespace), "apply", "-f", "-")
		if !strings.Contains(out, "v1alpha1 is deprecated: use crawl.lohisoft.com/v1beta1") {
			t.Errorf("kubectl apply of v1alpha1 showed no deprecation warning:\n%s", out)
		}
		t.Cleanup(func() {
			c.mustKubectl(t, "", "delete", "exclusion", "alpha-excluded", "--ignore-not-found")
			c.mustKubectl(t, "", "-n", rnNamespace, "delete", "crawltarget", "alpha-bakery", "alpha-paused", "--ignore-not-found")
		})
		c.waitCrawled(t, "alpha-bakery", 1, 6, 2*time.Minute)
		get := func(resource, field string, ns ...string) string { return c.field(t, resource, field, ns...) }
		for _, tc := range []struct{ resource, field, want string }{
			{"crawltarget.v1beta1.crawl.lohisoft.com/alpha-paused", ".spec.crawlPolicy", "Suspended"},
			{"crawltarget.v1alpha1.crawl.lohisoft.com/alpha-paused", ".spec.suspend", "true"},
			{"crawltarget.v1alpha1.crawl.lohisoft.com/alpha-bakery", ".status.pagesIndexed", "6"},
		} {
			if got := get(tc.resource, tc.field, "-n", rnNamespace); got != tc.want {
				t.Errorf("%s %s = %q, want %q", tc.resource, tc.field, got, tc.want)
			}
		}
		if got := get("exclusion.v1beta1.crawl.lohisoft.com/alpha-excluded", ".spec.description"); got != "asked by email" {
			t.Errorf("the v1alpha1 Exclusion's reason read as v1beta1 description %q", got)
		}
		if got := get("exclusion.v1alpha1.crawl.lohisoft.com/alpha-excluded", ".spec.reason"); got != "asked by email" {
			t.Errorf("the Exclusion read back as v1alpha1: reason %q", got)
		}
		// The leader migrated what was stored before: only v1beta1 is
		// left in every CRD's storedVersions.
		testutil.Eventually(t, time.Minute, "storedVersions [v1beta1]", func() error {
			for _, crd := range []string{"crawltargets", "exclusions", "siteindexes"} {
				if got := get("crd/"+crd+".crawl.lohisoft.com", ".status.storedVersions"); got != `["v1beta1"]` {
					return fmt.Errorf("%s storedVersions %s", crd, got)
				}
			}
			return nil
		})
	}) {
		return
	}

	if !t.Run("helm upgrade rolls the manager while a crawl runs, and the crawl lands", func(t *testing.T) {
		c.applyTarget(t, "slow", slow.url)
		c.runningPod(t, "slow", slow)
		start := time.Now()
		c.helm(t, helm, "upgrade", helmRelease, "charts/crawl-operator", "--namespace", helmNamespace, "--reuse-values",
			"--set", "manager.logLevel=debug", "--wait", "--timeout", "5m")
		m := c.runningManager(t)
		t.Logf("helm upgrade --wait: %s; crawl in flight: %d requests", time.Since(start).Round(100*time.Millisecond), slow.requests.Load())
		if m.Name == firstManager.Name || !slices.Contains(m.Spec.Containers[0].Args, "--zap-log-level=debug") {
			t.Errorf("after the upgrade: manager Pod %s with args %v", m.Name, m.Spec.Containers[0].Args)
		}
		c.waitCrawled(t, "slow", 1, 8, 3*time.Minute)
	}) {
		return
	}

	t.Run("helm rollback restores the first release", func(t *testing.T) {
		c.helm(t, helm, "rollback", helmRelease, "1", "--namespace", helmNamespace, "--wait", "--timeout", "5m")
		m := c.runningManager(t)
		if !slices.Contains(m.Spec.Containers[0].Args, "--zap-log-level=info") {
			t.Errorf("after the rollback: args %v", m.Spec.Containers[0].Args)
		}
		if h := c.helm(t, helm, "history", helmRelease, "--namespace", helmNamespace, "-o", "json"); strings.Count(h, `"revision"`) != 3 {
			t.Errorf("helm history: %s", h)
		}
	})

	uninstalled := time.Now()
	if !t.Run("helm uninstall removes the manager and its crawl objects and keeps the CRDs and CrawlTargets", func(t *testing.T) {
		// A crawl in flight when the release goes.
		run := c.target(t, "slow").Status.Runs + 1
		c.mustKubectl(t, "", "annotate", "-n", rnNamespace, "crawltarget/slow",
			crawlpod.AnnotationRequestedAt+"="+time.Now().UTC().Format(time.RFC3339), "--overwrite")
		testutil.Eventually(t, 90*time.Second, "run 2 of slow crawling", func() error {
			pod := &corev1.Pod{}
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: rnNamespace, Name: crawlpod.PodName("slow", run)}, pod); err != nil {
				return err
			}
			if pod.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("phase %s", pod.Status.Phase)
			}
			return nil
		})
		uninstalled = time.Now()
		c.helm(t, helm, "uninstall", helmRelease, "--namespace", helmNamespace, "--wait", "--timeout", "5m")
		testutil.Eventually(t, 2*time.Minute, "manager and crawl objects gone", func() error {
			if pods := c.managerPods(t); len(pods) > 0 {
				return fmt.Errorf("manager Pod %s", pods[0].Name)
			}
			if left := c.crawlObjects(t); len(left) > 0 {
				return fmt.Errorf("left: %v", left)
			}
			return nil
		})
		c.mustKubectl(t, "", "get", "crd", "crawltargets.crawl.lohisoft.com", "siteindexes.crawl.lohisoft.com", "exclusions.crawl.lohisoft.com")
		for _, name := range []string{"bakery", "slow"} {
			c.target(t, name)
		}
		// The hook's Job and RBAC went with its success; the index's PVC stays.
		for _, o := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} {
			if err := c.client.Get(ctx, client.ObjectKey{Name: helmRelease + "-cleanup"}, o); !apierrors.IsNotFound(err) {
				t.Errorf("%T %s-cleanup after uninstall: %v", o, helmRelease, err)
			}
		}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: helmNamespace, Name: helmRelease + "-index"}, &corev1.PersistentVolumeClaim{}); err != nil {
			t.Errorf("the index PVC went with the release: %v", err)
		}
	}) {
		return
	}

	t.Run("a reinstall picks the CrawlTargets up again", func(t *testing.T) {
		c.helm(t, helm, installArgs()...)
		c.runningManager(t)
		c.waitCrawled(t, "slow", c.target(t, "slow").Status.Runs, 8, 3*time.Minute)
		if ct := c.target(t, "slow"); ct.Status.LastCrawlTime == nil || ct.Status.LastCrawlTime.Time.Before(uninstalled) {
			t.Errorf("slow was not crawled again after the reinstall: last crawl %v", ct.Status.LastCrawlTime)
		}
		if ct := c.target(t, "bakery"); ct.Status.PagesIndexed != 6 {
			t.Errorf("bakery after the reinstall: %d pages", ct.Status.PagesIndexed)
		}
		base := c.portForward(t, helmRelease+"-index", 8082)
		if got := searchURLs(t, base, "heading"); !strings.Contains(strings.Join(got, " "), host) {
			t.Errorf("the kept index lost the first site's pages: %v", got)
		}
	})

	t.Run("manager.replicas=2 on PostgreSQL: ten leader Pod deletions, each handed over within 5 s, each crawl asked for meanwhile lands", func(t *testing.T) {
		// The README's PostgreSQL install. The test server listens on
		// loopback only; Pods reach it through a proxy on the bridge.
		dsn, err := url.Parse(pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		dsn.Host = startTCPProxy(t, c.gw, dsn.Host)
		c.mustKubectl(t, "", "-n", helmNamespace, "create", "secret", "generic", "crawl-index-dsn", "--from-literal=dsn="+dsn.String())
		c.helm(t, helm, "upgrade", helmRelease, "charts/crawl-operator", "--namespace", helmNamespace, "--reuse-values",
			"--set", "storage.type=postgres", "--set", "storage.postgres.existingSecret=crawl-index-dsn",
			"--set", "manager.replicas=2", "--wait", "--timeout", "5m")
		// A correctness bound, not a speed figure: a leader that releases
		// its Lease as it stops is replaced at the standby's next try
		// (RetryPeriod 1 s); one that does not is replaced only when the
		// Lease expires (15 s).
		const handovers, bound = 10, 5 * time.Second
		var took []string
		for i := 1; i <= handovers; i++ {
			leader, standby := c.leaderAndStandby(t)
			// The leader's log to its end, shown when the hand-over is
			// late: how it stopped and whether it released the Lease.
			var leaderLog bytes.Buffer
			follow := exec.Command(c.kubectl, "--kubeconfig", c.kubeconfig, "-n", helmNamespace, "logs", "-f", "--tail=0", leader)
			follow.Stdout, follow.Stderr = &leaderLog, &leaderLog
			if err := follow.Start(); err != nil {
				t.Fatal(err)
			}
			run := c.target(t, "bakery").Status.Runs + 1
			start := time.Now()
			c.mustKubectl(t, "", "-n", helmNamespace, "delete", "pod", leader, "--wait=false")
			// The crawl is asked for during the hand-over.
			c.mustKubectl(t, "", "annotate", "-n", rnNamespace, "crawltarget/bakery",
				crawlpod.AnnotationRequestedAt+"="+time.Now().UTC().Format(time.RFC3339Nano), "--overwrite")
			var successor string
			testutil.Eventually(t, 2*time.Minute, "another manager leads", func() error {
				l := c.leader(t)
				if l == "" || strings.HasPrefix(l, leader+"_") {
					return fmt.Errorf("lease held by %q (the deleted leader is %s, the standby %s)", l, leader, standby)
				}
				successor = l[:strings.LastIndex(l, "_")]
				return nil
			})
			d := time.Since(start)
			took = append(took, d.Round(100*time.Millisecond).String())
			c.waitCrawled(t, "bakery", run, 6, 2*time.Minute)
			stopFollowing(follow)
			if d > bound {
				t.Errorf("hand-over %d: %s leads %s after %s's Pod was deleted, want at most %s; how %s stopped:\n%s",
					i, successor, d.Round(100*time.Millisecond), leader, bound, leader, stoppingLines(leaderLog.String()))
			}
		}
		t.Logf("%d hand-overs (Pod deleted → another manager holds the Lease): %s", handovers, strings.Join(took, " "))
	})
}

// leaderAndStandby waits until two manager Pods are Ready, one of them
// holding the Lease, and returns both names.
func (c *realNodeCluster) leaderAndStandby(t *testing.T) (leader, standby string) {
	t.Helper()
	testutil.Eventually(t, 3*time.Minute, "two Ready manager Pods, one leading", func() error {
		pods := c.managerPods(t)
		if len(pods) != 2 || !podReady(pods[0]) || !podReady(pods[1]) {
			return fmt.Errorf("%d manager Pods", len(pods))
		}
		l := c.leader(t)
		for i, p := range pods {
			if strings.HasPrefix(l, p.Name+"_") {
				leader, standby = p.Name, pods[1-i].Name
				return nil
			}
		}
		return fmt.Errorf("lease held by %q, none of the two", l)
	})
	return leader, standby
}

// stopFollowing ends a `kubectl logs -f` whose Pod is gone (it ends by
// itself then) or is left running.
func stopFollowing(follow *exec.Cmd) {
	done := make(chan error, 1)
	go func() { done <- follow.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Second):
		_ = follow.Process.Kill()
		<-done
	}
}

// stoppingLines are the lines of a manager's log that tell how it stopped:
// each stage of its shutdown and the Lease's release.
func stoppingLines(log string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "Stopping") || strings.Contains(line, "Wait completed") || strings.Contains(line, "lease") ||
			strings.Contains(line, "leader") || strings.Contains(line, `"level":"error"`) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// startTCPProxy forwards connections to ip:<free port> on to target.
func startTCPProxy(t *testing.T, ip, target string) string {
	t.Helper()
	l, err := net.Listen("tcp4", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return l.Addr().String()
}

// firstLines is the first n lines of s, for messages.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
