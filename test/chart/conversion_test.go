package chart

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lohisoft/crawl-operator/internal/conversion"
)

// The CRDs convert through the release's manager, as the chart and
// config/default install them: strategy Webhook to the webhook Service,
// which selects the manager's Pods and reaches their webhook port; the
// manager serves a certificate for that Service and may patch exactly the
// three CRDs, and nothing else, to put its CA into their caBundle.
func TestCRDsConvertThroughTheManagersWebhook(t *testing.T) {
	type install struct {
		name, service, namespace string
		objs                     []*unstructured.Unstructured
	}
	var installs []install
	for _, values := range []map[string]any{nil, {"watchNamespaces": []any{"sites"}}} {
		objs, err := renderRelease(t, "crawl", releaseNamespace, values)
		if err != nil {
			t.Fatal(err)
		}
		installs = append(installs, install{"the chart", "crawl-crawl-operator-webhook", releaseNamespace, objs})
	}
	installs = append(installs, install{"config/default", "crawl-operator-webhook", "crawl-system", kustomizeBuild(t, "config/default")})

	for _, in := range installs {
		crds := 0
		for _, o := range in.objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			crds++
			conv, _, _ := unstructured.NestedMap(o.Object, "spec", "conversion")
			svc, _, _ := unstructured.NestedMap(conv, "webhook", "clientConfig", "service")
			reviews, _, _ := unstructured.NestedStringSlice(conv, "webhook", "conversionReviewVersions")
			if conv["strategy"] != "Webhook" || svc["name"] != in.service || svc["namespace"] != in.namespace ||
				svc["path"] != "/convert" || toInt(svc["port"]) != 443 || !slices.Equal(reviews, []string{"v1"}) {
				t.Errorf("%s: CRD %s converts with %v", in.name, o.GetName(), conv)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(conv, "webhook", "clientConfig", "caBundle"); found {
				t.Errorf("%s: CRD %s sets a caBundle, which the manager owns", in.name, o.GetName())
			}
		}
		if crds != len(conversion.CRDs) {
			t.Errorf("%s: %d CRDs", in.name, crds)
		}

		svc := find(in.objs, "Service", in.service)
		if svc == nil {
			t.Fatalf("%s: no Service %s", in.name, in.service)
		}
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		if len(ports) != 1 || toInt(ports[0].(map[string]any)["port"]) != 443 || ports[0].(map[string]any)["targetPort"] != "webhook" {
			t.Errorf("%s: Service %s ports %v", in.name, in.service, ports)
		}
		dep := find(in.objs, "Deployment", "")
		c := managerContainer(t, dep)
		cports, _, _ := unstructured.NestedSlice(c, "ports")
		if !slices.ContainsFunc(cports, func(p any) bool {
			m := p.(map[string]any)
			return m["name"] == "webhook" && toInt(m["containerPort"]) == 9443
		}) {
			t.Errorf("%s: the manager has no webhook port 9443: %v", in.name, cports)
		}
		selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
		for k, v := range selector {
			if podLabels[k] != v {
				t.Errorf("%s: Service %s selects %v, the manager's Pods are %v", in.name, in.service, selector, podLabels)
			}
		}
		o := managerOptions(t, dep)
		if o.Manager.Webhook.Addr != ":9443" {
			t.Errorf("%s: --webhook-bind-address %q", in.name, o.Manager.Webhook.Addr)
		}
		wo, err := o.Manager.Webhook.Options(o.NetworkPolicy.ManagerNamespace)
		if err != nil || !slices.Contains(wo.Hosts, in.service+"."+in.namespace+".svc") {
			t.Errorf("%s: the serving certificate is for %v (%v), not the Service %s.%s.svc", in.name, wo.Hosts, err, in.service, in.namespace)
		}

		var crdRules []map[string]any
		for _, r := range objsOf(in.objs, "ClusterRole", nil) {
			rules, _, _ := unstructured.NestedSlice(r.Object, "rules")
			for _, rule := range rules {
				m := rule.(map[string]any)
				if res, _ := m["resources"].([]any); len(res) > 0 && strings.HasPrefix(res[0].(string), "customresourcedefinitions") {
					crdRules = append(crdRules, m)
				}
			}
		}
		if len(crdRules) == 0 {
			t.Errorf("%s: no ClusterRole rule on customresourcedefinitions", in.name)
		}
		for _, r := range crdRules {
			names, _ := r["resourceNames"].([]any)
			var got []string
			for _, n := range names {
				got = append(got, n.(string))
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(conversion.CRDs))
			if !slices.Equal(got, want) {
				t.Errorf("%s: a rule on %v names %v, want exactly %v", in.name, r["resources"], got, want)
			}
		}
	}
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return -1
}
