package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// readmes are the documents whose `helm` commands must work.
var readmes = []string{"README.md", filepath.Join("charts", "crawl-operator", "README.md")}

// releasedChart is where make release-push puts the chart for users.
const releasedChart = "oci://ghcr.io/lohisoft/charts/crawl-operator"

// chartMetadataVersion is Chart.yaml's version.
func chartMetadataVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartPath, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version string }
	if err := yaml.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	return meta.Version
}

// combination is one way to install the chart: a documented `helm`
// command or one of the tests' own.
type combination struct {
	name      string // where it comes from
	release   string
	namespace string
	values    map[string]any
}

// documentedCombinations are the `helm install/upgrade/template` commands
// of the READMEs, with their --set, --set-string and --set-json values
// parsed the way Helm parses them.
func documentedCombinations(t *testing.T) []combination {
	t.Helper()
	var out []combination
	for _, doc := range readmes {
		b, err := os.ReadFile(filepath.Join(repoRoot, doc))
		if err != nil {
			t.Fatal(err)
		}
		for i, cmd := range shellCommands(string(b)) {
			if len(cmd) < 2 || cmd[0] != "helm" || (cmd[1] != "install" && cmd[1] != "upgrade" && cmd[1] != "template") {
				continue
			}
			c := combination{name: doc + ": " + strings.Join(cmd, " "), namespace: "default", values: map[string]any{}}
			var positional []string
			var version string
			for j := 2; j < len(cmd); j++ {
				flag, val, hasVal := strings.Cut(cmd[j], "=")
				takesValue := map[string]bool{"-n": true, "--namespace": true, "--set": true, "--set-string": true,
					"--set-json": true, "-f": true, "--values": true, "--set-file": true, "--version": true, "--timeout": true}
				if !strings.HasPrefix(flag, "-") {
					positional = append(positional, cmd[j])
					continue
				}
				if !takesValue[flag] {
					continue
				}
				if !hasVal {
					j++
					if j == len(cmd) {
						t.Fatalf("%s: %s without a value", c.name, flag)
					}
					val = cmd[j]
				}
				var err error
				switch flag {
				case "-n", "--namespace":
					c.namespace = val
				case "--version":
					version = val
				case "--set":
					err = strvals.ParseInto(val, c.values)
				case "--set-string":
					err = strvals.ParseIntoString(val, c.values)
				case "--set-json":
					err = strvals.ParseJSON(val, c.values)
				case "-f", "--values", "--set-file":
					t.Errorf("%s: %s is not supported by this test; use --set, --set-string or --set-json", c.name, flag)
				}
				if err != nil {
					t.Errorf("%s: %s %s: %v", c.name, flag, val, err)
				}
			}
			// The released chart is this chart at its version: a command
			// that installs the release must name the version Chart.yaml
			// has, the one make release publishes next.
			if len(positional) == 2 && positional[1] == releasedChart && version != chartMetadataVersion(t) {
				t.Errorf("%s (command %d): %s --version %q, want Chart.yaml's %s", doc, i, releasedChart, version, chartMetadataVersion(t))
			}
			if len(positional) != 2 || (positional[1] != "charts/crawl-operator" && positional[1] != releasedChart) {
				t.Errorf("%s (command %d): want RELEASE charts/crawl-operator or %s, got %q", doc, i, releasedChart, positional)
				continue
			}
			c.release = positional[0]
			out = append(out, c)
		}
	}
	if len(out) < 5 {
		t.Fatalf("found only %d helm commands in %v", len(out), readmes)
	}
	return out
}

// combinations: the documented ones and the tests' own.
func combinations(t *testing.T) []combination {
	own := []combination{
		{name: "defaults", release: "crawl", namespace: releaseNamespace},
		{name: "all features", release: "crawl", namespace: releaseNamespace, values: allFeatures()},
		{name: "overrides", release: "crawl", namespace: releaseNamespace, values: overrides()},
		{name: "no NetworkPolicy, no CRDs, no persistence", release: "crawl", namespace: releaseNamespace, values: map[string]any{
			"networkPolicy": map[string]any{"enabled": false}, "crds": map[string]any{"enabled": false},
			"storage": map[string]any{"sqlite": map[string]any{"persistence": map[string]any{"enabled": false}}}}},
	}
	return append(own, documentedCombinations(t)...)
}

// overrides sets every value this chart added for names, scheduling and
// security, within what `restricted` allows.
func overrides() map[string]any {
	vals := allFeatures()
	vals["nameOverride"] = "bot"
	vals["fullnameOverride"] = "lohisoftbot"
	vals["manager"] = map[string]any{
		"replicas":            3,
		"podDisruptionBudget": map[string]any{"minAvailable": 2},
		"priorityClassName":   "crawl-critical",
		"topologySpreadConstraints": []any{
			map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"},
			map[string]any{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "crawl"}}},
		},
		"podSecurityContext": map[string]any{"runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
			"seccompProfile": map[string]any{"type": "Localhost", "localhostProfile": "profiles/crawl.json"},
			"seLinuxOptions": map[string]any{"type": "container_t", "level": "s0:c123,c456"}},
		"securityContext": map[string]any{"readOnlyRootFilesystem": true, "runAsUser": 10001,
			"capabilities":   map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_BIND_SERVICE"}},
			"seccompProfile": nil},
		"podAnnotations": map[string]any{"example.com/team": "search"},
	}
	return vals
}

// shellCommands returns the commands of the ```sh blocks of a Markdown
// document, split into words as a POSIX shell does (quotes, backslashes,
// line continuations, comments).
func shellCommands(doc string) [][]string {
	var out [][]string
	in := false
	var block strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case !in && (strings.HasPrefix(line, "```sh") || strings.HasPrefix(line, "```bash")):
			in = true
			block.Reset()
		case in && strings.HasPrefix(line, "```"):
			in = false
			out = append(out, splitShell(block.String())...)
		case in:
			block.WriteString(line + "\n")
		}
	}
	return out
}

func splitShell(s string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	r := []rune(s)
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r) && r[i+1] == '\n':
			i++ // line continuation
		case c == '\\' && i+1 < len(r):
			i++
			word.WriteRune(r[i])
			inWord = true
		case c == '\'':
			inWord = true
			for i++; i < len(r) && r[i] != '\''; i++ {
				word.WriteRune(r[i])
			}
		case c == '"':
			inWord = true
			for i++; i < len(r) && r[i] != '"'; i++ {
				if r[i] == '\\' && i+1 < len(r) && strings.ContainsRune("\"\\$`", r[i+1]) {
					i++
				}
				word.WriteRune(r[i])
			}
		case c == '#' && !inWord:
			for i < len(r) && r[i] != '\n' {
				i++
			}
			i--
		case c == '\n' || c == ';' || c == '&' || c == '|':
			end()
			if len(words) > 0 {
				cmds = append(cmds, words)
				words = nil
			}
		case c == ' ' || c == '\t':
			end()
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	end()
	if len(words) > 0 {
		cmds = append(cmds, words)
	}
	return cmds
}

func TestShellCommandsSplitLikeAShell(t *testing.T) {
	got := shellCommands("```sh\n# comment\nhelm upgrade --install a charts/crawl-operator \\\n  --set bot.operator='ACME: Bots #1' --set \"x=a \\\"b\\\"\" # trailing\nkubectl get x && echo y\n```\n")
	want := [][]string{
		{"helm", "upgrade", "--install", "a", "charts/crawl-operator", "--set", "bot.operator=ACME: Bots #1", "--set", `x=a "b"`},
		{"kubectl", "get", "x"}, {"echo", "y"},
	}
	if !sameJSON(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// `helm lint --strict`, for every combination: warnings fail too.
func TestLint(t *testing.T) {
	for _, c := range combinations(t) {
		lint := action.NewLint()
		lint.Strict = true
		lint.Namespace = c.namespace
		lint.KubeVersion = kubeVersion(t)
		res := lint.Run([]string{chartPath}, c.values)
		for _, m := range res.Messages {
			if m.Severity > 1 { // warnings and errors; info is fine
				t.Errorf("%s: lint: %s", c.name, m)
			}
		}
		for _, err := range res.Errors {
			t.Errorf("%s: lint error: %v", c.name, err)
		}
		if res.TotalChartsLinted != 1 {
			t.Errorf("%s: %d charts linted", c.name, res.TotalChartsLinted)
		}
	}
}

// Every documented combination renders, and each gets what it documents.
func TestRenderDocumentedCombinations(t *testing.T) {
	for _, c := range combinations(t) {
		objs, err := renderRelease(t, c.release, c.namespace, c.values)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		checkReferences(t, c.name, objs)
		replicas := 1
		if m, ok := c.values["manager"].(map[string]any); ok && m["replicas"] != nil {
			replicas = int(toFloat(m["replicas"]))
		}
		if pdb := find(objs, "PodDisruptionBudget", ""); (pdb != nil) != (replicas > 1) {
			t.Errorf("%s: %d replicas, PodDisruptionBudget rendered: %v", c.name, replicas, pdb != nil)
		}
	}
}

func toFloat(v any) float64 {
	b, _ := json.Marshal(v)
	var f float64
	_ = json.Unmarshal(b, &f)
	return f
}

// The chart README documents every value of values.yaml with its default,
// and nothing else; `helm show readme` prints it.
func TestChartReadmeValuesTable(t *testing.T) {
	path := filepath.Join(chartPath, "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shown, err := action.NewShowWithConfig(action.ShowReadme, &action.Configuration{}).Run(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(shown) != strings.TrimSpace(string(readme)) {
		t.Errorf("helm show readme does not print %s:\n%s", path, firstLines(shown, 5))
	}
	rows := valuesTable(t, string(readme))
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
					t.Errorf("chart README: default of %s is %s, values.yaml has %s", key, def, want)
				}
				continue
			}
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
				walk(key+".", sub)
				continue
			}
			t.Errorf("chart README values table lacks %s", key)
		}
	}
	walk("", values)
	var extra []string
	for key := range rows {
		if !seen[key] {
			extra = append(extra, key)
		}
	}
	sort.Strings(extra)
	for _, key := range extra {
		t.Errorf("chart README documents %s, which values.yaml does not have", key)
	}
	// The project README points at it instead of keeping a second table.
	top, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(top), "(charts/crawl-operator/README.md)") {
		t.Error("README.md does not link the chart README")
	}
	if strings.Contains(string(top), "| `image.repository` |") {
		t.Error("README.md has its own values table again; keep the one in the chart README")
	}
}

var rowRE = regexp.MustCompile("^\\| `([^`]+)` \\| `([^`]*)` \\|")

// valuesTable parses the table that starts with "| value | default |".
func valuesTable(t *testing.T, doc string) map[string]string {
	t.Helper()
	rows := map[string]string{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "| value | default |"):
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			m := rowRE.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("chart README: malformed values row %q", line)
				continue
			}
			if _, dup := rows[m[1]]; dup {
				t.Errorf("chart README: %s documented twice", m[1])
			}
			rows[m[1]] = m[2]
		default:
			in = false
		}
	}
	if len(rows) == 0 {
		t.Fatal("chart README has no values table")
	}
	return rows
}

// checkReferences: whatever the names, every object that points at
// another (selectors, references by name, the results URL) finds it.
func checkReferences(t *testing.T, what string, objs []*unstructured.Unstructured) {
	t.Helper()
	dep := find(objs, "Deployment", "")
	if dep == nil {
		t.Errorf("%s: no Deployment", what)
		return
	}
	fullname, ns := dep.GetName(), dep.GetNamespace()
	podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	selects := func(sel map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if podLabels[k] != v {
				return false
			}
		}
		return true
	}
	names := map[string]bool{}
	for _, o := range objs {
		names[o.GetKind()+"/"+o.GetName()] = true
		if o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetName(), fullname) {
			t.Errorf("%s: %s %s is not named after %s", what, o.GetKind(), o.GetName(), fullname)
		}
		if l := o.GetLabels(); l["app.kubernetes.io/name"] != podLabels["app.kubernetes.io/name"] || l["app.kubernetes.io/instance"] != podLabels["app.kubernetes.io/instance"] {
			t.Errorf("%s: %s %s labels %v differ from the manager Pods' name and instance %v", what, o.GetKind(), o.GetName(), l, podLabels)
		}
	}
	sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
	if !selects(sel) {
		t.Errorf("%s: Deployment selector %v does not select its Pods %v", what, sel, podLabels)
	}
	sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
	if !names["ServiceAccount/"+sa] {
		t.Errorf("%s: the Deployment's ServiceAccount %s is not rendered", what, sa)
	}
	vols, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		if claim, found, _ := unstructured.NestedString(v.(map[string]any), "persistentVolumeClaim", "claimName"); found && !names["PersistentVolumeClaim/"+claim] {
			t.Errorf("%s: claim %s is not rendered", what, claim)
		}
	}
	tscs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "topologySpreadConstraints")
	for _, c := range tscs {
		s, _, _ := unstructured.NestedStringMap(c.(map[string]any), "labelSelector", "matchLabels")
		if !selects(s) {
			t.Errorf("%s: topology spread constraint selects %v, not the manager Pods", what, s)
		}
	}
	metricsLabels := map[string]string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Service":
			s, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector")
			if !selects(s) {
				t.Errorf("%s: Service %s selects %v, not the manager Pods", what, o.GetName(), s)
			}
			if o.GetLabels()["app.kubernetes.io/component"] == "metrics" {
				metricsLabels = o.GetLabels()
			}
		case "PodDisruptionBudget":
			s, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
			if !selects(s) {
				t.Errorf("%s: PodDisruptionBudget selects %v, not the manager Pods", what, s)
			}
		case "NetworkPolicy":
			rule, _ := dig(o.Object, "spec", "egress", 2, "to", 0)
			s, _, _ := unstructured.NestedStringMap(rule.(map[string]any), "podSelector", "matchLabels")
			nsName, _, _ := unstructured.NestedString(rule.(map[string]any), "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
			if !selects(s) || nsName != ns {
				t.Errorf("%s: NetworkPolicy %s/%s lets crawlers reach %v in %s, not the manager Pods in %s", what, o.GetNamespace(), o.GetName(), s, nsName, ns)
			}
		case "Ingress":
			svc, _ := dig(o.Object, "spec", "rules", 0, "http", "paths", 0, "backend", "service", "name")
			if !names["Service/"+svc.(string)] {
				t.Errorf("%s: Ingress backend %v is not rendered", what, svc)
			}
		case "ClusterRoleBinding", "RoleBinding":
			role, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
			subject, _ := dig(o.Object, "subjects", 0)
			sm := subject.(map[string]any)
			if !names[kind+"/"+role] || sm["name"] != sa || sm["namespace"] != ns {
				t.Errorf("%s: %s %s binds %s %s to %v", what, o.GetKind(), o.GetName(), kind, role, sm)
			}
		}
	}
	if sm := find(objs, "ServiceMonitor", ""); sm != nil {
		s, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		for k, v := range s {
			if metricsLabels[k] != v {
				t.Errorf("%s: ServiceMonitor selects %v, not the metrics Service %v", what, s, metricsLabels)
				break
			}
		}
	}
	results, err := arg("results-url")(objs)
	if want := "http://" + fullname + "-results." + ns + ".svc:8083"; err != nil || results != want || !names["Service/"+fullname+"-results"] {
		t.Errorf("%s: --results-url %v (%v), want %s, a rendered Service", what, results, err, want)
	}
}
