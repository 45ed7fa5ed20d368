// Package e2e runs the built binaries the way a user does: a control plane
// from bin/k8s, CRDs applied with kubectl, bin/manager as a process, and
// manifests applied with kubectl. There is no kubelet here; the test plays
// it for the crawler Pod, and reports results over HTTP like the crawler.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

var repoRoot = filepath.Join("..", "..")

type controlPlane struct {
	kubeconfig string
	kubectl    string
	client     client.Client
}

func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	assets := testenv.MustAssets(t, repoRoot)
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(crawlv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &controlPlane{kubeconfig: path, kubectl: filepath.Join(assets, "kubectl"), client: c}
}

// kubectl runs kubectl against the cluster with stdin, returning combined
// output and the error.
func (c *controlPlane) run(stdin string, args ...string) (string, error) {
	cmd := exec.Command(c.kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *controlPlane) mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := c.run(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// buildBinary builds a command of the repository (testutil.BuildBinary).
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	return testutil.BuildBinary(t, repoRoot, pkg)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return testutil.FreeAddr(t)
}

// startManager runs bin/manager against the cluster and returns the base
// URL of its results endpoint.
func startManager(t *testing.T, c *controlPlane, binary string) string {
	t.Helper()
	results := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(binary,
		"--metrics-bind-address=0",
		"--health-probe-bind-address="+freeAddr(t),
		"--results-bind-address="+results,
		"--results-url=http://"+results,
		"--crawler-image=crawler:e2e",
		// The defaults (/data/index.db, :8082) belong to the manager's
		// container; on the host they would outlive the test and collide.
		"--index-bind-address="+freeAddr(t),
		"--storage=sqlite://"+filepath.Join(t.TempDir(), "index.db"),
		// A manager outside the cluster: no NetworkPolicy can let crawler
		// Pods reach it.
		"--crawler-network-policy=false",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("manager logs:\n%s", logs.String())
		}
	})
	testutil.Eventually(t, 30*time.Second, "results endpoint listening", func() error {
		conn, err := net.Dial("tcp", results)
		if err == nil {
			conn.Close()
		}
		return err
	})
	return "http://" + results
}

func toleratesEgressTaint(tols []corev1.Toleration) bool {
	for _, tol := range tols {
		if tol.Key == egress.DefaultLabel && tol.Value == egress.DefaultValue && tol.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

const target = `apiVersion: crawl.lohisoft.com/v1beta1
kind: CrawlTarget
metadata:
  name: shop
  namespace: default
spec:
  url: https://shop.e2e.example/
  maxPages: 5
`

func TestOperatorEndToEnd(t *testing.T) {
	c := startControlPlane(t)
	manager := buildBinary(t, "cmd/manager")
	ctx := context.Background()

	c.mustRun(t, "", "apply", "-f", filepath.Join(repoRoot, "config", "crd", "bases"))
	c.mustRun(t, "", "wait", "--for=condition=Established", "--timeout=60s",
		"crd/crawltargets.crawl.lohisoft.com", "crd/exclusions.crawl.lohisoft.com", "crd/siteindexes.crawl.lohisoft.com")

	t.Run("kubectl apply refuses bad manifests naming the field", func(t *testing.T) {
		cases := map[string]string{
			"maxPages: 21":       "spec.maxPages",
			"url: ftp://x.org/":  "spec.url",
			"url: http://[::1]/": "spec.url",
		}
		for line, field := range cases {
			key := strings.SplitN(line, ":", 2)[0]
			manifest := strings.Replace(target, "name: shop", "name: bad", 1)
			if key == "url" {
				manifest = strings.Replace(manifest, "url: https://shop.e2e.example/", line, 1)
			} else {
				manifest = strings.Replace(manifest, "maxPages: 5", line, 1)
			}
			out, err := c.run(manifest, "apply", "-f", "-")
			if err == nil || !strings.Contains(out, field) {
				t.Errorf("%s: kubectl apply err=%v output=%q, want a refusal naming %s", line, err, out, field)
			}
		}
	})

	testutil.CreateEgressNode(t, c.client, "egress-1", "79.139.58.98")
	results := startManager(t, c, manager)
	c.mustRun(t, target, "apply", "-f", "-")

	var pod *corev1.Pod
	t.Run("a CrawlTarget yields a SiteIndex and a pinned, restricted crawler Pod", func(t *testing.T) {
		testutil.Eventually(t, 30*time.Second, "SiteIndex", func() error {
			_, err := c.run("", "get", "siteindex", "shop", "-n", "default")
			return err
		})
		pod = &corev1.Pod{}
		testutil.Eventually(t, 30*time.Second, "crawler Pod", func() error {
			return c.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: crawlpod.PodName("shop", 1)}, pod)
		})
		spec := pod.Spec
		terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		sc := spec.Containers[0].SecurityContext
		switch {
		case terms[0].MatchFields[0].Values[0] != "egress-1":
			t.Errorf("pod not pinned to egress-1: %+v", terms)
		case spec.NodeSelector[egress.DefaultLabel] != "true" || !toleratesEgressTaint(spec.Tolerations):
			t.Errorf("egress selector/toleration missing")
		case *spec.AutomountServiceAccountToken:
			t.Errorf("crawler Pod gets Kubernetes credentials")
		case !*spec.SecurityContext.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities.Drop[0] != "ALL" || spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			t.Errorf("crawler Pod is not restricted: %+v %+v", spec.SecurityContext, sc)
		case spec.ActiveDeadlineSeconds == nil || spec.Containers[0].Resources.Limits.Memory().IsZero():
			t.Errorf("no deadline or limits")
		}
	})

	t.Run("kubectl wait --for=condition=Ready works once the crawl succeeds", func(t *testing.T) {
		testutil.FinishCrawl(t, c.client, results, pod, "https://shop.e2e.example", 3)
		c.mustRun(t, "", "wait", "--for=condition=Ready", "--timeout=30s", "crawltarget/shop", "-n", "default")
		out := c.mustRun(t, "", "get", "crawltargets,siteindexes", "-n", "default")
		for _, want := range []string{"shop.e2e.example", "True", "Crawled", "79.139.58.98", "https://shop.e2e.example:443"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("an Exclusion deletes the running Pod within 10s and marks the target Excluded", func(t *testing.T) {
		c.mustRun(t, "", "annotate", "crawltarget/shop", "-n", "default", crawlv1.RequestedAtAnnotation+"=e2e-1")
		running := &corev1.Pod{}
		testutil.Eventually(t, 30*time.Second, "second crawler Pod", func() error {
			return c.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: crawlpod.PodName("shop", 2)}, running)
		})
		testutil.SetPodPhase(t, c.client, running, corev1.PodRunning, 0)

		start := time.Now()
		c.mustRun(t, `apiVersion: crawl.lohisoft.com/v1beta1
kind: Exclusion
metadata:
  name: e2e-example
spec:
  domain: e2e.example
  description: owner asked by email
`, "apply", "-f", "-")
		testutil.Eventually(t, 10*time.Second, "crawler Pod deleted", func() error {
			err := c.client.Get(ctx, client.ObjectKeyFromObject(running), &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("pod still there (err=%v)", err)
		})
		t.Logf("Exclusion took effect in %s", time.Since(start).Round(time.Millisecond))
		testutil.Eventually(t, 10*time.Second, "target Excluded", func() error {
			ct := &crawlv1.CrawlTarget{}
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "shop"}, ct); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionReady); c == nil || c.Reason != crawlv1.ReasonExcluded {
				return fmt.Errorf("Ready = %+v", c)
			}
			return nil
		})
		out := c.mustRun(t, "", "get", "exclusions")
		if !strings.Contains(out, "e2e.example") || !strings.Contains(out, "3") {
			t.Errorf("kubectl get exclusions does not show the match and the 3 purged pages:\n%s", out)
		}
	})
}
