// Package chart tests the Helm chart with the Helm SDK: lint, rendering
// with defaults and with every optional feature, schema rejection of bad
// values, and a server-side dry-run of everything rendered (the chart and
// config/default) against a real API server.
package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/internal/operator"
	"github.com/lohisoft/crawl-operator/internal/testutil/helmrender"
)

var (
	repoRoot  = filepath.Join("..", "..")
	chartPath = helmrender.ChartPath(repoRoot)
)

const releaseNamespace = "crawl-system"

// allFeatures turns every optional feature on.
func allFeatures() map[string]any {
	return map[string]any{
		"manager":         map[string]any{"replicas": 2},
		"storage":         map[string]any{"type": "postgres", "postgres": map[string]any{"existingSecret": "pg-dsn"}},
		"ingress":         map[string]any{"enabled": true, "className": "nginx", "tlsSecretName": "lohisoft-tls"},
		"serviceMonitor":  map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
		"prometheusRule":  map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
		"dashboards":      map[string]any{"enabled": true},
		"networkPolicy":   map[string]any{"crawlerNamespaces": []any{"default", "sites"}},
		"watchNamespaces": []any{"default", "sites"},
		"egress": map[string]any{"nodeLabel": "pool=egress", "nodeTaint": "dedicated=crawler:NoExecute",
			"echoURL": "https://echo.bot.lohisoft.com/ip", "quarantine": "2m"},
	}
}

// render renders the chart as `helm template` does, with schema validation.
func render(t *testing.T, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderRelease(t, "crawl", releaseNamespace, vals)
}

// renderRelease is `helm template NAME -n NAMESPACE --kube-version` the
// version of the test control plane (bin/k8s).
func renderRelease(t *testing.T, name, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderFor(t, name, namespace, kubeVersion(t), vals)
}

func renderFor(t *testing.T, name, namespace string, kv *chartutil.KubeVersion, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return helmrender.RenderFor(chartPath, name, namespace, kv, vals)
}

func kubeVersion(t *testing.T) *chartutil.KubeVersion {
	t.Helper()
	kv, err := helmrender.KubeVersion(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// loadSchema reads values.schema.json.
func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartPath, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	return schema
}

func mustRender(t *testing.T, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(t, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if err == io.EOF {
				return out
			}
			t.Fatalf("decode rendered manifest: %v", err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	return nil
}

func count(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

func managerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	dep := find(objs, "Deployment", "")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

func TestRenderDefaults(t *testing.T) {
	objs := mustRender(t, nil)
	if n := count(objs, "CustomResourceDefinition"); n != 3 {
		t.Errorf("%d CRDs rendered, want 3", n)
	}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s lacks the keep policy", o.GetName())
		}
	}
	for _, kind := range []string{"Ingress", "ServiceMonitor"} {
		if find(objs, kind, "") != nil {
			t.Errorf("%s rendered although it is off by default", kind)
		}
	}
	if find(objs, "PersistentVolumeClaim", "crawl-crawl-operator-index") == nil {
		t.Error("SQLite PVC missing")
	}
	dep := find(objs, "Deployment", "crawl-crawl-operator")
	if s, _, _ := unstructured.NestedString(dep.Object, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("SQLite Deployment strategy %q, want Recreate (one writer)", s)
	}
	args := strings.Join(managerArgs(t, objs), " ")
	for _, want := range []string{
		"--leader-elect=true", "--storage=sqlite:///data/index.db",
		"--results-url=http://crawl-crawl-operator-results.crawl-system.svc:8083",
		"--crawler-image=ghcr.io/lohisoft/crawl-operator:0.2.0", "--max-crawls-per-node=4",
		"--require-egress-fcrdns=true", "--expected-egress-ips=79.139.58.98,79.139.58.121",
		"--crawler-user-agent=LohiSoftBot/1.0 (+https://lohisoft.com/bot)",
		"--bot-legacy-user-agents=LohiSoftBot/1.0 (+message@lohisoft.com)",
		"--bot-hostname-suffix=.bot.lohisoft.com", "--bot-ips-url=https://lohisoft.com/bot/ips.json",
		"--egress-node-label=crawl.lohisoft.com/egress=true", "--egress-node-taint=crawl.lohisoft.com/egress=true:NoSchedule",
		"--crawler-cpu-request=50m", "--crawler-memory-request=64Mi", "--crawler-cpu-limit=500m", "--crawler-memory-limit=256Mi",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("manager args lack %q:\n%s", want, args)
		}
	}
	np := find(objs, "NetworkPolicy", "")
	if np == nil || np.GetNamespace() != "default" {
		t.Fatalf("crawler NetworkPolicy missing in default: %v", np)
	}
}

// A released chart pins its image by digest (image.digest, set by make
// release): the manager and every crawler Pod run exactly that image,
// whatever the tag points at; a user who names another tag runs that tag.
func TestImageDigest(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	tests := map[string]struct {
		image map[string]any
		want  string
	}{
		"chart's own tag, pinned":              {map[string]any{"digest": digest}, "ghcr.io/lohisoft/crawl-operator:0.2.0@" + digest},
		"a mirror keeps the pin":               {map[string]any{"digest": digest, "repository": "mirror.example.com/crawl"}, "mirror.example.com/crawl:0.2.0@" + digest},
		"another tag drops the pin":            {map[string]any{"digest": digest, "tag": "1.2.3"}, "ghcr.io/lohisoft/crawl-operator:1.2.3"},
		"no digest: by tag (the working copy)": {map[string]any{}, "ghcr.io/lohisoft/crawl-operator:0.2.0"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			objs := mustRender(t, map[string]any{"image": tt.image})
			dep := find(objs, "Deployment", "")
			containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
			if got := containers[0].(map[string]any)["image"]; got != tt.want {
				t.Errorf("manager image %v, want %s", got, tt.want)
			}
			if got, err := arg("crawler-image")(objs); err != nil || got != tt.want {
				t.Errorf("--crawler-image=%v (%v), want %s", got, err, tt.want)
			}
		})
	}
}

func TestRenderAllFeatures(t *testing.T) {
	objs := mustRender(t, allFeatures())
	if find(objs, "PersistentVolumeClaim", "") != nil {
		t.Error("PVC rendered for PostgreSQL")
	}
	dep := find(objs, "Deployment", "")
	if r, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); fmt.Sprint(r) != "2" {
		t.Errorf("replicas = %v", r)
	}
	checkDSNFromSecret(t, objs, "pg-dsn", "dsn")
	ing := find(objs, "Ingress", "")
	if ing == nil {
		t.Fatal("no Ingress")
	}
	rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
	paths, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "http", "paths")
	var got []string
	for _, p := range paths {
		pm := p.(map[string]any)
		got = append(got, fmt.Sprint(pm["path"], " ", pm["pathType"]))
	}
	if strings.Join(got, ",") != "/bot/ips.json Exact,/bot Exact" {
		t.Errorf("Ingress exposes %v, want only /bot and /bot/ips.json", got)
	}
	if find(objs, "ServiceMonitor", "") == nil {
		t.Error("no ServiceMonitor")
	}
	if n := count(objs, "NetworkPolicy"); n != 2 {
		t.Errorf("%d NetworkPolicies, want one per crawler namespace", n)
	}
}

// The crawler Pod values reach the manager's flags; a resource set to null
// is passed empty, which removes the binary's default, and the optional
// settings pass no flag when unset.
func TestCrawlerPodValues(t *testing.T) {
	objs := mustRender(t, map[string]any{"crawler": map[string]any{
		"resources":        map[string]any{"requests": map[string]any{"cpu": 0.25}, "limits": map[string]any{"cpu": nil, "memory": "1Gi"}},
		"imagePullSecrets": []any{map[string]any{"name": "registry"}},
	}})
	for flag, want := range map[string]string{
		"crawler-cpu-request": "0.25", "crawler-memory-request": "64Mi", "crawler-cpu-limit": "", "crawler-memory-limit": "1Gi",
		"crawler-image-pull-secrets": "registry",
	} {
		if got, err := arg(flag)(objs); err != nil || got != want {
			t.Errorf("--%s = %v (%v), want %q", flag, got, err, want)
		}
	}
	for _, flag := range []string{"crawler-priority-class-name", "crawler-pod-labels", "crawler-pod-annotations"} {
		if got, err := arg(flag)(objs); err == nil {
			t.Errorf("--%s=%v passed although unset", flag, got)
		}
	}
}

// The manager's throughput values reach its flags, a fractional and a
// large QPS included.
func TestManagerThroughputValues(t *testing.T) {
	// Helm renders a large number as 1e+06: the flag must still parse it.
	for _, qps := range []float64{12.5, 1e6} {
		o := managerOptions(t, find(mustRender(t, map[string]any{"manager": map[string]any{
			"maxConcurrentReconciles": 8, "kubeAPIQPS": qps, "kubeAPIBurst": 40,
		}}), "Deployment", ""))
		if m := o.Manager; m.MaxConcurrentReconciles != 8 || m.KubeAPIQPS != qps || m.KubeAPIBurst != 40 {
			t.Errorf("manager options %d reconciles, %v QPS, %d burst; want 8, %v, 40", m.MaxConcurrentReconciles, m.KubeAPIQPS, m.KubeAPIBurst, qps)
		}
	}
	d := managerOptions(t, find(mustRender(t, nil), "Deployment", ""))
	if m := d.Manager; m.MaxConcurrentReconciles != operator.DefaultMaxConcurrentReconciles || m.KubeAPIQPS != operator.DefaultKubeAPIQPS || m.KubeAPIBurst != operator.DefaultKubeAPIBurst {
		t.Errorf("chart defaults give %d reconciles, %v QPS, %d burst; the manager's defaults are %d, %v, %d", m.MaxConcurrentReconciles, m.KubeAPIQPS, m.KubeAPIBurst,
			operator.DefaultMaxConcurrentReconciles, operator.DefaultKubeAPIQPS, operator.DefaultKubeAPIBurst)
	}
}

// The readiness probe leaves the index check out unless asked (issue 14:
// an index outage must not take /bot and the results endpoint down).
func TestReadinessIncludesIndex(t *testing.T) {
	for include, want := range map[any]string{nil: "/readyz?exclude=index", false: "/readyz?exclude=index", true: "/readyz"} {
		vals := map[string]any{}
		if include != nil {
			vals = manager(map[string]any{"readinessIncludesIndex": include})
		}
		got, err := field("Deployment", "spec", "template", "spec", "containers", 0, "readinessProbe", "httpGet", "path")(mustRender(t, vals))
		if err != nil || got != want {
			t.Errorf("readinessIncludesIndex=%v: probe path %v (%v), want %q", include, got, err, want)
		}
	}
	if _, err := render(t, manager(map[string]any{"readinessIncludesIndex": "yes"})); err == nil || !strings.Contains(err.Error(), "readinessIncludesIndex") {
		t.Errorf("readinessIncludesIndex=\"yes\": %v, want a schema error", err)
	}
}

// metrics.secure (default on): the manager checks scrapers with the API
// server, so it may create TokenReviews and SubjectAccessReviews, the chart
// ships the ClusterRole scrapers need, and the ServiceMonitor scrapes over
// HTTPS with Prometheus's token. Off, none of that.
func TestSecureMetrics(t *testing.T) {
	for _, secure := range []bool{true, false} {
		objs := mustRender(t, map[string]any{"metrics": map[string]any{"secure": secure}, "serviceMonitor": map[string]any{"enabled": true}})
		if got, err := arg("metrics-secure")(objs); err != nil || got != fmt.Sprint(secure) {
			t.Errorf("secure=%t: --metrics-secure=%v (%v)", secure, got, err)
		}
		reader := find(objs, "ClusterRole", "crawl-crawl-operator-metrics-reader")
		endpoint, _ := dig(find(objs, "ServiceMonitor", "").Object, "spec", "endpoints", 0)
		if !secure {
			if reader != nil {
				t.Error("secure=false: metrics-reader ClusterRole rendered")
			}
			if ep := endpoint.(map[string]any); ep["scheme"] != nil || ep["bearerTokenFile"] != nil {
				t.Errorf("secure=false: ServiceMonitor endpoint %s", jsonOf(ep))
			}
			continue
		}
		if reader == nil {
			t.Fatal("no metrics-reader ClusterRole")
		}
		if rules, _ := dig(reader.Object, "rules"); !sameJSON(rules, []any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}) {
			t.Errorf("metrics-reader rules %s", jsonOf(rules))
		}
		want := map[string]any{"port": "metrics", "interval": "30s", "scheme": "https",
			"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token", "tlsConfig": map[string]any{"insecureSkipVerify": true}}
		if !sameJSON(endpoint, want) {
			t.Errorf("ServiceMonitor endpoint %s, want %s", jsonOf(endpoint), jsonOf(want))
		}
		rules, _ := dig(find(objs, "ClusterRole", "crawl-crawl-operator").Object, "rules")
		for group, resource := range map[string]string{"authentication.k8s.io": "tokenreviews", "authorization.k8s.io": "subjectaccessreviews"} {
			if !strings.Contains(jsonOf(rules), fmt.Sprintf(`{"apiGroups":[%q],"resources":[%q],"verbs":["create"]}`, group, resource)) {
				t.Errorf("the manager may not create %s: %s", resource, jsonOf(rules))
			}
		}
	}
}

// The PostgreSQL DSN holds a password: it must reach the manager through
// its environment, from the Secret, and never through its arguments,
// which every process on the node can read (/proc/PID/cmdline).
func TestPostgresDSNNotInArgs(t *testing.T) {
	objs := mustRender(t, postgres(map[string]any{"existingSecret": "crawl-index-dsn", "secretKey": "url"}))
	checkDSNFromSecret(t, objs, "crawl-index-dsn", "url")
}

func checkDSNFromSecret(t *testing.T, objs []*unstructured.Unstructured, secret, key string) {
	t.Helper()
	for _, a := range managerArgs(t, objs) {
		if strings.HasPrefix(a, "--storage") || strings.Contains(a, "postgres") || strings.Contains(a, "$(CRAWL_STORAGE") {
			t.Errorf("manager argument %q names the DSN; it must come from the environment", a)
		}
	}
	env, err := field("Deployment", "spec", "template", "spec", "containers", 0, "env")(objs)
	if err != nil {
		t.Fatal(err)
	}
	var storage []any
	for _, e := range env.([]any) {
		if name := e.(map[string]any)["name"]; name == index.StorageEnv || strings.Contains(fmt.Sprint(name), "STORAGE") {
			storage = append(storage, e)
		}
	}
	want := []any{map[string]any{"name": index.StorageEnv,
		"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": key}}}}
	if !sameJSON(storage, want) {
		t.Errorf("manager storage env = %s, want %s", jsonOf(storage), jsonOf(want))
	}
}

func TestCrawlerNetworkPolicy(t *testing.T) {
	np := find(mustRender(t, nil), "NetworkPolicy", "")
	b, _ := yaml.Marshal(np.Object["spec"])
	spec := string(b)
	for _, want := range []string{"cidr: 0.0.0.0/0", "79.139.58.98/32", "79.139.58.121/32", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
		"100.64.0.0/10", "127.0.0.0/8", "port: 53", "port: 8083", "lohisoftbot-crawler", "- Ingress", "- Egress"} {
		if !strings.Contains(spec, want) {
			t.Errorf("NetworkPolicy lacks %q:\n%s", want, spec)
		}
	}
	if strings.Contains(spec, "::/0") {
		t.Error("crawlers may reach IPv6")
	}
}

// Every combination keeps every Pod restricted; the dry-run proves the
// same against the API server's Pod Security admission.
func TestEveryPodIsRestricted(t *testing.T) {
	for _, c := range combinations(t) {
		name := c.name
		// The uninstall hook's Job runs too.
		objs, err := helmrender.RenderWithHooksFor(chartPath, c.release, c.namespace, kubeVersion(t), c.values)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, o := range objs {
			spec, found, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			if !found {
				continue
			}
			psc, _ := spec["securityContext"].(map[string]any)
			for _, c := range spec["containers"].([]any) {
				sc := c.(map[string]any)["securityContext"].(map[string]any)
				seccomp, _ := sc["seccompProfile"].(map[string]any)
				if seccomp == nil {
					seccomp, _ = psc["seccompProfile"].(map[string]any)
				}
				caps, _ := sc["capabilities"].(map[string]any)
				if (psc["runAsNonRoot"] != true && sc["runAsNonRoot"] != true) || psc["runAsUser"] == int64(0) || sc["runAsUser"] == int64(0) ||
					(seccomp["type"] != "RuntimeDefault" && seccomp["type"] != "Localhost") ||
					sc["allowPrivilegeEscalation"] != false || sc["privileged"] == true || sc["readOnlyRootFilesystem"] != true ||
					!strings.Contains(fmt.Sprint(caps["drop"]), "ALL") || (caps["add"] != nil && fmt.Sprint(caps["add"]) != "[NET_BIND_SERVICE]") {
					t.Errorf("%s: %s %s not restricted: pod %v, container %v", name, o.GetKind(), o.GetName(), psc, sc)
				}
			}
		}
	}
}

func TestCRDsAreKeptOnlyWhenAsked(t *testing.T) {
	objs := mustRender(t, map[string]any{"crds": map[string]any{"keep": false}})
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && o.GetAnnotations()["helm.sh/resource-policy"] != "" {
			t.Errorf("CRD %s kept although crds.keep=false", o.GetName())
		}
	}
	if n := count(mustRender(t, map[string]any{"crds": map[string]any{"enabled": false}}), "CustomResourceDefinition"); n != 0 {
		t.Errorf("%d CRDs rendered with crds.enabled=false", n)
	}
}

// The chart carries copies of generated files; they must not drift.
func TestChartCopiesOfGeneratedFiles(t *testing.T) {
	pairs := map[string]string{"config/rbac/role.yaml": "charts/crawl-operator/files/rbac/role.yaml"}
	bases, _ := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if len(bases) != 3 {
		t.Fatalf("found %d CRDs in config/crd/bases", len(bases))
	}
	for _, b := range bases {
		rel, _ := filepath.Rel(repoRoot, b)
		pairs[rel] = filepath.Join("charts", "crawl-operator", "files", "crds", filepath.Base(b))
	}
	for src, dst := range pairs {
		a, err1 := os.ReadFile(filepath.Join(repoRoot, src))
		b, err2 := os.ReadFile(filepath.Join(repoRoot, dst))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: run `make manifests`", dst, src)
		}
	}
}

func manager(m map[string]any) map[string]any { return map[string]any{"manager": m} }

func postgres(pg map[string]any) map[string]any {
	return map[string]any{"storage": map[string]any{"type": "postgres", "postgres": pg}}
}

// With more than one replica, a PodDisruptionBudget keeps minAvailable
// managers through voluntary disruptions; with one it would block drains.
func TestPodDisruptionBudget(t *testing.T) {
	pg := func(m map[string]any) map[string]any {
		v := postgres(map[string]any{"existingSecret": "pg"})
		v["manager"] = m
		return v
	}
	if pdb := find(mustRender(t, nil), "PodDisruptionBudget", ""); pdb != nil {
		t.Error("PodDisruptionBudget with one replica")
	}
	if pdb := find(mustRender(t, pg(map[string]any{"replicas": 2, "podDisruptionBudget": map[string]any{"enabled": false}})), "PodDisruptionBudget", ""); pdb != nil {
		t.Error("PodDisruptionBudget although disabled")
	}
	for replicas, minAvailable := range map[int]int{2: 1, 5: 3} {
		objs := mustRender(t, pg(map[string]any{"replicas": replicas, "podDisruptionBudget": map[string]any{"minAvailable": minAvailable}}))
		pdb := find(objs, "PodDisruptionBudget", "crawl-crawl-operator")
		if pdb == nil {
			t.Fatalf("%d replicas: no PodDisruptionBudget", replicas)
		}
		spec, _ := dig(pdb.Object, "spec")
		want := map[string]any{"minAvailable": minAvailable, "selector": map[string]any{"matchLabels": map[string]any{
			"app.kubernetes.io/name": "crawl-operator", "app.kubernetes.io/instance": "crawl"}}}
		if !sameJSON(spec, want) {
			t.Errorf("%d replicas: PodDisruptionBudget spec %s, want %s", replicas, jsonOf(spec), jsonOf(want))
		}
	}
	// minAvailable = replicas is refused: TestRefusals, "PDB keeps every replica".
}

// Chart.yaml states the oldest Kubernetes it supports; Helm refuses older
// clusters and the test control plane satisfies it.
func TestKubeVersion(t *testing.T) {
	chrt, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	if chrt.Metadata.KubeVersion != ">=1.30.0-0" {
		t.Errorf("kubeVersion = %q", chrt.Metadata.KubeVersion)
	}
	if !chartutil.IsCompatibleRange(chrt.Metadata.KubeVersion, kubeVersion(t).String()) {
		t.Errorf("the test control plane %s does not satisfy kubeVersion %s", kubeVersion(t), chrt.Metadata.KubeVersion)
	}
	for v, ok := range map[string]bool{"v1.29.15": false, "v1.30.0": true, "v1.33.1-gke.100": true} {
		kv, _ := chartutil.ParseKubeVersion(v)
		_, err := renderFor(t, "crawl", releaseNamespace, kv, nil)
		if ok && err != nil {
			t.Errorf("Kubernetes %s refused: %v", v, err)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "kubeVersion")) {
			t.Errorf("Kubernetes %s: %v, want a kubeVersion error", v, err)
		}
	}
}

// The values in the GitOps examples must be valid chart values.
func TestGitOpsExamplesUseValidValues(t *testing.T) {
	read := func(name string) []*unstructured.Unstructured {
		b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "gitops", name))
		if err != nil {
			t.Fatal(err)
		}
		return decode(t, string(b))
	}
	hr := find(read("flux-helmrelease.yaml"), "HelmRelease", "crawl-operator")
	app := find(read("argocd-application.yaml"), "Application", "crawl-operator")
	if hr == nil || app == nil {
		t.Fatal("HelmRelease or Application missing")
	}
	// The release of this chart (test/gitops checks the OCIRepository
	// names it).
	if kind, _, _ := unstructured.NestedString(hr.Object, "spec", "chartRef", "kind"); kind != "OCIRepository" {
		t.Errorf("HelmRelease chartRef kind = %q, want the released chart's OCIRepository", kind)
	}
	if url, _, _ := unstructured.NestedString(app.Object, "spec", "source", "repoURL"); url != "oci://ghcr.io/lohisoft/charts/crawl-operator" {
		t.Errorf("Application repoURL = %q, want the released chart", url)
	}
	for name, fields := range map[string][]string{
		"HelmRelease": {"spec", "values"}, "Application": {"spec", "source", "helm", "valuesObject"},
	} {
		obj := hr
		if name == "Application" {
			obj = app
		}
		vals, found, _ := unstructured.NestedMap(obj.Object, fields...)
		if !found {
			t.Fatalf("%s has no values", name)
		}
		if _, err := render(t, vals); err != nil {
			t.Errorf("%s values refused by the chart: %v", name, err)
		}
	}
}

// The manager must accept every flag the chart passes it: a flag renamed
// in cmd/manager would otherwise only fail in a real cluster.
func TestManagerAcceptsChartArgs(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "manager")
	build := exec.Command("go", "build", "-o", binary, "./cmd/manager")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range combinations(t) {
		name := c.name
		objs, err := renderRelease(t, c.release, c.namespace, c.values)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		args := append(managerArgs(t, objs), "-h")
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: manager refused the chart's arguments: %v\n%s", name, err, firstLines(string(out), 3))
		}
	}
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// helm uninstall's cleanup: a post-delete Job (the manager is gone by
// then) running `manager cleanup` where the manager Pods may run, with
// RBAC that can list and delete Pods and NetworkPolicies and nothing else
// (the crawlers' token Secrets go with their Pods, by garbage collection),
// cluster-wide or (watchNamespaces) in each watched namespace only; all of
// it deleted once the Job succeeded.
func TestUninstallCleanupHook(t *testing.T) {
	tolerations := []any{map[string]any{"key": "crawl.lohisoft.com/egress", "operator": "Exists", "effect": "NoSchedule"}}
	for _, c := range []struct {
		name      string
		values    map[string]any
		roleKind  string
		roleNS    []string
		namespace string
	}{
		{"cluster-wide", map[string]any{"manager": map[string]any{"tolerations": tolerations}}, "ClusterRole", []string{""}, ""},
		{"watched namespaces", map[string]any{"watchNamespaces": []any{"shop", "blog"}}, "Role", []string{"shop", "blog"}, "shop,blog"},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, err := helmrender.RenderWithHooksFor(chartPath, "crawl", releaseNamespace, kubeVersion(t), c.values)
			if err != nil {
				t.Fatal(err)
			}
			var hooks []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetAnnotations()["helm.sh/hook"] != "" {
					hooks = append(hooks, o)
				}
			}
			var roleNS []string
			for _, o := range hooks {
				if o.GetAnnotations()["helm.sh/hook"] != "post-delete" ||
					o.GetAnnotations()["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
					t.Errorf("%s %s: hook annotations %v", o.GetKind(), o.GetName(), o.GetAnnotations())
				}
				if o.GetKind() != c.roleKind {
					continue
				}
				roleNS = append(roleNS, o.GetNamespace())
				rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
				got := fmt.Sprint(rules)
				want := "[map[apiGroups:[] resources:[pods] verbs:[list delete]] map[apiGroups:[networking.k8s.io] resources:[networkpolicies] verbs:[list delete]]]"
				if got != want {
					t.Errorf("%s rules %s, want %s", c.roleKind, got, want)
				}
			}
			if fmt.Sprint(roleNS) != fmt.Sprint(c.roleNS) {
				t.Errorf("%s in namespaces %v, want %v", c.roleKind, roleNS, c.roleNS)
			}
			job := find(hooks, "Job", "crawl-crawl-operator-cleanup")
			if job == nil {
				t.Fatalf("no cleanup Job among the hooks (%d)", len(hooks))
			}
			if w, _, _ := unstructured.NestedString(job.Object, "metadata", "annotations", "helm.sh/hook-weight"); w != "0" {
				t.Errorf("the Job runs at weight %q, after its RBAC (-10, -9)", w)
			}
			ctr, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
			cmd := fmt.Sprint(ctr[0].(map[string]any)["command"], ctr[0].(map[string]any)["args"])
			wantCmd := "[manager cleanup] <nil>"
			if c.namespace != "" {
				wantCmd = "[manager cleanup] [--namespaces=" + c.namespace + "]"
			}
			if cmd != wantCmd {
				t.Errorf("Job runs %s, want %s", cmd, wantCmd)
			}
			tols, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "tolerations")
			if c.values["manager"] != nil && fmt.Sprint(tols) != fmt.Sprint(tolerations) {
				t.Errorf("Job tolerations %v, want the manager's %v", tols, tolerations)
			}
		})
	}
}

// The Go runtime learns the container's memory limit: the downward API
// passes limits.memory of the manager container, and the ratio from the
// values reaches the manager's options.
func TestManagerGetsItsMemoryLimit(t *testing.T) {
	for _, ratio := range []float64{0.9, 0.75, 1} {
		dep := find(mustRender(t, map[string]any{"manager": map[string]any{"memoryLimitRatio": ratio}}), "Deployment", "")
		c := managerContainer(t, dep)
		env, _, _ := unstructured.NestedSlice(c, "env")
		found := false
		for _, e := range env {
			e := e.(map[string]any)
			if e["name"] != operator.MemoryLimitEnv {
				continue
			}
			found = true
			ref, _, _ := unstructured.NestedStringMap(e, "valueFrom", "resourceFieldRef")
			if ref["containerName"] != c["name"] || ref["resource"] != "limits.memory" || ref["divisor"] != "" {
				t.Errorf("%s comes from %v, want limits.memory of container %v in bytes", operator.MemoryLimitEnv, ref, c["name"])
			}
		}
		if !found {
			t.Errorf("no %s in the manager's env", operator.MemoryLimitEnv)
		}
		if got := managerOptions(t, dep).Manager.MemoryLimitRatio; got != ratio {
			t.Errorf("memoryLimitRatio=%v reaches the manager as %v", ratio, got)
		}
	}
	for _, bad := range []any{0, 1.5, -0.5, "0.9"} {
		if _, err := render(t, map[string]any{"manager": map[string]any{"memoryLimitRatio": bad}}); err == nil {
			t.Errorf("memoryLimitRatio=%v rendered; the schema must refuse it", bad)
		}
	}
}
