package chart

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/site"
	"github.com/lohisoft/crawl-operator/internal/testenv"
)

// apiServer starts envtest with the CRDs (and Prometheus Operator stand-ins)
// and namespaces that enforce the restricted Pod Security level.
func apiServer(t *testing.T) (client.Client, *testenv.Warnings) {
	t.Helper()
	c, w := testenv.StartServer(t, repoRoot, filepath.Join("testdata", "monitoring-crds.yaml"))
	for _, ns := range []string{releaseNamespace, "sites"} {
		if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   ns,
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	return c, w
}

// kustomizeBuild is `kubectl kustomize DIR` with the kubectl of bin/k8s:
// the kustomize that `kubectl apply -k` runs.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	kubectl := filepath.Join(testenv.MustAssets(t, repoRoot), "kubectl")
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot, dir)).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return decode(t, string(out))
}

// ensureNamespace creates a namespace that enforces the restricted level.
func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"},
	}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// dryRun server-side applies every object without persisting it, so the
// API server validates each one, and fails on errors and warnings.
func dryRun(t *testing.T, c client.Client, w *testenv.Warnings, what string, objs []*unstructured.Unstructured) {
	t.Helper()
	if len(objs) == 0 {
		t.Fatalf("%s: nothing rendered", what)
	}
	for _, o := range objs {
		err := c.Patch(context.Background(), o, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner("chart-test"),
			client.FieldValidation("Strict"))
		if err != nil {
			t.Errorf("%s: %s %s/%s refused: %v", what, o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		for _, msg := range w.Take() {
			t.Errorf("%s: %s %s: API server warning: %s", what, o.GetKind(), o.GetName(), msg)
		}
	}
}

func TestServerSideDryRun(t *testing.T) {
	c, w := apiServer(t)

	// Every combination the READMEs document, and the tests' own (every
	// optional feature, every override), in namespaces that enforce the
	// restricted Pod Security level.
	for _, comb := range combinations(t) {
		t.Run("chart: "+comb.name, func(t *testing.T) {
			ensureNamespace(t, c, comb.namespace)
			objs, err := renderRelease(t, comb.release, comb.namespace, comb.values)
			if err != nil {
				t.Fatal(err)
			}
			// Namespaces the values name (crawler namespaces, watched
			// namespaces) exist before an install, as the README says.
			for _, o := range objs {
				if ns := o.GetNamespace(); ns != "" {
					ensureNamespace(t, c, ns)
				}
			}
			dryRun(t, c, w, comb.name, objs)
		})
	}
	t.Run("the dry-run refuses unknown fields", func(t *testing.T) {
		dep := find(mustRender(t, nil), "Deployment", "")
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["argz"] = []any{"--x"}
		_ = unstructured.SetNestedSlice(dep.Object, containers, "spec", "template", "spec", "containers")
		err := c.Patch(context.Background(), dep, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner("chart-test"),
			client.FieldValidation("Strict"))
		if err == nil || !strings.Contains(err.Error(), "argz") {
			t.Errorf("a Deployment with an unknown field: %v", err)
		}
		w.Take()
	})
	t.Run("kustomize config/default", func(t *testing.T) {
		objs := kustomizeBuild(t, "config/default")
		if find(objs, "Deployment", "crawl-operator-controller-manager") == nil {
			t.Fatalf("config/default renders no manager Deployment")
		}
		dryRun(t, c, w, "config/default", objs)
	})
	t.Run("samples", func(t *testing.T) {
		objs := kustomizeBuild(t, "config/samples")
		for _, o := range objs {
			if o.GetNamespace() == "" && o.GetKind() == "CrawlTarget" {
				o.SetNamespace("sites")
			}
		}
		dryRun(t, c, w, "samples", objs)
	})
	t.Run("crawler Pods meet the restricted level", func(t *testing.T) {
		s, _ := site.Parse("https://example.com/")
		ct := &crawlv1.CrawlTarget{
			TypeMeta:   metav1.TypeMeta{APIVersion: crawlv1.GroupVersion.String(), Kind: "CrawlTarget"},
			ObjectMeta: metav1.ObjectMeta{Name: "example", Namespace: "sites", UID: "0f6b6d0e-1111-4222-8333-944445555666"},
			Spec:       crawlv1.CrawlTargetSpec{URL: "https://example.com/"},
		}
		pod := crawlpod.Pod(crawlpod.Run{Target: ct, Site: s, Number: 1, Node: "egress-1", NodeIP: "79.139.58.98", TokenSHA256: "x"},
			crawlpod.Config{Image: "ghcr.io/lohisoft/crawl-operator:0.2.0", ResultsURL: "http://results:8083",
				ActiveDeadline: 30 * time.Minute, Resources: crawlpod.DefaultResources()})
		// Enforce mode rejects a non-restricted Pod outright: prove it does.
		loose := pod.DeepCopy()
		loose.Spec.Containers[0].SecurityContext = nil
		if err := c.Create(context.Background(), loose, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "PodSecurity") {
			t.Fatalf("a Pod without a security context was not refused by PodSecurity: %v", err)
		}
		if err := c.Create(context.Background(), pod, client.DryRunAll); err != nil {
			t.Fatalf("restricted namespace refused the crawler Pod: %v", err)
		}
		if msgs := w.Take(); len(msgs) > 0 {
			t.Errorf("warnings: %s", strings.Join(msgs, "; "))
		}
	})
}
