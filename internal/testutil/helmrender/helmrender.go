// Package helmrender renders the project's Helm chart the way `helm
// template` does, with the Helm SDK and schema validation, for the tests
// that check the chart (test/chart) and run the operator under the RBAC it
// renders (test/rbac). Only tests import it.
package helmrender

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lohisoft/crawl-operator/internal/testenv"
)

// ChartPath is the chart's directory in the repository at root.
func ChartPath(root string) string { return filepath.Join(root, "charts", "crawl-operator") }

// Render is `helm template RELEASE -n NAMESPACE` of the chart in the
// repository at root, for the Kubernetes version of the test control plane.
func Render(root, release, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	kv, err := KubeVersion(root)
	if err != nil {
		return nil, err
	}
	return RenderFor(ChartPath(root), release, namespace, kv, vals)
}

// RenderFor renders the chart at chartPath for Kubernetes kv.
func RenderFor(chartPath, release, namespace string, kv *chartutil.KubeVersion, vals map[string]any) ([]*unstructured.Unstructured, error) {
	return render(chartPath, release, namespace, kv, vals, false)
}

// RenderWithHooksFor is RenderFor followed by the chart's hooks (the
// uninstall cleanup Job and its RBAC), as `helm template` prints them.
func RenderWithHooksFor(chartPath, release, namespace string, kv *chartutil.KubeVersion, vals map[string]any) ([]*unstructured.Unstructured, error) {
	return render(chartPath, release, namespace, kv, vals, true)
}

func render(chartPath, release, namespace string, kv *chartutil.KubeVersion, vals map[string]any, withHooks bool) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(chartPath)
	if err != nil {
		return nil, err
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	install := action.NewInstall(cfg)
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = release, namespace
	install.KubeVersion = kv
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return nil, err
	}
	manifest := rel.Manifest
	if withHooks {
		for _, h := range rel.Hooks {
			manifest += "\n---\n" + h.Manifest
		}
	}
	objs, err := testenv.Decode([]byte(manifest))
	if err != nil {
		return nil, fmt.Errorf("decode rendered manifest: %w", err)
	}
	return objs, nil
}

// KubeVersion is the version of the Kubernetes the tests run (the
// k8s.io/kubernetes that hack/toolbin builds bin/k8s from); the Helm
// SDK's own default (v1.20) is older than the chart's kubeVersion.
func KubeVersion(root string) (*chartutil.KubeVersion, error) {
	b, err := os.ReadFile(filepath.Join(root, "hack", "tools", "kube", "go.mod"))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "require" && f[1] == "k8s.io/kubernetes" {
			return chartutil.ParseKubeVersion(f[2])
		}
	}
	return nil, fmt.Errorf("no k8s.io/kubernetes in hack/tools/kube/go.mod")
}
