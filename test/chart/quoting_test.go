package chart

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// hostile are strings that change or break a manifest when a template
// writes them unquoted: YAML indicators, comments, quotes, escapes,
// surrounding spaces, non-ASCII, leading dashes, control characters, and
// plain scalars YAML reads as something other than a string.
var hostile = []string{
	"ACME: Bots #1",
	"LohiSoft s.r.o. #1 # not a comment",
	`He said "hi" and 'bye'`,
	`C:\path\with\back\slashes\`,
	`\n is not a newline, \" not a quote`,
	"  spaces around  ",
	"ünïcödé ✓ 日本語 🕷",
	"--leading-dashes",
	"- a list item",
	"-",
	"{not: a map}",
	"[not, a, list]",
	"true", "null", "~", "1e3", "0x1F", "012", "on", "no", "y",
	"*alias", "&anchor value", "!!str tagged", "%directive", "@at `backtick`",
	"| literal", "> folded", "? key",
	"a: b # c: d",
	"trailing colon:",
	"tab\there",
	"two\nlines",
	"{{ not a template }}",
}

// dnsNames are names Kubernetes accepts (DNS-1035 labels) that YAML reads
// as booleans, null or numbers when unquoted.
var dnsNames = []string{"true", "false", "null", "on", "no", "y", "n", "yes", "off", "e1"}

// dnsSubdomains may also start with a digit.
var dnsSubdomains = append([]string{"1e3", "012", "0x1f", "1.5", "a.b"}, dnsNames...)

// locator returns what the chart rendered for a value, and what it should
// be for the candidate c.
type locator struct {
	what string
	get  func(objs []*unstructured.Unstructured) (any, error)
	want func(c string) any
}

// sink is a string value (or a map or list holding strings) of
// values.yaml and the places it must reach unchanged.
type sink struct {
	path string
	// base: "sqlite" or "postgres", the storage the value needs.
	base string
	// cands are the candidates; nil means every hostile string (a free-text
	// value). Values the schema constrains get tricky values it accepts.
	cands []string
	// value turns a candidate into the value set (default: the candidate).
	value func(c string) any
	at    []locator
}

// exempt are string values no template writes as they are.
var exempt = map[string]string{
	"storage.type": "selects templates; rendered nowhere",
	// Grouped with the others it would be a second ConfigMap beside the
	// dashboard's, which those locators find by kind.
	"crawler.extraCACerts": "TestCrawlerExtraCACertsRenderExactly renders every hostile string",
	// Both bases set image.tag, which drops the pin; the schema admits
	// only sha256:<64 hex> anyway.
	"image.digest": "TestImageDigest renders it with and without image.tag",
}

func sinks() []sink {
	prefixed := func(p string) []string {
		out := make([]string, len(hostile))
		for i, h := range hostile {
			out[i] = p + h
		}
		return out
	}
	noComma := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = strings.ReplaceAll(s, ",", ";")
		}
		return out
	}
	str := func(c string) any { return c }
	stringMap := func(c string) any {
		return map[string]any{"example.com/note": c, "true": c, "1e3": c, "null": c}
	}
	labels := func(c string) any { // label values: names, not free text
		return map[string]any{"example.com/tier": c, "true": c, "1e3": c}
	}
	return []sink{
		{path: "nameOverride", base: "sqlite", cands: dnsNames, at: []locator{
			{"Deployment name", objName("Deployment"), func(c string) any { return "crawl-" + c }},
			{"name label", label("Deployment", "app.kubernetes.io/name"), str},
			{"Pod name label", podLabel("app.kubernetes.io/name"), str},
			{"--results-url", arg("results-url"), func(c string) any { return "http://crawl-" + c + "-results.crawl-system.svc:8083" }},
			{"--manager-pod-labels", arg("manager-pod-labels"), func(c string) any { return "app.kubernetes.io/instance=crawl,app.kubernetes.io/name=" + c }},
		}},
		{path: "fullnameOverride", base: "postgres", cands: dnsNames, at: []locator{
			{"Deployment name", objName("Deployment"), str},
			{"ServiceAccount name", objName("ServiceAccount"), str},
			{"Service names", objNames("Service"), func(c string) any { return []string{c + "-index", c + "-metrics", c + "-results", c + "-webhook"} }},
			{"PodDisruptionBudget name", objName("PodDisruptionBudget"), str},
			{"--results-url", arg("results-url"), func(c string) any { return "http://" + c + "-results.crawl-system.svc:8083" }},
		}},
		{path: "image.repository", base: "sqlite", at: []locator{
			// image.tag is set to the same candidate.
			{"manager image", field("Deployment", "spec", "template", "spec", "containers", 0, "image"), func(c string) any { return c + ":" + c }},
		}},
		{path: "image.tag", base: "postgres", at: []locator{
			{"manager image", field("Deployment", "spec", "template", "spec", "containers", 0, "image"), func(c string) any { return c + ":" + c }},
			// No crawler.image here: the crawler image is the manager's.
			{"--crawler-image", arg("crawler-image"), func(c string) any { return c + ":" + c }},
		}},
		{path: "image.pullPolicy", base: "sqlite", cands: []string{"Always", "IfNotPresent", "Never"}, at: []locator{
			{"imagePullPolicy", field("Deployment", "spec", "template", "spec", "containers", 0, "imagePullPolicy"), str},
			{"--crawler-image-pull-policy", arg("crawler-image-pull-policy"), str},
		}},
		{path: "imagePullSecrets", base: "sqlite", cands: dnsSubdomains,
			value: func(c string) any { return []any{map[string]any{"name": c}} },
			at: []locator{{"imagePullSecrets", field("Deployment", "spec", "template", "spec", "imagePullSecrets"),
				func(c string) any { return []any{map[string]any{"name": c}} }}}},
		{path: "crawler.image", base: "sqlite", at: []locator{{"--crawler-image", arg("crawler-image"), str}}},
		{path: "crawler.minCrawlDelay", base: "sqlite", cands: []string{"1.5s", "012s", "1h2m3.5s", "0s", "250ms"},
			at: []locator{{"--min-crawl-delay", arg("min-crawl-delay"), str}}},
		{path: "crawler.crawlDeadline", base: "postgres", cands: []string{"1h", "90m", "1.5h", "012m"},
			at: []locator{{"--crawl-deadline", arg("crawl-deadline"), str}}},
		{path: "crawler.resources", base: "postgres", cands: []string{"012", "1e3", "0.5", "100m", "1Gi"}, value: resources,
			at: []locator{
				{"--crawler-cpu-request", arg("crawler-cpu-request"), str}, {"--crawler-memory-request", arg("crawler-memory-request"), str},
				{"--crawler-cpu-limit", arg("crawler-cpu-limit"), str}, {"--crawler-memory-limit", arg("crawler-memory-limit"), str},
			}},
		{path: "crawler.imagePullSecrets", base: "sqlite", cands: dnsSubdomains,
			value: func(c string) any { return []any{map[string]any{"name": c}, map[string]any{"name": "second"}} },
			at:    []locator{{"--crawler-image-pull-secrets", arg("crawler-image-pull-secrets"), func(c string) any { return c + ",second" }}}},
		{path: "crawler.priorityClassName", base: "postgres", cands: dnsSubdomains, at: []locator{
			{"--crawler-priority-class-name", arg("crawler-priority-class-name"), str}}},
		{path: "crawler.podLabels", base: "sqlite", cands: dnsSubdomains, value: labels, at: []locator{
			{"--crawler-pod-labels", arg("crawler-pod-labels"), func(c string) any { return "1e3=" + c + ",example.com/tier=" + c + ",true=" + c }}}},
		{path: "crawler.podAnnotations", base: "postgres", cands: noComma(hostile), value: stringMap, at: []locator{
			{"--crawler-pod-annotations", arg("crawler-pod-annotations"), func(c string) any {
				return "1e3=" + c + ",example.com/note=" + c + ",null=" + c + ",true=" + c
			}}}},
		{path: "manager.logLevel", base: "sqlite", cands: []string{"debug", "info", "error"},
			at: []locator{{"--zap-log-level", arg("zap-log-level"), str}}},
		{path: "manager.podAnnotations", base: "sqlite", value: stringMap, at: []locator{
			{"Pod annotations", field("Deployment", "spec", "template", "metadata", "annotations"), stringMap}}},
		{path: "manager.nodeSelector", base: "postgres", value: labels, at: []locator{
			{"nodeSelector", field("Deployment", "spec", "template", "spec", "nodeSelector"), labels}}},
		{path: "manager.priorityClassName", base: "sqlite", cands: dnsSubdomains, at: []locator{
			{"priorityClassName", field("Deployment", "spec", "template", "spec", "priorityClassName"), str}}},
		{path: "manager.tolerations", base: "sqlite",
			value: func(c string) any {
				return []any{map[string]any{"key": c, "operator": "Exists", "effect": "NoSchedule"}}
			},
			at: []locator{{"tolerations", field("Deployment", "spec", "template", "spec", "tolerations"),
				func(c string) any {
					return []any{map[string]any{"key": c, "operator": "Exists", "effect": "NoSchedule"}}
				}}}},
		{path: "manager.affinity", base: "postgres", value: affinity, at: []locator{
			{"affinity", field("Deployment", "spec", "template", "spec", "affinity"), affinity}}},
		{path: "manager.resources", base: "sqlite", cands: []string{"012", "1e3", "0.5", "100m", "1Gi"}, value: resources,
			at: []locator{{"resources", field("Deployment", "spec", "template", "spec", "containers", 0, "resources"), resources}}},
		{path: "manager.topologySpreadConstraints", base: "postgres",
			value: func(c string) any {
				return []any{map[string]any{"maxSkew": 1, "topologyKey": c, "whenUnsatisfiable": "ScheduleAnyway"}}
			},
			at: []locator{{"topologySpreadConstraints", field("Deployment", "spec", "template", "spec", "topologySpreadConstraints"),
				func(c string) any {
					// The chart fills in the manager's own labels.
					return []any{map[string]any{"maxSkew": 1, "topologyKey": c, "whenUnsatisfiable": "ScheduleAnyway",
						"labelSelector": map[string]any{"matchLabels": map[string]any{
							"app.kubernetes.io/name": "crawl-operator", "app.kubernetes.io/instance": "crawl"}}}}
				}}}},
		{path: "manager.podSecurityContext", base: "sqlite", value: podSecurityContext, at: []locator{
			{"Pod securityContext", field("Deployment", "spec", "template", "spec", "securityContext"), podSecurityContext}}},
		{path: "manager.securityContext", base: "postgres", value: containerSecurityContext, at: []locator{
			{"container securityContext", field("Deployment", "spec", "template", "spec", "containers", 0, "securityContext"), containerSecurityContext}}},
		{path: "egress.nodeLabel", base: "sqlite", cands: []string{"true=on", "--x=-", "1e3=012", "a.b/c_d=null", "y="},
			at: []locator{{"--egress-node-label", arg("egress-node-label"), str}}},
		{path: "egress.nodeTaint", base: "postgres", cands: []string{"true=on:NoExecute", "--x=-:NoSchedule", "a/b=:PreferNoSchedule", "null=y:NoSchedule"},
			at: []locator{{"--egress-node-taint", arg("egress-node-taint"), str}}},
		{path: "egress.expectedIPs", base: "sqlite", cands: []string{"1.2.3.4", "255.255.255.255"},
			value: func(c string) any { return []any{c, "9.9.9.9"} },
			at:    []locator{{"--expected-egress-ips", arg("expected-egress-ips"), func(c string) any { return c + ",9.9.9.9" }}}},
		{path: "egress.echoURL", base: "postgres", cands: []string{"https://true/null", "http://1e3:8080/ip?format=json", "https://echo.example/{{ip}}", "http://0x1F/#012", "https://echo.bot.lohisoft.com/a:b"},
			at: []locator{{"--egress-echo-url", arg("egress-echo-url"), str}}},
		{path: "egress.quarantine", base: "sqlite", cands: []string{"1h", "90s", "1.5m", "012m"},
			at: []locator{{"--egress-quarantine", arg("egress-quarantine"), str}}},
		{path: "egress.nodeLostAfter", base: "postgres", cands: []string{"1h", "90s", "1.5m", "012m"},
			at: []locator{{"--egress-node-lost-after", arg("egress-node-lost-after"), str}}},
		{path: "storage.sqlite.persistence.size", base: "sqlite", cands: []string{"012", "1.5Gi", "100", "10Mi"},
			at: []locator{{"PVC size", field("PersistentVolumeClaim", "spec", "resources", "requests", "storage"), str}}},
		{path: "storage.sqlite.persistence.storageClassName", base: "sqlite", at: []locator{
			{"PVC storageClassName", field("PersistentVolumeClaim", "spec", "storageClassName"), str}}},
		{path: "storage.postgres.existingSecret", base: "postgres", cands: dnsSubdomains, at: []locator{
			{"DSN Secret name", env("CRAWL_STORAGE", "name"), str}}},
		{path: "storage.postgres.secretKey", base: "postgres", cands: []string{"true", "null", "1e3", "012", "0x1F", "ON", "-dsn", ".dsn", "a_b.c-d"},
			at: []locator{{"DSN Secret key", env("CRAWL_STORAGE", "key"), str}}},
		{path: "bot.operator", base: "sqlite", at: []locator{{"--bot-operator", arg("bot-operator"), str}}},
		{path: "bot.contact", base: "postgres",
			cands: []string{"o'brien+#1@example.com", `"#1:x"@example.com`, "{a}@[b]", "ü@例え.jp", `\x@y`, "--x@y", "true@on"},
			at:    []locator{{"--bot-contact", arg("bot-contact"), str}}},
		{path: "bot.userAgent", base: "sqlite", cands: prefixed("LohiSoftBot/"),
			at: []locator{{"--crawler-user-agent", arg("crawler-user-agent"), str}}},
		{path: "bot.legacyUserAgents", base: "postgres", cands: noComma(prefixed("LohiSoftBot/0.9 ")),
			value: func(c string) any { return []any{c, "LohiSoftBot/0.8"} },
			at:    []locator{{"--bot-legacy-user-agents", arg("bot-legacy-user-agents"), func(c string) any { return c + ",LohiSoftBot/0.8" }}}},
		{path: "bot.hostnameSuffix", base: "sqlite", cands: []string{".true", ".1e3", ".0x1f.example", ".-.-"},
			at: []locator{{"--bot-hostname-suffix", arg("bot-hostname-suffix"), str}}},
		{path: "bot.ipsURL", base: "postgres", cands: prefixed("https://"),
			at: []locator{{"--bot-ips-url", arg("bot-ips-url"), str}}},
		{path: "service.type", base: "sqlite", cands: []string{"ClusterIP", "NodePort", "LoadBalancer"},
			at: []locator{{"index Service type", serviceField("index", "spec", "type"), str}}},
		{path: "ingress.className", base: "sqlite", at: []locator{
			{"ingressClassName", field("Ingress", "spec", "ingressClassName"), str}}},
		{path: "ingress.host", base: "sqlite", at: []locator{
			{"rule host", field("Ingress", "spec", "rules", 0, "host"), str},
			{"TLS host", field("Ingress", "spec", "tls", 0, "hosts", 0), str}}},
		{path: "ingress.annotations", base: "sqlite", value: stringMap, at: []locator{
			{"Ingress annotations", field("Ingress", "metadata", "annotations"), stringMap}}},
		{path: "ingress.tlsSecretName", base: "sqlite", at: []locator{
			{"TLS Secret", field("Ingress", "spec", "tls", 0, "secretName"), str}}},
		{path: "serviceMonitor.interval", base: "sqlite", cands: []string{"1.5s", "012s", "1m30s"},
			at: []locator{{"scrape interval", field("ServiceMonitor", "spec", "endpoints", 0, "interval"), str}}},
		{path: "serviceMonitor.labels", base: "sqlite", value: labels, at: []locator{
			{"ServiceMonitor labels", labelsWithKeys("ServiceMonitor", "example.com/tier", "true", "1e3"), labels}}},
		{path: "prometheusRule.labels", base: "sqlite", value: labels, at: []locator{
			{"PrometheusRule labels", labelsWithKeys("PrometheusRule", "example.com/tier", "true", "1e3"), labels}}},
		{path: "prometheusRule.runbookBaseURL", base: "postgres",
			cands: []string{"https://wiki.example/o'brien", `https://wiki.example/"q"`, "https://wiki.example/{{.Values}}", "http://a:b@wiki.example/%41"},
			at: []locator{{"the first alert's runbook_url", field("PrometheusRule", "spec", "groups", 0, "rules", 0, "annotations", "runbook_url"),
				func(c string) any { return c + "#crawloperatormanagerabsent" }}}},
		{path: "dashboards.labels", base: "sqlite", value: labels, at: []locator{
			{"dashboard ConfigMap labels", labelsWithKeys("ConfigMap", "example.com/tier", "true", "1e3"), labels}}},
		{path: "dashboards.annotations", base: "postgres", value: stringMap, at: []locator{
			{"dashboard ConfigMap annotations", field("ConfigMap", "metadata", "annotations"), stringMap}}},
		{path: "watchNamespaces", base: "postgres", cands: dnsNames,
			value: func(c string) any { return []any{c, "sites"} },
			at: []locator{
				{"--watch-namespaces", arg("watch-namespaces"), func(c string) any { return c + ",sites" }},
				{"Role namespaces", watchedRoleNamespaces, func(c string) any { return []string{c, "sites"} }},
			}},
		{path: "networkPolicy.crawlerNamespaces", base: "sqlite", cands: dnsNames,
			value: func(c string) any { return []any{c} },
			at:    []locator{{"NetworkPolicy namespace", objNamespace("NetworkPolicy"), str}}},
		{path: "networkPolicy.extraExceptCIDRs", base: "postgres", cands: []string{"1.2.3.0/24", "0.0.0.0/1"},
			value: func(c string) any { return []any{c} },
			at: []locator{{"except list", field("NetworkPolicy", "spec", "egress", 0, "to", 0, "ipBlock", "except"), func(c string) any {
				return forbiddenThen("79.139.58.98/32", "79.139.58.121/32", c)
			}}, {"--crawler-network-policy-except-cidrs", arg("crawler-network-policy-except-cidrs"), str}}},
		{path: "networkPolicy.dnsNamespace", base: "postgres", cands: dnsNames, at: []locator{
			{"DNS namespace selector", field("NetworkPolicy", "spec", "egress", 1, "to", 0, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"), str},
			{"--crawler-network-policy-dns-namespace", arg("crawler-network-policy-dns-namespace"), str}}},
		{path: "networkPolicy.dnsPodLabels", base: "sqlite", value: labels, at: []locator{
			{"DNS Pod selector", field("NetworkPolicy", "spec", "egress", 1, "to", 0, "podSelector", "matchLabels"), func(c string) any {
				// Maps merge with the chart's defaults.
				m := labels(c).(map[string]any)
				m["k8s-app"] = "kube-dns"
				return m
			}},
			{"--crawler-network-policy-dns-pod-labels", arg("crawler-network-policy-dns-pod-labels"), func(c string) any {
				// key=value, sorted by key.
				return "1e3=" + c + ",example.com/tier=" + c + ",k8s-app=kube-dns,true=" + c
			}}}},
	}
}

func resources(c string) any {
	return map[string]any{"limits": map[string]any{"cpu": c, "memory": c}, "requests": map[string]any{"cpu": c, "memory": c}}
}

func affinity(c string) any {
	return map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
			map[string]any{"key": c, "operator": "In", "values": []any{c, "true"}}}}}}}}
}

// podSecurityContext and containerSecurityContext stay restricted; the
// strings are where the schema leaves them free.
func podSecurityContext(c string) any {
	return map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532,
		"seccompProfile": map[string]any{"type": "RuntimeDefault"},
		"seLinuxOptions": map[string]any{"level": c}}
}

func containerSecurityContext(c string) any {
	return map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true,
		"capabilities":   map[string]any{"drop": []any{"ALL"}},
		"seccompProfile": map[string]any{"type": "Localhost", "localhostProfile": c}}
}

// bases are the values each group of sinks is rendered with, so that
// every template that writes one of them renders.
func baseValues(base string) map[string]any {
	vals := map[string]any{
		"ingress":        map[string]any{"enabled": true, "tlsSecretName": "tls"},
		"serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true},
		"dashboards":     map[string]any{"enabled": true},
	}
	if base == "postgres" {
		vals["storage"] = map[string]any{"type": "postgres", "postgres": map[string]any{"existingSecret": "pg"}}
		vals["manager"] = map[string]any{"replicas": 2}
	}
	return vals
}

// Every string a value holds reaches the manifests exactly as given: the
// Deployment's args, env, labels, annotations and every other field.
// Values are rendered in groups: candidate i of every sink at once.
func TestHostileValuesRenderExactly(t *testing.T) {
	all := sinks()
	for _, base := range []string{"sqlite", "postgres"} {
		var group []sink
		n := 0
		for _, s := range all {
			if s.base != base {
				continue
			}
			if s.cands == nil {
				s.cands = hostile
			}
			group = append(group, s)
			n = max(n, len(s.cands))
		}
		for i := 0; i < n; i++ {
			vals := baseValues(base)
			for _, s := range group {
				c := s.cands[i%len(s.cands)]
				v := any(c)
				if s.value != nil {
					v = s.value(c)
				}
				setPath(vals, s.path, v)
				if s.path == "image.repository" || s.path == "image.tag" {
					setPath(vals, "image.repository", c)
					setPath(vals, "image.tag", c)
				}
			}
			objs, err := render(t, vals)
			if err != nil {
				t.Errorf("%s, candidate %d: render: %v", base, i, err)
				continue
			}
			for _, s := range group {
				c := s.cands[i%len(s.cands)]
				for _, l := range s.at {
					got, err := l.get(objs)
					if err != nil {
						t.Errorf("%s = %q: %s: %v", s.path, c, l.what, err)
						continue
					}
					if want := l.want(c); !sameJSON(got, want) {
						t.Errorf("%s = %q: %s is %s, want %s", s.path, c, l.what, jsonOf(got), jsonOf(want))
					}
				}
			}
		}
	}
}

// The table above covers every string in values.schema.json, so a new
// value cannot skip the test.
func TestHostileValuesCoverEveryString(t *testing.T) {
	schema := loadSchema(t)
	covered := map[string]bool{}
	for _, s := range sinks() {
		covered[s.path] = true
	}
	for p := range exempt {
		covered[p] = true
	}
	seen := map[string]bool{}
	var walk func(path string, node map[string]any)
	walk = func(path string, node map[string]any) {
		node = resolve(schema, node)
		if covered[path] {
			seen[path] = true
			return
		}
		if props, ok := node["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(strings.TrimPrefix(path+"."+k, "."), props[k].(map[string]any))
			}
			if len(props) > 0 {
				return
			}
		}
		if holdsStrings(schema, node) {
			t.Errorf("%s holds strings but the hostile-values test does not cover it", path)
		}
	}
	walk("", schema)
	for p := range covered {
		if !seen[p] {
			t.Errorf("the hostile-values test covers %s, which values.schema.json does not have", p)
		}
	}
}

// holdsStrings: a string, an enum of strings, a list or map of them, or an
// object of unknown shape.
func holdsStrings(schema, node map[string]any) bool {
	node = resolve(schema, node)
	if _, ok := node["enum"]; ok {
		return true
	}
	switch t := node["type"].(type) {
	case string:
		switch t {
		case "string":
			return true
		case "array":
			items, _ := node["items"].(map[string]any)
			return items == nil || holdsStrings(schema, items) || resolve(schema, items)["type"] == "object"
		case "object":
			if ap, ok := node["additionalProperties"].(map[string]any); ok {
				return holdsStrings(schema, ap)
			}
			return node["additionalProperties"] != false
		}
	case []any:
		for _, x := range t {
			if x == "string" {
				return true
			}
		}
	}
	return false
}

func resolve(schema, node map[string]any) map[string]any {
	for {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		name := strings.TrimPrefix(ref, "#/definitions/")
		node = schema["definitions"].(map[string]any)[name].(map[string]any)
	}
}

// The release's own name and namespace are strings too.
func TestHostileReleaseNameAndNamespace(t *testing.T) {
	for _, rel := range [][2]string{{"true", "null"}, {"on", "012"}, {"y", "1e3"}} {
		name, ns := rel[0], rel[1]
		objs, err := renderRelease(t, name, ns, map[string]any{
			"storage":        map[string]any{"type": "postgres", "postgres": map[string]any{"existingSecret": "pg"}},
			"manager":        map[string]any{"replicas": 2},
			"ingress":        map[string]any{"enabled": true},
			"serviceMonitor": map[string]any{"enabled": true},
			"networkPolicy":  map[string]any{"crawlerNamespaces": []any{"default"}},
		})
		if err != nil {
			t.Fatalf("release %q in %q: %v", name, ns, err)
		}
		for _, o := range objs {
			if got, found, err := unstructured.NestedFieldNoCopy(o.Object, "metadata", "labels", "app.kubernetes.io/instance"); !found || err != nil || got != name {
				t.Errorf("release %q: %s %s instance label = %#v", name, o.GetKind(), o.GetName(), got)
			}
			if !namespaced(o.GetKind()) || o.GetKind() == "NetworkPolicy" {
				continue
			}
			if got, _, _ := unstructured.NestedFieldNoCopy(o.Object, "metadata", "namespace"); got != ns {
				t.Errorf("namespace %q: %s %s has namespace %#v", ns, o.GetKind(), o.GetName(), got)
			}
		}
		for flag, want := range map[string]string{
			"leader-election-namespace": ns,
			"results-url":               "http://" + name + "-crawl-operator-results." + ns + ".svc:8083",
			"manager-pod-labels":        "app.kubernetes.io/instance=" + name + ",app.kubernetes.io/name=crawl-operator",
		} {
			if got, err := arg(flag)(objs); err != nil || got != want {
				t.Errorf("release %q in %q: --%s = %v (%v), want %q", name, ns, flag, got, err, want)
			}
		}
		sel, _, _ := unstructured.NestedFieldNoCopy(find(objs, "Deployment", "").Object, "spec", "selector", "matchLabels", "app.kubernetes.io/instance")
		if sel != name {
			t.Errorf("release %q: Deployment selector instance = %#v", name, sel)
		}
		np := find(objs, "NetworkPolicy", "")
		if got, _ := dig(np.Object, "spec", "egress", 2, "to", 0, "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"); got != ns {
			t.Errorf("namespace %q: results endpoint namespace selector = %#v", ns, got)
		}
	}
}

func namespaced(kind string) bool {
	switch kind {
	case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		return false
	}
	return true
}

// setPath sets a dotted path in nested maps, creating them.
func setPath(vals map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	m := vals
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func sameJSON(a, b any) bool {
	var x, y any
	_ = json.Unmarshal([]byte(jsonOf(a)), &x)
	_ = json.Unmarshal([]byte(jsonOf(b)), &y)
	return reflect.DeepEqual(x, y)
}

// arg returns the value of the manager's --flag; it must be there once.
func arg(flag string) func([]*unstructured.Unstructured) (any, error) {
	return func(objs []*unstructured.Unstructured) (any, error) {
		dep := find(objs, "Deployment", "")
		if dep == nil {
			return nil, fmt.Errorf("no Deployment")
		}
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		args, _ := containers[0].(map[string]any)["args"].([]any)
		var vals []any
		for _, a := range args {
			s, ok := a.(string)
			if !ok {
				return nil, fmt.Errorf("argument %#v is a %T, not a string", a, a)
			}
			if v, ok := strings.CutPrefix(s, "--"+flag+"="); ok {
				vals = append(vals, v)
			}
		}
		if len(vals) != 1 {
			return nil, fmt.Errorf("--%s given %d times in %q", flag, len(vals), args)
		}
		return vals[0], nil
	}
}

// field returns a field of the first object of kind; path elements are map
// keys (string) or list indexes (int).
func field(kind string, path ...any) func([]*unstructured.Unstructured) (any, error) {
	return func(objs []*unstructured.Unstructured) (any, error) {
		o := find(objs, kind, "")
		if o == nil {
			return nil, fmt.Errorf("no %s rendered", kind)
		}
		return dig(o.Object, path...)
	}
}

func dig(v any, path ...any) (any, error) {
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%v is not a map", path[:i])
			}
			if v, ok = m[k]; !ok {
				return nil, fmt.Errorf("%v not found", path[:i+1])
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil, fmt.Errorf("%v: no item %d", path[:i], k)
			}
			v = l[k]
		}
	}
	return v, nil
}

func objName(kind string) func([]*unstructured.Unstructured) (any, error) {
	return func(objs []*unstructured.Unstructured) (any, error) {
		o := find(objs, kind, "")
		if o == nil {
			return nil, fmt.Errorf("no %s rendered", kind)
		}
		return dig(o.Object, "metadata", "name")
	}
}

func objNames(kind string) func([]*unstructured.Unstructured) (any, error) {
	return func(objs []*unstructured.Unstructured) (any, error) {
		var names []string
		for _, o := range objs {
			if o.GetKind() == kind {
				n, _ := dig(o.Object, "metadata", "name")
				names = append(names, fmt.Sprint(n))
			}
		}
		sort.Strings(names)
		return names, nil
	}
}

func objNamespace(kind string) func([]*unstructured.Unstructured) (any, error) {
	return func(objs []*unstructured.Unstructured) (any, error) {
		o := find(objs, kind, "")
		if o == nil {
			return nil, fmt.Errorf("no %s rendered", kind)
		}
		return dig(o.Object, "metadata", "namespace")
	}
}

// watchedRoleNamespaces are the namespaces of the manager's Roles other
// than its leader-election Role, in the order rendered.
func watchedRoleNamespaces(objs []*unstructured.Unstructured) (any, error) {
	var out []string
	for _, o := range objs {
		if o.GetKind() == "Role" && !strings.HasSuffix(o.GetName(), "-leader-election") {
			out = append(out, o.GetNamespace())
		}
	}
	return out, nil
}

func label(kind, key string) func([]*unstructured.Unstructured) (any, error) {
	return field(kind, "metadata", "labels", key)
}

func podLabel(key string) func([]*unstructured.Unstructured) (any, error) {
	return field("Deployment", "spec", "template", "metadata", "labels", key)
}

// labelsWithKeys returns the object's labels with those keys.
func labelsWithKeys(kind string, keys ...string) func([]*unstructured.Unstructured) (any, error) {
	return func(objs []*unstructured.Unstructured) (any, error) {
		got, err := field(kind, "metadata", "labels")(objs)
		if err != nil {
			return nil, err
		}
		labels, _ := got.(map[string]any)
		out := map[string]any{}
		for _, k := range keys {
			if v, ok := labels[k]; ok {
				out[k] = v
			}
		}
		return out, nil
	}
}

func serviceField(component string, path ...any) func([]*unstructured.Unstructured) (any, error) {
	return func(objs []*unstructured.Unstructured) (any, error) {
		for _, o := range objs {
			if o.GetKind() == "Service" && o.GetLabels()["app.kubernetes.io/component"] == component {
				return dig(o.Object, path...)
			}
		}
		return nil, fmt.Errorf("no %s Service", component)
	}
}

func env(name, ref string) func([]*unstructured.Unstructured) (any, error) {
	return func(objs []*unstructured.Unstructured) (any, error) {
		envs, err := field("Deployment", "spec", "template", "spec", "containers", 0, "env")(objs)
		if err != nil {
			return nil, err
		}
		for _, e := range envs.([]any) {
			if m := e.(map[string]any); m["name"] == name {
				return dig(m, "valueFrom", "secretKeyRef", ref)
			}
		}
		return nil, fmt.Errorf("no env %s", name)
	}
}
