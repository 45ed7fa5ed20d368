package flux

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/hack/gitserver"
)

// The repository the GitOps examples name; on this machine it is a copy
// served by the Git server.
const upstreamURL = "https://github.com/lohisoft/crawl-operator"

// Paths of the fleet repository, laid out as docs/gitops says (Flux's own
// examples' layout), and the directory of the sites it adds.
const (
	InfraPath   = "infrastructure/crawl-operator"
	ClusterPath = "clusters/dev"
	SitesPath   = "sites"
)

// Fleet is the Git side of the GitOps flow, served by a Git server:
//   - crawl-operator.git: this repository's chart and samples, what the
//     examples' GitRepository crawl-operator points at;
//   - fleet.git: the repository Flux syncs (flux bootstrap's), holding
//     docs/gitops's two Flux files, only the chart repository's URL
//     changed, and a directory of sites.
type Fleet struct {
	Server *gitserver.Server
	// Work is the fleet repository's working copy: change files there,
	// then Commit.
	Work string
	// URL is fleet.git's, for the GitRepository flux-system.
	URL string
}

// NewFleet lays out and serves both repositories. sites are the first
// files of the sites directory (name → content).
func NewFleet(root string, s *gitserver.Server, work string, sites map[string]string) (*Fleet, error) {
	chart := filepath.Join(work, "crawl-operator")
	for _, d := range []string{"charts", filepath.Join("config", "samples")} {
		if err := os.CopyFS(filepath.Join(chart, d), os.DirFS(filepath.Join(root, d))); err != nil {
			return nil, err
		}
	}
	chartURL, err := s.Init("crawl-operator", chart, "crawl-operator at the commit under test")
	if err != nil {
		return nil, err
	}
	release, err := os.ReadFile(filepath.Join(root, "docs", "gitops", "flux-helmrelease.yaml"))
	if err != nil {
		return nil, err
	}
	release, err = WithRepoURL(release, chartURL)
	if err != nil {
		return nil, err
	}
	kustomizations, err := os.ReadFile(filepath.Join(root, "docs", "gitops", "flux-kustomizations.yaml"))
	if err != nil {
		return nil, err
	}
	f := &Fleet{Server: s, Work: filepath.Join(work, "fleet")}
	files := map[string][]byte{
		filepath.Join(InfraPath, "flux-helmrelease.yaml"):      release,
		filepath.Join(ClusterPath, "flux-kustomizations.yaml"): kustomizations,
	}
	for name, body := range sites {
		files[filepath.Join(SitesPath, name)] = []byte(body)
	}
	for name, body := range files {
		if err := f.Write(name, body); err != nil {
			return nil, err
		}
	}
	if f.URL, err = s.Init("fleet", f.Work, "flux bootstrap: crawl-operator from docs/gitops"); err != nil {
		return nil, err
	}
	return f, nil
}

// Write puts a file into the fleet's working copy.
func (f *Fleet) Write(name string, body []byte) error {
	p := filepath.Join(f.Work, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, body, 0o644)
}

// Remove deletes a file from the fleet's working copy.
func (f *Fleet) Remove(name string) error { return os.Remove(filepath.Join(f.Work, name)) }

// cosignSecret holds the example's public key.
const cosignSecret = "crawl-operator-cosign"

// chartTagRE is the release's tag in the example's OCIRepository, the one
// line a user changes to upgrade.
var chartTagRE = regexp.MustCompile(`(?m)^    tag: \S+$`)

// SetChartTag writes the release's version into the working copy's
// OCIRepository, as a user does to upgrade; Commit publishes it.
func (f *Fleet) SetChartTag(tag string) error {
	p := filepath.Join(f.Work, InfraPath, "flux-helmrelease.yaml")
	doc, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if n := len(chartTagRE.FindAll(doc, -1)); n != 1 {
		return fmt.Errorf("%s has %d lines `    tag: …`, want the OCIRepository's one", p, n)
	}
	return os.WriteFile(p, chartTagRE.ReplaceAll(doc, []byte("    tag: "+tag)), 0o644)
}

// Commit makes the working copy the next commit of fleet.git.
func (f *Fleet) Commit(message string) error { return f.Server.Commit("fleet", f.Work, message) }

// WithRepoURL points the examples' GitRepository at url: the one change
// the example needs on a machine that cannot reach GitHub.
func WithRepoURL(doc []byte, url string) ([]byte, error) {
	line := []byte("url: " + upstreamURL + "\n")
	if n := bytes.Count(doc, line); n != 1 {
		return nil, fmt.Errorf("the example names %s %d times, want once", upstreamURL, n)
	}
	return bytes.Replace(doc, line, []byte("url: "+url+"\n"), 1), nil
}

// Laptop is what a laptop cluster needs beyond the example, each applied
// as a patch by the bootstrap Kustomization, so the files in Git stay the
// example's.
type Laptop struct {
	// Values are merged into the HelmRelease's values (make demo-helm's
	// hack/demo/helm-values.yaml and the image tag).
	Values map[string]any
	// DSN replaces the example's placeholder DSN. Empty: the index is
	// SQLite with one manager, as on a machine without PostgreSQL.
	DSN string
	// Chart is where the chart is published here.
	Chart Chart
}

// Chart is the OCI repository of the chart on this machine: a registry on
// loopback (plain HTTP), and the public key its releases are signed with.
// Without a key (a working copy's chart, pushed unsigned by make
// demo-gitops) the OCIRepository verifies nothing.
type Chart struct {
	URL       string // oci://HOST:PORT/charts/crawl-operator
	PublicKey string // PEM, cosign.pub of the release
}

// LaptopValues reads a values file and sets the image tag.
func LaptopValues(valuesFile, imageTag string) (map[string]any, error) {
	b, err := os.ReadFile(valuesFile)
	if err != nil {
		return nil, err
	}
	v := map[string]any{}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", valuesFile, err)
	}
	image, _ := v["image"].(map[string]any)
	if image == nil {
		image = map[string]any{}
	}
	image["tag"] = imageTag
	v["image"] = image
	return v, nil
}

// Bootstrap are the objects `flux bootstrap --path=clusters/dev` makes in
// flux-system, the GitRepository flux-system of the fleet and the
// Kustomization flux-system that applies clusters/dev, with the laptop's
// differences as its patches: to the Kustomization crawl-operator, patches
// of the HelmRelease values and the DSN Secret; to crawl-sites, the fleet's
// sites directory instead of this repository's samples (whose example.com
// this machine cannot reach).
func Bootstrap(fleetURL string, l Laptop) ([]*unstructured.Unstructured, error) {
	values := deepCopy(l.Values)
	if l.DSN == "" {
		merge(values, map[string]any{
			"storage": map[string]any{"type": "sqlite"},
			"manager": map[string]any{"replicas": int64(1)},
		})
	}
	operatorPatches := []any{
		patch("helm.toolkit.fluxcd.io/v2", "HelmRelease", "crawl-operator", map[string]any{"spec": map[string]any{"values": values}}),
	}
	if l.DSN != "" {
		operatorPatches = append(operatorPatches,
			patch("v1", "Secret", "crawl-index-dsn", map[string]any{"stringData": map[string]any{"dsn": l.DSN}}))
	}
	source := map[string]any{"url": l.Chart.URL, "insecure": true}
	if l.Chart.PublicKey == "" {
		source["verify"] = nil
	} else {
		operatorPatches = append(operatorPatches,
			patch("v1", "Secret", cosignSecret, map[string]any{"stringData": map[string]any{"cosign.pub": l.Chart.PublicKey}}))
	}
	operatorPatches = append(operatorPatches,
		patch("source.toolkit.fluxcd.io/v1", "OCIRepository", "crawl-operator", map[string]any{"spec": source}))
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1",
		"kind":       "GitRepository",
		"metadata":   map[string]any{"name": "flux-system", "namespace": Namespace},
		"spec": map[string]any{
			"interval": "1m",
			"url":      fleetURL,
			"ref":      map[string]any{"branch": "main"},
		},
	}}
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": "flux-system", "namespace": Namespace},
		"spec": map[string]any{
			"interval":  "10m",
			"path":      "./" + ClusterPath,
			"prune":     true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"},
			"patches": []any{
				patch("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "crawl-operator", map[string]any{"spec": map[string]any{"patches": operatorPatches}}),
				patch("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "crawl-sites", map[string]any{"spec": map[string]any{
					"path":      "./" + SitesPath,
					"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"},
				}}),
			},
		},
	}}
	return []*unstructured.Unstructured{repo, ks}, nil
}

// patch is a Kustomization patch merging fields (spec, stringData, ...)
// into the named object.
func patch(apiVersion, kind, name string, fields map[string]any) map[string]any {
	doc := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	maps.Copy(doc, fields)
	return map[string]any{
		"target": map[string]any{"kind": kind, "name": name},
		"patch":  mustYAML(doc),
	}
}

func mustYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, numbers and bools always marshal
	}
	return string(b)
}

// merge copies src into dst, maps merged key by key.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sm, ok := v.(map[string]any); ok {
			v = deepCopy(sm)
		}
		out[k] = v
	}
	return out
}

// Describe writes the objects as YAML documents, as they were applied.
func Describe(objs []*unstructured.Unstructured) string {
	var b strings.Builder
	for _, u := range objs {
		y, _ := yaml.Marshal(map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
			"metadata": map[string]any{"name": u.GetName(), "namespace": u.GetNamespace()}, "spec": u.Object["spec"]})
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String()
}

// RequestReconcile asks source-controller to fetch the fleet now, as
// `flux reconcile source git flux-system` does; the Kustomizations follow
// a new revision by themselves.
func RequestReconcile(ctx context.Context, c client.Client) error {
	return RequestReconcileOf(ctx, c, "source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system")
}

// RequestReconcileOf asks Flux to reconcile one of its objects in
// flux-system now, as `flux reconcile` does.
func RequestReconcileOf(ctx context.Context, c client.Client, apiVersion, kind, name string) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(Namespace)
	u.SetName(name)
	p := fmt.Appendf(nil, `{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	return c.Patch(ctx, u, client.RawPatch(types.MergePatchType, p))
}
