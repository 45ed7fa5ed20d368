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

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var (
	repoRoot  = filepath.Join("..", "..")
	chartPath = filepath.Join(repoRoot, "charts", "crawl-operator")
)

const releaseNamespace = "crawl-system"

// allFeatures turns every optional feature on.
func allFeatures() map[string]any {
	return map[string]any{
		"manager":        map[string]any{"replicas": 2},
		"storage":        map[string]any{"type": "postgres", "postgres": map[string]any{"existingSecret": "pg-dsn"}},
		"ingress":        map[string]any{"enabled": true, "className": "nginx", "tlsSecretName": "lohisoft-tls"},
		"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
		"networkPolicy":  map[string]any{"crawlerNamespaces": []any{"default", "sites"}},
		"egress":         map[string]any{"nodeLabel": "pool=egress", "nodeTaint": "dedicated=crawler:NoExecute"},
	}
}

// render renders the chart as `helm template` does, with schema validation.
func render(t *testing.T, vals map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	chrt, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	install := action.NewInstall(cfg)
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "crawl", releaseNamespace
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return nil, err
	}
	return decode(t, rel.Manifest), nil
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

func TestLint(t *testing.T) {
	for name, vals := range map[string]map[string]any{"defaults": nil, "all features": allFeatures()} {
		res := action.NewLint().Run([]string{chartPath}, vals)
		for _, m := range res.Messages {
			if m.Severity > 1 { // warnings and errors; info is fine
				t.Errorf("%s: lint: %s", name, m)
			}
		}
		for _, err := range res.Errors {
			t.Errorf("%s: lint error: %v", name, err)
		}
	}
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
		"--crawler-image=ghcr.io/lohisoft/crawl-operator:0.1.0", "--max-crawls-per-node=4",
		"--require-egress-fcrdns=true", "--expected-egress-ips=79.139.58.98,79.139.58.121",
		"--crawler-user-agent=LohiSoftBot/1.0 (+https://lohisoft.com/bot)",
		"--bot-legacy-user-agents=LohiSoftBot/1.0 (+message@lohisoft.com)",
		"--bot-hostname-suffix=.bot.lohisoft.com", "--bot-ips-url=https://lohisoft.com/bot/ips.json",
		"--egress-node-label=crawl.lohisoft.com/egress=true", "--egress-node-taint=crawl.lohisoft.com/egress=true:NoSchedule",
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

func TestRenderAllFeatures(t *testing.T) {
	objs := mustRender(t, allFeatures())
	if find(objs, "PersistentVolumeClaim", "") != nil {
		t.Error("PVC rendered for PostgreSQL")
	}
	dep := find(objs, "Deployment", "")
	if r, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas"); fmt.Sprint(r) != "2" {
		t.Errorf("replicas = %v", r)
	}
	if !strings.Contains(strings.Join(managerArgs(t, objs), " "), "--storage=$(CRAWL_STORAGE_DSN)") {
		t.Error("PostgreSQL DSN not taken from the environment")
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
	if len(env) != 1 || fmt.Sprint(env[0]) != "map[name:CRAWL_STORAGE_DSN valueFrom:map[secretKeyRef:map[key:dsn name:pg-dsn]]]" {
		t.Errorf("DSN env = %v", env)
	}
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

func TestEveryPodIsRestricted(t *testing.T) {
	for name, vals := range map[string]map[string]any{"defaults": nil, "all features": allFeatures()} {
		for _, o := range mustRender(t, vals) {
			spec, found, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			if !found {
				continue
			}
			psc, _ := spec["securityContext"].(map[string]any)
			if psc["runAsNonRoot"] != true || fmt.Sprint(psc["seccompProfile"]) != "map[type:RuntimeDefault]" {
				t.Errorf("%s: %s %s pod securityContext not restricted: %v", name, o.GetKind(), o.GetName(), psc)
			}
			for _, c := range spec["containers"].([]any) {
				sc := c.(map[string]any)["securityContext"].(map[string]any)
				if sc["allowPrivilegeEscalation"] != false || sc["readOnlyRootFilesystem"] != true ||
					fmt.Sprint(sc["capabilities"]) != "map[drop:[ALL]]" {
					t.Errorf("%s: %s container securityContext not restricted: %v", name, o.GetName(), sc)
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

func TestSchemaRejectsBadValues(t *testing.T) {
	tests := map[string]struct {
		vals map[string]any
		want string
	}{
		"unknown top-level key":    {map[string]any{"replicaCount": 2}, "replicaCount"},
		"unknown nested key":       {map[string]any{"crawler": map[string]any{"maxPages": 50}}, "maxPages"},
		"wrong type":               {map[string]any{"manager": map[string]any{"replicas": "two"}}, "replicas"},
		"two replicas with SQLite": {map[string]any{"manager": map[string]any{"replicas": 2}}, "replicas"},
		"postgres without secret":  {map[string]any{"storage": map[string]any{"type": "postgres"}}, "existingSecret"},
		"unknown storage":          {map[string]any{"storage": map[string]any{"type": "mysql"}}, "type"},
		"IPv6 egress address":      {map[string]any{"egress": map[string]any{"expectedIPs": []any{"2001:db8::1"}}}, "expectedIPs"},
		"bad duration":             {map[string]any{"crawler": map[string]any{"minCrawlDelay": "1 second"}}, "minCrawlDelay"},
		"bad pull policy":          {map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "pullPolicy"},
		"zero crawls per node":     {map[string]any{"crawler": map[string]any{"maxCrawlsPerNode": 0}}, "maxCrawlsPerNode"},
		"two replicas without leader election": {map[string]any{"storage": map[string]any{"type": "postgres", "postgres": map[string]any{"existingSecret": "x"}},
			"manager": map[string]any{"replicas": 2, "leaderElection": false}}, "leaderElection"},
		"taint without effect":     {map[string]any{"egress": map[string]any{"nodeTaint": "dedicated=crawler"}}, "nodeTaint"},
		"ips.json over plain HTTP": {map[string]any{"bot": map[string]any{"ipsURL": "http://lohisoft.com/bot/ips.json"}}, "ipsURL"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, tt.vals)
			if err == nil {
				t.Fatalf("values %v accepted", tt.vals)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %s", err, tt.want)
			}
		})
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
	if chart, _, _ := unstructured.NestedString(hr.Object, "spec", "chart", "spec", "chart"); chart != "./charts/crawl-operator" {
		t.Errorf("HelmRelease chart = %q", chart)
	}
	if path, _, _ := unstructured.NestedString(app.Object, "spec", "source", "path"); path != "charts/crawl-operator" {
		t.Errorf("Application path = %q", path)
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

// The README's values table must match values.yaml: every value, with its
// default. A row may describe a whole map (e.g. manager.resources).
func TestReadmeValuesTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`")
		def := strings.TrimSpace(cells[2])
		if !strings.HasPrefix(def, "`") || strings.HasPrefix(key, "-") || strings.HasPrefix(key, "crawl_") {
			continue
		}
		rows[key] = strings.Trim(def, "`")
	}
	b, err := os.ReadFile(filepath.Join(chartPath, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := prefix + k
			if def, ok := rows[key]; ok {
				seen[key] = true
				want, _ := json.Marshal(v)
				if def != string(want) {
					t.Errorf("README default of %s is %s, values.yaml has %s", key, def, want)
				}
				continue
			}
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(key+".", sub)
				continue
			}
			t.Errorf("README values table lacks %s", key)
		}
	}
	walk("", values)
	for key := range rows {
		if !seen[key] && isValueKey(key, values) {
			t.Errorf("README lists %s, which values.yaml does not have", key)
		}
	}
}

// isValueKey reports whether a README row looks like a chart value (its
// first segment is a top-level key), so other tables are ignored.
func isValueKey(key string, values map[string]any) bool {
	_, ok := values[strings.SplitN(key, ".", 2)[0]]
	return ok
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
	for name, vals := range map[string]map[string]any{"defaults": nil, "all features": allFeatures()} {
		args := append(managerArgs(t, mustRender(t, vals)), "-h")
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
