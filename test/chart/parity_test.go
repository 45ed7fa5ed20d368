package chart

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/httpserver"
	"github.com/lohisoft/crawl-operator/internal/operator"
)

// managerContainer is the manager Deployment's container.
func managerContainer(t *testing.T, dep *unstructured.Unstructured) map[string]any {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("Deployment %s has %d containers, want the manager only", dep.GetName(), len(containers))
	}
	return containers[0].(map[string]any)
}

// managerOptions parses a rendered manager's args as the manager does,
// after the kubelet has expanded $(VAR) from the container's env (plain
// values and the Pod's namespace; a Secret's value stays unexpanded).
func managerOptions(t *testing.T, dep *unstructured.Unstructured) operator.Options {
	t.Helper()
	c := managerContainer(t, dep)
	var pairs []string
	env, _, _ := unstructured.NestedSlice(c, "env")
	for _, e := range env {
		e := e.(map[string]any)
		name, _ := e["name"].(string)
		if v, ok := e["value"].(string); ok {
			pairs = append(pairs, "$("+name+")", v)
		}
		if path, _, _ := unstructured.NestedString(e, "valueFrom", "fieldRef", "fieldPath"); path == "metadata.namespace" {
			pairs = append(pairs, "$("+name+")", dep.GetNamespace())
		}
	}
	expand := strings.NewReplacer(pairs...)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for i := range args {
		args[i] = expand.Replace(args[i])
	}
	o := operator.Defaults()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	var zapOpts zap.Options // cmd/manager binds the logging flags too
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager refuses the args %q: %v", args, err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("the manager refuses the args %q: %v", args, err)
	}
	return o
}

// The chart's NetworkPolicy and the one the manager ensures from the args
// the chart passes it are the same, for every setting that changes either;
// and the manager's lets crawler Pods reach the manager's own Pods.
func TestChartAndManagerNetworkPoliciesAreEqual(t *testing.T) {
	cases := []struct {
		name, release, namespace string
		values                   map[string]any
	}{
		{"defaults", "crawl", releaseNamespace, nil},
		{"every policy setting", "crawl", releaseNamespace, map[string]any{
			"fullnameOverride": "lohi",
			"egress":           map[string]any{"expectedIPs": []any{"1.2.3.4"}},
			"networkPolicy": map[string]any{
				"crawlerNamespaces": []any{"sites", "shops"},
				"extraExceptCIDRs":  []any{"34.118.224.0/20", "35.190.1.7/32"},
				"dnsNamespace":      "dns",
				"dnsPodLabels":      map[string]any{"k8s-app": "coredns", "tier": "dns"},
			},
		}},
		{"other names, no egress IPs", "prod", "bots", map[string]any{
			"nameOverride": "lohisoftbot",
			"egress":       map[string]any{"expectedIPs": []any{}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderRelease(t, tc.release, tc.namespace, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			dep := find(objs, "Deployment", "")
			o := managerOptions(t, dep)
			if !o.NetworkPolicy.Enabled {
				t.Fatal("--crawler-network-policy is off by default")
			}
			cfg, err := o.CrawlerNetworkPolicy()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, obj := range objs {
				if obj.GetKind() != "NetworkPolicy" {
					continue
				}
				n++
				var chart networkingv1.NetworkPolicy
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &chart); err != nil {
					t.Fatal(err)
				}
				mine := crawlpod.NetworkPolicy(chart.Namespace, cfg)
				if !equality.Semantic.DeepEqual(chart.Spec, mine.Spec) {
					a, _ := yaml.Marshal(chart.Spec)
					b, _ := yaml.Marshal(mine.Spec)
					t.Errorf("in %s the chart's NetworkPolicy says\n%s\nthe manager's\n%s", chart.Namespace, a, b)
				}
			}
			if n == 0 {
				t.Fatal("the chart rendered no NetworkPolicy to compare")
			}

			// The results rule selects the manager's Pods: what crawler
			// Pods need, whatever either policy says.
			results := crawlpod.NetworkPolicy("sites", cfg).Spec.Egress[2].To[0]
			podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
			if !selects(t, results.PodSelector, podLabels) ||
				!selects(t, results.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": dep.GetNamespace()}) {
				t.Errorf("the results rule (%v in %v) does not select the manager's Pods (%v in %s)",
					results.PodSelector, results.NamespaceSelector, podLabels, dep.GetNamespace())
			}
		})
	}
}

func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return !s.Empty() && s.Matches(labels.Set(set))
}

// networkPolicy.enabled and networkPolicy.operatorManaged decide
// --crawler-network-policy; the chart's own policies follow enabled only.
func TestManagerNetworkPolicyFlagFollowsValues(t *testing.T) {
	for _, tc := range []struct {
		enabled, operatorManaged bool
		chartPolicies            int
	}{{true, true, 1}, {true, false, 1}, {false, true, 0}, {false, false, 0}} {
		objs := mustRender(t, map[string]any{"networkPolicy": map[string]any{"enabled": tc.enabled, "operatorManaged": tc.operatorManaged}})
		o := managerOptions(t, find(objs, "Deployment", ""))
		if want := tc.enabled && tc.operatorManaged; o.NetworkPolicy.Enabled != want {
			t.Errorf("enabled=%t operatorManaged=%t: --crawler-network-policy=%t, want %t", tc.enabled, tc.operatorManaged, o.NetworkPolicy.Enabled, want)
		}
		if n := count(objs, "NetworkPolicy"); n != tc.chartPolicies {
			t.Errorf("enabled=%t operatorManaged=%t: %d chart NetworkPolicies, want %d", tc.enabled, tc.operatorManaged, n, tc.chartPolicies)
		}
	}
}

// config/default runs the manager exactly as the chart's defaults do, for a
// release crawl-operator in crawl-system with the index on an emptyDir (a
// trial install: the README says to patch in a volume): same image, args,
// env, ports, probes, resources, volumes and security contexts. A flag the
// chart gains must reach config/default too.
func TestKustomizeDefaultMatchesTheChart(t *testing.T) {
	objs, err := renderRelease(t, "crawl-operator", releaseNamespace, map[string]any{
		"storage": map[string]any{"sqlite": map[string]any{"persistence": map[string]any{"enabled": false}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	chart := find(objs, "Deployment", "")
	kust := find(kustomizeBuild(t, "config/default"), "Deployment", "crawl-operator-controller-manager")
	if kust == nil {
		t.Fatal("config/default renders no manager Deployment")
	}
	if kust.GetNamespace() != chart.GetNamespace() {
		t.Errorf("config/default installs in %q, the chart in %q", kust.GetNamespace(), chart.GetNamespace())
	}
	for _, path := range [][]string{
		{"spec", "replicas"},
		{"spec", "strategy"},
		{"spec", "template", "metadata", "labels"},
		{"spec", "template", "spec", "securityContext"},
		{"spec", "template", "spec", "terminationGracePeriodSeconds"},
		{"spec", "template", "spec", "volumes"},
		{"spec", "template", "spec", "containers"},
	} {
		want, _, _ := unstructured.NestedFieldNoCopy(chart.Object, path...)
		got, _, _ := unstructured.NestedFieldNoCopy(kust.Object, path...)
		if !reflect.DeepEqual(got, want) {
			a, _ := yaml.Marshal(got)
			b, _ := yaml.Marshal(want)
			t.Errorf("%s: config/default has\n%s\nthe chart\n%s", strings.Join(path, "."), a, b)
		}
	}
	// The pinned image is the chart's, never a moving tag.
	image, _, _ := unstructured.NestedString(managerContainer(t, kust), "image")
	if strings.HasSuffix(image, ":latest") || !strings.Contains(image, ":") {
		t.Errorf("config/default image %q is not pinned", image)
	}
	managerOptions(t, kust)
}

// The kubelet's SIGKILL at the Pod's grace period comes after the manager
// has stopped and released its Lease, and after the reports and searches
// in flight have drained: killed earlier, the manager would leave the
// Lease to expire and the standby 15 s without leading.
func TestGracePeriodOutlastsTheManagersStop(t *testing.T) {
	objs, err := renderRelease(t, "crawl", releaseNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedFieldNoCopy(find(objs, "Deployment", "").Object, "spec", "template", "spec", "terminationGracePeriodSeconds")
	grace, _ := v.(float64) // decoded from JSON; unset fails: the chart must say it
	stop := operator.GracefulShutdownTimeout + operator.LeaderRenewDeadline
	if time.Duration(grace)*time.Second <= max(stop, httpserver.DrainTimeout) {
		t.Errorf("terminationGracePeriodSeconds %v: want more than the manager's stop and the Lease's release (%s) and the drain (%s)",
			v, stop, httpserver.DrainTimeout)
	}
}
