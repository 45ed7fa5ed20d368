package gitops

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// objRef names one object.
type objRef struct{ Kind, Namespace, Name string }

func (r objRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// platform is what installing the GitOps tools provides, and so what the
// examples may name without creating it. Nothing else.
var platform = map[objRef]string{
	{Kind: "Namespace", Name: "default"}:                                   "every cluster",
	{Kind: "Namespace", Name: "flux-system"}:                               "flux bootstrap",
	{Kind: "GitRepository", Namespace: "flux-system", Name: "flux-system"}: "flux bootstrap: the repository Flux syncs",
	{Kind: "Namespace", Name: "argocd"}:                                    "Argo CD's installation",
	{Kind: "AppProject", Namespace: "argocd", Name: "default"}:             "Argo CD's installation",
	{Kind: "ConfigMap", Namespace: "argocd", Name: "argocd-cm"}:            "Argo CD's installation (the example adds keys)",
}

// clusterScoped are the kinds the examples may hold that have no namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true, "Exclusion": true,
}

// refPath is a field that names another object. The field holds a name (a
// string) or a reference (a map with name and optionally namespace and
// kind). "[]" in a path stands for every item of a list.
type refPath struct {
	path string
	kind string // the kind named, unless the reference has its own kind field
}

// referencePaths lists, per kind, the fields of the examples' kinds that
// name other objects (Flux v2 and Argo CD v3 APIs).
var referencePaths = map[string][]refPath{
	"Kustomization": {
		{path: "spec.sourceRef"},
		{path: "spec.dependsOn[]", kind: "Kustomization"},
		{path: "spec.targetNamespace", kind: "Namespace"},
		{path: "spec.healthChecks[]"},
		{path: "spec.decryption.secretRef", kind: "Secret"},
		{path: "spec.kubeConfig.secretRef", kind: "Secret"},
		{path: "spec.postBuild.substituteFrom[]"},
	},
	"HelmRelease": {
		{path: "spec.chart.spec.sourceRef"},
		{path: "spec.chartRef"},
		{path: "spec.dependsOn[]", kind: "HelmRelease"},
		{path: "spec.valuesFrom[]"},
		{path: "spec.targetNamespace", kind: "Namespace"},
		{path: "spec.storageNamespace", kind: "Namespace"},
		{path: "spec.kubeConfig.secretRef", kind: "Secret"},
	},
	"GitRepository": {
		{path: "spec.secretRef", kind: "Secret"},
		{path: "spec.verify.secretRef", kind: "Secret"},
	},
	"HelmRepository": {
		{path: "spec.secretRef", kind: "Secret"},
		{path: "spec.certSecretRef", kind: "Secret"},
	},
	"OCIRepository": {
		{path: "spec.secretRef", kind: "Secret"},
		{path: "spec.certSecretRef", kind: "Secret"},
		{path: "spec.verify.secretRef", kind: "Secret"},
		{path: "spec.serviceAccountName", kind: "ServiceAccount"},
	},
	"Application": {
		{path: "spec.project", kind: "AppProject"},
		{path: "spec.destination.namespace", kind: "Namespace"},
	},
}

// walk calls visit with every value at path ("a.b[].c") in v.
func walk(v any, path string, visit func(any)) {
	var segs []string
	for _, s := range strings.Split(path, ".") {
		if name, ok := strings.CutSuffix(s, "[]"); ok {
			segs = append(segs, name, "[]")
		} else {
			segs = append(segs, s)
		}
	}
	var rec func(v any, segs []string)
	rec = func(v any, segs []string) {
		if v == nil {
			return
		}
		if len(segs) == 0 {
			visit(v)
			return
		}
		if segs[0] == "[]" {
			list, _ := v.([]any)
			for _, item := range list {
				rec(item, segs[1:])
			}
			return
		}
		if m, ok := v.(map[string]any); ok {
			rec(m[segs[0]], segs[1:])
		}
	}
	rec(v, segs)
}

func str(v any, fields ...string) string {
	m, _ := v.(map[string]any)
	s, _, _ := unstructured.NestedString(m, fields...)
	return s
}

// number is a YAML number, decoded as float64 or int64.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	}
	return 0, false
}

func boolean(v any, fields ...string) bool {
	m, _ := v.(map[string]any)
	b, _, _ := unstructured.NestedBool(m, fields...)
	return b
}

// checker finds references the examples make but do not satisfy.
type checker struct {
	set      exampleSet
	repoURL  string          // this repository, as the examples' sources name it
	group    string          // API group of this repository's CRDs
	chart    map[string]any  // the chart's default values
	version  string          // the chart's version: the release the examples install
	created  map[string]bool // namespaces the examples create
	problems []string
}

func newChecker(t *testing.T, set exampleSet) *checker {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(gomod), "\n", 2)[0], "module"))
	c := &checker{set: set, repoURL: "https://" + module, group: crdGroup(t), created: map[string]bool{}}
	b, err := os.ReadFile(filepath.Join(repoRoot, "charts", "crawl-operator", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &c.chart); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(repoRoot, "charts", "crawl-operator", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version string }
	if err := yaml.Unmarshal(b, &meta); err != nil || meta.Version == "" {
		t.Fatalf("Chart.yaml: no version (%v)", err)
	}
	c.version = meta.Version
	return c
}

// releaseVersion checks that an example installs the release of this
// checkout's chart, by its version or a digest (which cannot be checked
// here): an example left at an older release would install that.
func (c *checker) releaseVersion(d doc, field, v string) {
	if v != c.version && !strings.HasPrefix(v, "sha256:") {
		c.errorf(d, "%s %q is not the chart's version (%s in Chart.yaml): the example would install another release", field, v, c.version)
	}
}

// crdGroup is the API group of config/crd/bases.
func crdGroup(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	group := ""
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		g := str(crd, "spec", "group")
		if group != "" && g != group {
			t.Fatalf("two API groups in config/crd/bases: %s, %s", group, g)
		}
		group = g
	}
	if group == "" {
		t.Fatal("no CRD in config/crd/bases")
	}
	return group
}

func (c *checker) errorf(d doc, format string, args ...any) {
	c.problems = append(c.problems, d.String()+": "+fmt.Sprintf(format, args...))
}

func (c *checker) exists(r objRef) bool {
	if r.Kind == "Namespace" && c.created[r.Name] {
		return true
	}
	if _, ok := platform[r]; ok {
		return true
	}
	return c.set.find(r.Kind, r.Namespace, r.Name) != nil
}

// need reports a reference to an object that neither the examples nor the
// platform create, naming what has that name when it is of another kind.
func (c *checker) need(d doc, field string, r objRef) {
	if c.exists(r) {
		return
	}
	hint := ""
	for _, o := range c.set.docs {
		if o.obj.GetName() == r.Name && o.obj.GetKind() != r.Kind {
			hint = fmt.Sprintf(" (%s has that name, but %s names a %s)", o, field, r.Kind)
		}
	}
	if r.Kind == "Namespace" {
		c.errorf(d, "%s: namespace %q is not created by the examples%s", field, r.Name, hint)
		return
	}
	c.errorf(d, "%s names %s, which the examples do not create%s", field, r, hint)
}

// check runs every rule and returns the problems found, sorted.
func (c *checker) check() []string {
	for _, d := range c.set.docs {
		if d.obj.GetKind() == "Namespace" {
			c.created[d.obj.GetName()] = true
		}
	}
	for _, d := range c.set.docs {
		kind, ns := d.obj.GetKind(), d.obj.GetNamespace()
		switch {
		case clusterScoped[kind] && ns != "":
			c.errorf(d, "a cluster-scoped %s with a namespace", kind)
		case !clusterScoped[kind] && ns == "":
			c.errorf(d, "no metadata.namespace: it would land in whatever namespace applies it")
		case !clusterScoped[kind]:
			c.need(d, "metadata.namespace", objRef{Kind: "Namespace", Name: ns})
		}
		for _, rp := range referencePaths[kind] {
			if rp.path == "spec.destination.namespace" && syncOption(d.obj.Object, "CreateNamespace=true") {
				// Argo CD creates it for this Application only, when it syncs;
				// whatever else needs it needs a Namespace document.
				continue
			}
			walk(d.obj.Object, rp.path, func(v any) {
				r := objRef{Kind: rp.kind, Namespace: ns}
				switch v := v.(type) {
				case string:
					r.Name = v
				case map[string]any:
					r.Name = str(v, "name")
					if s := str(v, "namespace"); s != "" {
						r.Namespace = s
					}
					if s := str(v, "kind"); s != "" {
						r.Kind = s
					}
				}
				if r.Kind == "Namespace" || clusterScoped[r.Kind] {
					r.Namespace = ""
				}
				if r.Name == "" || r.Kind == "" {
					c.errorf(d, "%s: a reference without kind or name", rp.path)
					return
				}
				c.need(d, rp.path, r)
			})
		}
		switch kind {
		case "HelmRelease":
			c.helmRelease(d)
		case "Kustomization":
			c.kustomizationPath(d)
		case "Application":
			c.application(d)
		case "ConfigMap":
			if d.obj.GetName() == "argocd-cm" {
				c.argocdCM(d)
			}
		}
	}
	c.fluxOrder()
	sort.Strings(c.problems)
	return c.problems
}

func syncOption(app map[string]any, opt string) bool {
	found := false
	walk(app, "spec.syncPolicy.syncOptions[]", func(v any) { found = found || v == opt })
	return found
}

// gitRepository is the GitRepository a sourceRef names, and whether it is
// this repository (then paths in it can be checked in the work tree).
func (c *checker) gitRepository(owner doc, ref any) (d *doc, this bool) {
	if str(ref, "kind") != "GitRepository" {
		return nil, false
	}
	ns := str(ref, "namespace")
	if ns == "" {
		ns = owner.obj.GetNamespace()
	}
	d = c.set.find("GitRepository", ns, str(ref, "name"))
	if d == nil {
		return nil, false
	}
	return d, strings.TrimSuffix(str(d.obj.Object, "spec", "url"), ".git") == c.repoURL
}

// inRepo is a path of this repository in the work tree; false when it leaves it.
func inRepo(p string) (string, bool) {
	clean := filepath.Clean(strings.TrimPrefix(p, "/"))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false
	}
	return filepath.Join(repoRoot, clean), true
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func (c *checker) helmRelease(d doc) {
	o := d.obj.Object
	releaseNS := str(o, "spec", "targetNamespace")
	if releaseNS == "" {
		releaseNS = d.obj.GetNamespace()
	}
	dir, ok := c.releaseChart(d)
	if !ok {
		return
	}
	if !isDir(filepath.Join(dir, "crds")) {
		for _, action := range []string{"install", "upgrade"} {
			if p := str(o, "spec", action, "crds"); p != "" {
				c.errorf(d, "spec.%s.crds: %s acts only on a chart's crds/ folder, which %s does not have: "+
					"its CRDs are templates (value crds.enabled), applied with every install and upgrade", action, p, dir)
			}
		}
	}
	vals, _, _ := unstructured.NestedMap(o, "spec", "values")
	c.chartValues(d, "spec.values", merge(c.chart, vals), releaseNS)
}

// releaseChart is the directory of the chart a HelmRelease installs: this
// repository's, from a release (chartRef to an OCIRepository) or from Git;
// false when it cannot be told, or is another repository's.
func (c *checker) releaseChart(d doc) (string, bool) {
	o := d.obj.Object
	if ref, ok, _ := unstructured.NestedMap(o, "spec", "chartRef"); ok {
		return filepath.Join(repoRoot, "charts", "crawl-operator"), c.ociRelease(d, ref)
	}
	chart, _, _ := unstructured.NestedMap(o, "spec", "chart", "spec")
	src, this := c.gitRepository(d, chart["sourceRef"])
	if src == nil {
		return "", false
	}
	if s := str(chart, "reconcileStrategy"); s != "Revision" {
		if s == "" {
			s = "ChartVersion (the default)"
		}
		c.errorf(d, "spec.chart.spec.reconcileStrategy is %s for a chart from a GitRepository: "+
			"the chart's version does not change with each commit, so chart changes never roll out (use Revision)", s)
	}
	if !this {
		return "", false
	}
	dir, ok := inRepo(str(chart, "chart"))
	if !ok || !isDir(dir) {
		c.errorf(d, "spec.chart.spec.chart %q is no directory of %s", str(chart, "chart"), c.repoURL)
		return "", false
	}
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		c.errorf(d, "spec.chart.spec.chart %q has no Chart.yaml", str(chart, "chart"))
		return "", false
	}
	return dir, true
}

// releaseChartURL is where the project publishes its chart (make
// release-push to ghcr.io/lohisoft).
const releaseChartURL = "oci://ghcr.io/lohisoft/charts/crawl-operator"

// ociRelease checks a chartRef to the project's released chart: the
// OCIRepository exists, names the project's chart, selects the Helm
// chart layer and verifies the cosign signature with a public key the
// examples hold.
func (c *checker) ociRelease(d doc, ref map[string]any) bool {
	if str(ref, "kind") != "OCIRepository" {
		c.errorf(d, "spec.chartRef names a %s: the released chart is an OCIRepository", str(ref, "kind"))
		return false
	}
	ns := str(ref, "namespace")
	if ns == "" {
		ns = d.obj.GetNamespace()
	}
	src := c.set.find("OCIRepository", ns, str(ref, "name"))
	if src == nil {
		return false // c.need reports the missing reference
	}
	o := src.obj.Object
	if url := str(o, "spec", "url"); url != releaseChartURL {
		c.errorf(*src, "spec.url %q is not the project's released chart (%s)", url, releaseChartURL)
		return false
	}
	c.releaseVersion(*src, "spec.ref.tag", str(o, "spec", "ref", "tag"))
	if mt := str(o, "spec", "layerSelector", "mediaType"); mt != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" {
		c.errorf(*src, "spec.layerSelector.mediaType %q: a HelmRelease needs the chart's layer (application/vnd.cncf.helm.chart.content.v1.tar+gzip)", mt)
	}
	if str(o, "spec", "verify", "provider") != "cosign" {
		c.errorf(*src, "no spec.verify with provider cosign: Flux would install a chart nobody checked was the project's")
		return true
	}
	name := str(o, "spec", "verify", "secretRef", "name")
	if s := c.set.find("Secret", ns, name); s != nil {
		keys, _, _ := unstructured.NestedMap(s.obj.Object, "stringData")
		data, _, _ := unstructured.NestedMap(s.obj.Object, "data")
		maps.Copy(keys, data)
		if !slices.ContainsFunc(slices.Collect(maps.Keys(keys)), func(k string) bool { return strings.HasSuffix(k, ".pub") }) {
			c.errorf(*src, "spec.verify.secretRef: Secret %s/%s has no key ending in .pub, where Flux reads cosign public keys", ns, name)
		}
	}
	return true
}

// merge returns base with over's keys set recursively (lists are replaced).
func merge(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				out[k] = merge(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// chartValues checks what the chart's values name: the namespaces of the
// NetworkPolicies, the Secrets of the DSN, TLS and image pulls, and the
// kinds the chart would create that the cluster must know.
func (c *checker) chartValues(d doc, field string, vals map[string]any, releaseNS string) {
	if boolean(vals, "networkPolicy", "enabled") {
		walk(vals, "networkPolicy.crawlerNamespaces[]", func(v any) {
			ns, _ := v.(string)
			c.need(d, field+".networkPolicy.crawlerNamespaces", objRef{Kind: "Namespace", Name: ns})
		})
	}
	if str(vals, "storage", "type") == "postgres" {
		name, key := str(vals, "storage", "postgres", "existingSecret"), str(vals, "storage", "postgres", "secretKey")
		r := objRef{Kind: "Secret", Namespace: releaseNS, Name: name}
		c.need(d, field+".storage.postgres.existingSecret", r)
		if s := c.set.find("Secret", releaseNS, name); s != nil {
			data, _, _ := unstructured.NestedMap(s.obj.Object, "data")
			sdata, _, _ := unstructured.NestedMap(s.obj.Object, "stringData")
			if _, ok := data[key]; !ok {
				if _, ok := sdata[key]; !ok {
					c.errorf(d, "%s.storage.postgres.secretKey: %s has no key %q", field, r, key)
				}
			}
		}
	}
	if boolean(vals, "ingress", "enabled") {
		if name := str(vals, "ingress", "tlsSecretName"); name != "" {
			c.need(d, field+".ingress.tlsSecretName", objRef{Kind: "Secret", Namespace: releaseNS, Name: name})
		}
		if class := str(vals, "ingress", "className"); class != "" {
			c.need(d, field+".ingress.className", objRef{Kind: "IngressClass", Name: class})
		}
	}
	if boolean(vals, "serviceMonitor", "enabled") {
		c.errorf(d, "%s.serviceMonitor.enabled needs the Prometheus Operator's ServiceMonitor CRD, which the examples do not install", field)
	}
	walk(vals, "imagePullSecrets[]", func(v any) {
		c.need(d, field+".imagePullSecrets", objRef{Kind: "Secret", Namespace: releaseNS, Name: str(v, "name")})
	})
}

// kustomizationPath checks that spec.path exists: in this repository's work
// tree, or, in the repository Flux syncs, as the directory an example file
// says it goes to.
func (c *checker) kustomizationPath(d doc) {
	o := d.obj.Object
	path := str(o, "spec", "path")
	ref, _, _ := unstructured.NestedMap(o, "spec", "sourceRef")
	if _, this := c.gitRepository(d, ref); this {
		if dir, ok := inRepo(path); !ok || !isDir(dir) {
			c.errorf(d, "spec.path %q is no directory of %s", path, c.repoURL)
		}
		return
	}
	if str(ref, "name") == "flux-system" && str(ref, "kind") == "GitRepository" && len(c.fleetDocs(path)) == 0 {
		c.errorf(d, "spec.path %q: no example says it goes there (\"# Goes to: %s/ in the repository Flux syncs\")", path, path)
	}
}

// fleetDocs are the example documents committed to dir of the repository
// Flux syncs.
func (c *checker) fleetDocs(dir string) []doc {
	var out []doc
	for _, d := range c.set.docs {
		if to, ok := c.set.goesTo[d.file]; ok && filepath.Clean(to) == filepath.Clean(dir) {
			out = append(out, d)
		}
	}
	return out
}

// applies returns what a Kustomization applies, as far as the examples and
// this repository tell: example documents (Flux repository) or the
// manifests in a directory of this repository.
func (c *checker) applies(k doc) []*unstructured.Unstructured {
	o := k.obj.Object
	path := str(o, "spec", "path")
	ref, _, _ := unstructured.NestedMap(o, "spec", "sourceRef")
	if _, this := c.gitRepository(k, ref); this {
		dir, ok := inRepo(path)
		if !ok {
			return nil
		}
		return manifestsIn(dir)
	}
	var out []*unstructured.Unstructured
	for _, d := range c.fleetDocs(path) {
		out = append(out, d.obj)
	}
	return out
}

// manifestsIn reads the YAML manifests of a directory of this repository.
func manifestsIn(dir string) []*unstructured.Unstructured {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		objs, err := decodeAll(string(b))
		if err != nil {
			continue
		}
		out = append(out, objs...)
	}
	return out
}

func (c *checker) ownKinds(objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), c.group+"/") {
			return true
		}
	}
	return false
}

// fluxOrder: a Kustomization that applies CrawlTargets or Exclusions must
// depend (directly or not) on a Kustomization that applies the operator's
// HelmRelease and waits until it is Ready; a Kustomization can only depend
// on Kustomizations.
func (c *checker) fluxOrder() {
	operator := map[objRef]bool{}
	for _, k := range c.set.ofKind("Kustomization") {
		for _, o := range c.applies(k) {
			if o.GetKind() != "HelmRelease" {
				continue
			}
			hc := false
			walk(k.obj.Object, "spec.healthChecks[]", func(v any) {
				hc = hc || (str(v, "kind") == "HelmRelease" && str(v, "name") == o.GetName())
			})
			if !boolean(k.obj.Object, "spec", "wait") && !hc {
				c.errorf(k, "applies HelmRelease %s/%s but neither waits for it (spec.wait) nor health-checks it: "+
					"it is Ready before the operator is", o.GetNamespace(), o.GetName())
				continue
			}
			operator[objRef{"Kustomization", k.obj.GetNamespace(), k.obj.GetName()}] = true
		}
	}
	for _, k := range c.set.ofKind("Kustomization") {
		if !c.ownKinds(c.applies(k)) {
			continue
		}
		seen := map[objRef]bool{}
		var deps func(k doc) bool
		deps = func(k doc) bool {
			ok := false
			walk(k.obj.Object, "spec.dependsOn[]", func(v any) {
				ns := str(v, "namespace")
				if ns == "" {
					ns = k.obj.GetNamespace()
				}
				r := objRef{"Kustomization", ns, str(v, "name")}
				if seen[r] {
					return
				}
				seen[r] = true
				if operator[r] {
					ok = true
				} else if dep := c.set.find("Kustomization", ns, r.Name); dep != nil && deps(*dep) {
					ok = true
				}
			})
			return ok
		}
		if !deps(k) {
			c.errorf(k, "applies %s resources but depends on no Kustomization that waits for the operator's HelmRelease: "+
				"they may be applied before the CRDs exist", c.group)
		}
	}
}

func (c *checker) application(d doc) {
	o := d.obj.Object
	src, _, _ := unstructured.NestedMap(o, "spec", "source")
	vals, _, _ := unstructured.NestedMap(src, "helm", "valuesObject")
	if str(src, "repoURL") == releaseChartURL {
		c.releaseVersion(d, "spec.source.targetRevision", str(src, "targetRevision"))
		if p := str(src, "path"); p != "." {
			c.errorf(d, "spec.source.path %q: Argo CD reads an OCI Helm chart from the artifact's root (path: .)", p)
		}
		c.chartValues(d, "spec.source.helm.valuesObject", merge(c.chart, vals), str(o, "spec", "destination", "namespace"))
		return
	}
	if strings.TrimSuffix(str(src, "repoURL"), ".git") != c.repoURL {
		return
	}
	dir, ok := inRepo(str(src, "path"))
	if !ok || !isDir(dir) {
		c.errorf(d, "spec.source.path %q is no directory of %s", str(src, "path"), c.repoURL)
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err == nil {
		c.chartValues(d, "spec.source.helm.valuesObject", merge(c.chart, vals), str(o, "spec", "destination", "namespace"))
		return
	}
	// Argo CD has no dependencies between Applications: one that applies
	// CrawlTargets syncs before the chart's CRDs exist and must retry.
	if c.ownKinds(manifestsIn(dir)) {
		limit, found, _ := unstructured.NestedFieldNoCopy(o, "spec", "syncPolicy", "retry", "limit")
		if n, ok := number(limit); !found || !ok || n == 0 {
			c.errorf(d, "applies %s resources without spec.syncPolicy.retry: its first sync fails until the chart's CRDs exist, and is not retried", c.group)
		}
	}
}

// argocdCM checks the health check keys: resource.customizations.health.<group>_<kind>
// (split as Argo CD's settings manager does) naming a kind of this repository.
func (c *checker) argocdCM(d doc) {
	data, _, _ := unstructured.NestedStringMap(d.obj.Object, "data")
	kinds := crdKinds()
	for key := range data {
		parts := strings.SplitN(key, ".", 4)
		if len(parts) < 4 || parts[0]+"."+parts[1] != "resource.customizations" {
			continue
		}
		gk := strings.Split(parts[3], "_")
		if len(gk) != 2 || gk[0] != c.group || !kinds[gk[1]] {
			c.errorf(d, "data key %q names no kind of %s", key, c.group)
		}
	}
}

// crdKinds are the kinds of config/crd/bases.
func crdKinds() map[string]bool {
	out := map[string]bool{}
	for _, o := range manifestsIn(filepath.Join(repoRoot, "config", "crd", "bases")) {
		out[str(o.Object, "spec", "names", "kind")] = true
	}
	return out
}

// The examples name nothing they do not create, and are wired the way Flux
// and Argo CD need.
func TestExampleReferences(t *testing.T) {
	groups := loadExamples(t, examplesDir).groups()
	for _, tool := range []string{"flux", "argocd"} {
		if len(groups[tool].docs) == 0 {
			t.Errorf("no %s example", tool)
		}
	}
	for _, p := range checkAll(t, loadExamples(t, examplesDir)) {
		t.Error(p)
	}
}

// checkAll checks each tool's examples on their own: the Flux and the Argo
// CD example are alternatives, neither may rely on what the other creates.
func checkAll(t *testing.T, s exampleSet) []string {
	t.Helper()
	var out []string
	for _, g := range s.groups() {
		out = append(out, newChecker(t, g).check()...)
	}
	sort.Strings(out)
	return out
}

// The examples as they were before issue 10: the checker must find each of
// their faults (this is what the test would have said about them).
func TestCheckerRejectsTheOldExamples(t *testing.T) {
	problems := checkAll(t, loadExamples(t, brokenDir))
	for _, want := range []struct{ file, fault string }{
		{"flux-helmrelease.yaml", `spec.dependsOn[] names Kustomization flux-system/crawl-operator, which the examples do not create (HelmRelease crawl-system/crawl-operator`},
		{"flux-helmrelease.yaml", `applies crawl.lohisoft.com resources but depends on no Kustomization that waits`},
		{"flux-helmrelease.yaml", `HelmRelease crawl-system/crawl-operator (flux-helmrelease.yaml): metadata.namespace: namespace "crawl-system" is not created`},
		{"flux-helmrelease.yaml", `spec.targetNamespace: namespace "sites" is not created`},
		{"flux-helmrelease.yaml", `spec.values.networkPolicy.crawlerNamespaces: namespace "sites" is not created`},
		{"flux-helmrelease.yaml", `reconcileStrategy is ChartVersion (the default)`},
		{"flux-helmrelease.yaml", `spec.install.crds: CreateReplace acts only on a chart's crds/ folder`},
		{"flux-helmrelease.yaml", `spec.upgrade.crds: CreateReplace acts only on a chart's crds/ folder`},
		{"flux-helmrelease.yaml", `existingSecret names Secret crawl-system/crawl-index-dsn, which the examples do not create`},
		{"flux-helmrelease.yaml", `tlsSecretName names Secret crawl-system/lohisoft-com-tls`},
		{"flux-helmrelease.yaml", `serviceMonitor.enabled needs the Prometheus Operator`},
		{"argocd-application.yaml", `spec.source.helm.valuesObject.networkPolicy.crawlerNamespaces: namespace "sites" is not created`},
		{"argocd-application.yaml", `spec.source.helm.valuesObject.storage.postgres.existingSecret names Secret crawl-system/crawl-index-dsn`},
	} {
		found := false
		for _, p := range problems {
			found = found || (strings.Contains(p, "("+want.file+")") && strings.Contains(p, want.fault))
		}
		if !found {
			t.Errorf("the checker did not find in the old %s: %s\nit found:\n  %s", want.file, want.fault, strings.Join(problems, "\n  "))
		}
	}
}

// Each rule also bites on the fixed examples: break one thing at a time.
func TestCheckerCatchesEachBreakage(t *testing.T) {
	for name, tt := range map[string]struct {
		mutate func(t *testing.T, s *exampleSet)
		want   string
	}{
		"sites namespace dropped": {func(t *testing.T, s *exampleSet) {
			drop(t, s, "Namespace", "", "sites")
		}, `namespace "sites" is not created`},
		"crawl-system namespace dropped": {func(t *testing.T, s *exampleSet) {
			drop(t, s, "Namespace", "", "crawl-system")
		}, `namespace "crawl-system" is not created`},
		"DSN Secret dropped": {func(t *testing.T, s *exampleSet) {
			drop(t, s, "Secret", "crawl-system", "crawl-index-dsn")
		}, `existingSecret names Secret crawl-system/crawl-index-dsn`},
		"DSN Secret without its key": {func(t *testing.T, s *exampleSet) {
			for _, d := range s.ofKind("Secret") {
				unstructured.RemoveNestedField(d.obj.Object, "stringData")
				unstructured.RemoveNestedField(d.obj.Object, "data")
			}
		}, `has no key "dsn"`},
		"sites depend on a HelmRelease": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Kustomization", "crawl-sites", []any{map[string]any{"name": "crawl-operator", "namespace": "crawl-system"}}, "spec", "dependsOn")
		}, `names Kustomization crawl-system/crawl-operator`},
		"sites depend on nothing": {func(t *testing.T, s *exampleSet) {
			unstructured.RemoveNestedField(get(t, s, "Kustomization", "crawl-sites").Object, "spec", "dependsOn")
		}, `depends on no Kustomization that waits`},
		"operator Kustomization does not wait": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Kustomization", "crawl-operator", false, "spec", "wait")
		}, `neither waits for it`},
		"operator Kustomization points elsewhere": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Kustomization", "crawl-operator", "./infrastructure/other", "spec", "path")
		}, `no example says it goes there`},
		"sites path missing": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Kustomization", "crawl-sites", "./config/no-such-dir", "spec", "path")
		}, `is no directory of`},
		"chart not verified": {func(t *testing.T, s *exampleSet) {
			unstructured.RemoveNestedField(get(t, s, "OCIRepository", "crawl-operator").Object, "spec", "verify")
		}, `no spec.verify with provider cosign`},
		"cosign Secret dropped": {func(t *testing.T, s *exampleSet) {
			drop(t, s, "Secret", "flux-system", "crawl-operator-cosign")
		}, `names Secret flux-system/crawl-operator-cosign`},
		"cosign Secret without a public key": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Secret", "crawl-operator-cosign", map[string]any{"cosign.key": "x"}, "stringData")
		}, `has no key ending in .pub`},
		"another chart": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "OCIRepository", "crawl-operator", "oci://ghcr.io/someone/charts/crawl-operator", "spec", "url")
		}, `is not the project's released chart`},
		"the image layer instead of the chart's": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "OCIRepository", "crawl-operator", "application/vnd.oci.image.layer.v1.tar+gzip", "spec", "layerSelector", "mediaType")
		}, `needs the chart's layer`},
		"OCIRepository source missing": {func(t *testing.T, s *exampleSet) {
			drop(t, s, "OCIRepository", "flux-system", "crawl-operator")
		}, `names OCIRepository flux-system/crawl-operator`},
		"crds policy": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "HelmRelease", "crawl-operator", "CreateReplace", "spec", "upgrade", "crds")
		}, `spec.upgrade.crds: CreateReplace acts only`},
		"GitRepository source missing": {func(t *testing.T, s *exampleSet) {
			drop(t, s, "GitRepository", "flux-system", "crawl-operator")
		}, `names GitRepository flux-system/crawl-operator`},
		"Application path wrong": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Application", "crawl-sites", "config/sample", "spec", "source", "path")
		}, `spec.source.path "config/sample" is no directory`},
		"Application chart path wrong": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Application", "crawl-operator", "charts/crawl-operator", "spec", "source", "path")
		}, `spec.source.path "charts/crawl-operator": Argo CD reads an OCI Helm chart from the artifact's root`},
		"Application at an older release": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Application", "crawl-operator", "0.1.0", "spec", "source", "targetRevision")
		}, `spec.source.targetRevision "0.1.0" is not the chart's version`},
		"OCIRepository at an older release": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "OCIRepository", "crawl-operator", "0.1.0", "spec", "ref", "tag")
		}, `spec.ref.tag "0.1.0" is not the chart's version`},
		"sites Application without retry": {func(t *testing.T, s *exampleSet) {
			unstructured.RemoveNestedField(get(t, s, "Application", "crawl-sites").Object, "spec", "syncPolicy", "retry")
		}, `without spec.syncPolicy.retry`},
		"Application in an unknown project": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "Application", "crawl-operator", "crawl", "spec", "project")
		}, `names AppProject argocd/crawl`},
		"health check for a kind that does not exist": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "ConfigMap", "argocd-cm", "return nil", "data", "resource.customizations.health.crawl.lohisoft.com_Crawltarget")
		}, `names no kind of crawl.lohisoft.com`},
		"ServiceMonitor turned on": {func(t *testing.T, s *exampleSet) {
			setField(t, s, "HelmRelease", "crawl-operator", true, "spec", "values", "serviceMonitor", "enabled")
		}, `ServiceMonitor CRD`},
	} {
		t.Run(name, func(t *testing.T) {
			s := loadExamples(t, examplesDir)
			tt.mutate(t, &s)
			problems := checkAll(t, s)
			for _, p := range problems {
				if strings.Contains(p, tt.want) {
					return
				}
			}
			t.Errorf("no problem mentions %q; found:\n  %s", tt.want, strings.Join(problems, "\n  "))
		})
	}
}

func get(t *testing.T, s *exampleSet, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, d := range s.docs {
		if d.obj.GetKind() == kind && d.obj.GetName() == name {
			return d.obj
		}
	}
	t.Fatalf("the examples have no %s %s", kind, name)
	return nil
}

func setField(t *testing.T, s *exampleSet, kind, name string, value any, fields ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(get(t, s, kind, name).Object, value, fields...); err != nil {
		t.Fatal(err)
	}
}

func drop(t *testing.T, s *exampleSet, kind, namespace, name string) {
	t.Helper()
	for i, d := range s.docs {
		if d.obj.GetKind() == kind && d.obj.GetNamespace() == namespace && d.obj.GetName() == name {
			s.docs = append(s.docs[:i:i], s.docs[i+1:]...)
			return
		}
	}
	t.Fatalf("the examples have no %s %s/%s", kind, namespace, name)
}
