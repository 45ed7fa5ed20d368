package gitops

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/testenv"
)

// apiServer starts a real kube-apiserver and etcd with this repository's
// CRDs and the vendored Flux and Argo CD CRDs, and creates the namespaces
// the GitOps tools' installation creates (see platform).
func apiServer(t *testing.T) (client.Client, *testenv.Warnings, string) {
	t.Helper()
	c, w := testenv.StartServer(t, repoRoot, filepath.Join("testdata", "crds"))
	for r := range platform {
		if r.Kind == "Namespace" && r.Name != "default" {
			if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Name}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c, w, filepath.Join(testenv.MustAssets(t, repoRoot), "kubectl")
}

// apply server-side applies obj, for real or as a dry run, with strict field
// validation, and returns the API server's warnings and error.
func apply(c client.Client, w *testenv.Warnings, obj *unstructured.Unstructured, dryRun bool) ([]string, error) {
	opts := []client.PatchOption{client.ForceOwnership, client.FieldOwner("gitops-test"), client.FieldValidation("Strict")}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	err := c.Patch(context.Background(), obj.DeepCopy(), client.Apply, opts...)
	return w.Take(), err
}

// The API server, with the current Flux and Argo CD CRDs, accepts every
// document of the examples, and what the sites Kustomization and
// Application apply from this repository.
func TestExamplesServerSideDryRun(t *testing.T) {
	c, w, kubectl := apiServer(t)
	examples := loadExamples(t, examplesDir)

	// Before any example namespace exists: the old Flux example, which
	// created none, is refused (its HelmRelease lives in crawl-system).
	refused := false
	for _, d := range loadExamples(t, brokenDir).docs {
		_, err := apply(c, w, d.obj, true)
		refused = refused || (d.obj.GetKind() == "HelmRelease" && err != nil && strings.Contains(err.Error(), `namespaces "crawl-system" not found`))
	}
	if !refused {
		t.Error("the old Flux example's HelmRelease was not refused for want of its namespace")
	}

	// The examples create their namespaces themselves: apply those for real
	// first (Flux and kubectl apply namespaces before anything else).
	for _, d := range examples.ofKind("Namespace") {
		if warns, err := apply(c, w, d.obj, false); err != nil || len(warns) > 0 {
			t.Fatalf("%s refused: %v %v", d, err, warns)
		}
	}
	n := 0
	for _, d := range examples.docs {
		if d.obj.GetKind() == "Namespace" {
			continue
		}
		n++
		warns, err := apply(c, w, d.obj, true)
		if err != nil {
			t.Errorf("%s refused: %v", d, err)
		}
		for _, msg := range warns {
			t.Errorf("%s: API server warning: %s", d, msg)
		}
	}
	if n < 8 {
		t.Errorf("only %d documents applied", n)
	}

	// The samples, as kustomize-controller builds them for crawl-sites
	// (kustomize with the target namespace, which it also writes into the
	// cluster-scoped Exclusion) and as Argo CD applies them (namespaced
	// objects only get the destination namespace).
	for _, k := range examples.ofKind("Kustomization") {
		if str(k.obj.Object, "spec", "sourceRef", "name") != "crawl-operator" {
			continue
		}
		dir, ok := inRepo(str(k.obj.Object, "spec", "path"))
		if !ok {
			t.Fatalf("%s: path leaves the repository", k)
		}
		objs := kustomize(t, kubectl, dir, str(k.obj.Object, "spec", "targetNamespace"))
		for _, o := range objs {
			if warns, err := apply(c, w, o, true); err != nil || len(warns) > 0 {
				t.Errorf("%s applies %s %s/%s, refused: %v %v", k, o.GetKind(), o.GetNamespace(), o.GetName(), err, warns)
			}
		}
	}
	for _, a := range examples.ofKind("Application") {
		dir, ok := inRepo(str(a.obj.Object, "spec", "source", "path"))
		if !ok {
			t.Fatalf("%s: path leaves the repository", a)
		}
		if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err != nil {
			continue // the chart: test/chart renders and dry-runs it
		}
		for _, o := range kustomize(t, kubectl, dir, "") {
			namespaced, err := c.IsObjectNamespaced(o)
			if err != nil {
				t.Fatal(err)
			}
			if namespaced && o.GetNamespace() == "" {
				o.SetNamespace(str(a.obj.Object, "spec", "destination", "namespace"))
			}
			if warns, err := apply(c, w, o, true); err != nil || len(warns) > 0 {
				t.Errorf("%s applies %s %s/%s, refused: %v %v", a, o.GetKind(), o.GetNamespace(), o.GetName(), err, warns)
			}
		}
	}

	// The API server checks these documents against the vendored schemas,
	// not just their syntax: a misspelt field, a value outside an enum, and
	// a Kustomization depending on another kind are refused.
	for name, tt := range map[string]struct {
		kind, name string
		fields     []string
		value      any
		refusal    string
	}{
		"misspelt field": {"HelmRelease", "crawl-operator", []string{"spec", "chart", "spec", "reconcileStrategie"}, "Revision",
			".spec.chart.spec.reconcileStrategie: field not declared in schema"},
		"value outside an enum": {"HelmRelease", "crawl-operator", []string{"spec", "chart", "spec", "reconcileStrategy"}, "Always",
			`spec.chart.spec.reconcileStrategy: Unsupported value: "Always"`},
		"dependsOn naming a kind": {"Kustomization", "crawl-sites", []string{"spec", "dependsOn"}, []any{map[string]any{"kind": "HelmRelease", "name": "crawl-operator"}},
			".spec.dependsOn[0].kind: field not declared in schema"},
		"destination of wrong type": {"Application", "crawl-operator", []string{"spec", "destination", "namespace"}, int64(3),
			".spec.destination.namespace: expected string"},
	} {
		bad := get(t, &examples, tt.kind, tt.name).DeepCopy()
		if err := unstructured.SetNestedField(bad.Object, tt.value, tt.fields...); err != nil {
			t.Fatal(err)
		}
		if warns, err := apply(c, w, bad, true); err == nil || !strings.Contains(err.Error(), tt.refusal) {
			t.Errorf("%s: not refused with %q: %v (warnings %v)", name, tt.refusal, err, warns)
		}
	}
}

// kustomize builds dir as kustomize does, with namespace set when not empty.
func kustomize(t *testing.T, kubectl, dir, namespace string) []*unstructured.Unstructured {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	build := abs
	if namespace != "" {
		build = t.TempDir()
		rel, err := filepath.Rel(build, abs)
		if err != nil {
			t.Fatal(err)
		}
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + namespace + "\nresources:\n- " + rel + "\n"
		if err := os.WriteFile(filepath.Join(build, "kustomization.yaml"), []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(kubectl, "kustomize", build).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("kubectl kustomize %s: %v %s", dir, err, strings.TrimSpace(msg))
	}
	objs, err := decodeAll(string(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("kubectl kustomize %s: nothing", dir)
	}
	return objs
}
