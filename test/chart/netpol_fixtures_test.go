package chart

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/specialpurpose"
	"github.com/lohisoft/crawl-operator/crawler/specialpurpose/specialpurposetest"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// test/netpol feeds the NetworkPolicies that the chart and the manager
// write to an independent evaluator, cyclonus's matcher. cyclonus pins
// Kubernetes libraries older than this module's, so test/netpol is a module
// of its own that cannot import this one: it reads what this test writes to
// test/netpol/testdata. With NETPOL_FIXTURES=update (`make netpol-fixtures`)
// the test writes the files; otherwise it fails when they differ from what
// the chart and the code produce now, and `make test` runs it before
// test/netpol, so the evaluator never judges a stale copy.
const (
	netpolFixtureDir = "../netpol/testdata"
	netpolUpdateEnv  = "NETPOL_FIXTURES"
)

// elsewhereNamespace is a namespace the chart lists nowhere, say one
// created after the install: with every namespace watched, the manager
// runs crawler Pods there too, under its own policy only.
const elsewhereNamespace = "elsewhere"

// netpolFixture is one install as the evaluator needs it. The facts about
// the cluster (where DNS runs, the egress nodes' addresses, the ranges to
// keep crawlers from) are the values as Helm merged them, what the user
// told the chart, and not read back from the policies: a template that
// dropped a value must show up as a wrong verdict.
type netpolFixture struct {
	Scenario         string            `json:"scenario"`
	DNSNamespace     string            `json:"dnsNamespace"`
	DNSPodLabels     map[string]string `json:"dnsPodLabels"`
	EgressIPs        []string          `json:"egressIPs"`
	ExtraExceptCIDRs []string          `json:"extraExceptCIDRs"`
	// Manager is the manager's Pods as the chart's Deployment makes them.
	Manager struct {
		Namespace string                 `json:"namespace"`
		PodLabels map[string]string      `json:"podLabels"`
		Ports     []corev1.ContainerPort `json:"ports"`
	} `json:"manager"`
	// CrawlerPodLabels are a crawler Pod's labels as the manager makes it
	// with the flags the chart passes; CrawlerNamespaces are where the
	// manager runs crawler Pods (--watch-namespaces, or every namespace).
	CrawlerPodLabels  map[string]string `json:"crawlerPodLabels"`
	CrawlerNamespaces []string          `json:"crawlerNamespaces"`
	// ChartPolicies are rendered by Helm; ManagerPolicies are what the
	// manager ensures (crawlpod.NetworkPolicy, from the chart's args) in
	// each crawler namespace.
	ChartPolicies   []map[string]any `json:"chartPolicies"`
	ManagerPolicies []map[string]any `json:"managerPolicies"`
	// DialerVerdicts are the crawler's own answers (fetch.IsPublicIPv4)
	// at the edges of every special-purpose range: the policies must
	// judge those addresses alike, besides the install's own excepts.
	DialerVerdicts []dialerVerdict `json:"dialerVerdicts"`
}

// dialerVerdict is whether the crawler's dialer connects to Addr.
type dialerVerdict struct {
	Addr    string `json:"addr"`
	Where   string `json:"where"`
	Allowed bool   `json:"allowed"`
}

// netpolScenarios are the installs the evaluator checks: the defaults,
// every value that changes a policy (and a Service port that must not),
// and the chart's policy alone where the manager writes none.
var netpolScenarios = []struct {
	name, release, namespace string
	values                   map[string]any
}{
	{"defaults", "crawl-operator", releaseNamespace, nil},
	{"user-settings", "prod", "bots", map[string]any{
		"fullnameOverride": "lohi",
		// Public addresses: the policies except every special-purpose
		// range anyway, so addresses there would not show a dropped value.
		"egress": map[string]any{"expectedIPs": []any{"185.15.58.10", "185.15.58.11"}},
		"networkPolicy": map[string]any{
			"crawlerNamespaces": []any{"sites", "shops"},
			// The cloud API server's public endpoint and a public node.
			"extraExceptCIDRs": []any{"34.118.224.0/20", "185.15.58.2/32"},
			"dnsNamespace":     "dns",
			"dnsPodLabels":     map[string]any{"k8s-app": "coredns", "tier": "dns"},
		},
		// Policies see the Pod's port, not the Service's.
		"service": map[string]any{"resultsPort": 9000},
		"crawler": map[string]any{"podLabels": map[string]any{"team": "search"}},
	}},
	{"chart-only", "crawl-operator", releaseNamespace, map[string]any{
		"watchNamespaces": []any{"sites"},
		"networkPolicy":   map[string]any{"operatorManaged": false, "crawlerNamespaces": []any{"sites"}},
	}},
}

func TestNetworkPolicyFixturesAreCurrent(t *testing.T) {
	update := os.Getenv(netpolUpdateEnv) == "update"
	for _, sc := range netpolScenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := netpolFixtureFor(t, sc.name, sc.release, sc.namespace, sc.values)
			path := filepath.Join(netpolFixtureDir, sc.name+".yaml")
			if update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s is not what the chart and the manager write now (%v): run `make netpol-fixtures` and commit it", path, err)
			}
		})
	}
}

// netpolFixtureFor renders the chart and builds the manager's policies and
// a crawler Pod from the args the chart passes the manager.
func netpolFixtureFor(t *testing.T, scenario, release, namespace string, vals map[string]any) []byte {
	t.Helper()
	objs, err := renderRelease(t, release, namespace, vals)
	if err != nil {
		t.Fatal(err)
	}
	chrt, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := chartutil.CoalesceValues(chrt, vals)
	if err != nil {
		t.Fatal(err)
	}
	f := netpolFixture{Scenario: scenario}
	f.DNSNamespace, _, _ = unstructured.NestedString(merged, "networkPolicy", "dnsNamespace")
	f.DNSPodLabels, _, _ = unstructured.NestedStringMap(merged, "networkPolicy", "dnsPodLabels")
	f.EgressIPs, _, _ = unstructured.NestedStringSlice(merged, "egress", "expectedIPs")
	f.ExtraExceptCIDRs, _, _ = unstructured.NestedStringSlice(merged, "networkPolicy", "extraExceptCIDRs")

	var own []netip.Prefix
	for _, ip := range f.EgressIPs {
		own = append(own, netip.PrefixFrom(netip.MustParseAddr(ip), 32))
	}
	for _, c := range f.ExtraExceptCIDRs {
		own = append(own, netip.MustParsePrefix(c))
	}
	for _, p := range own {
		if slices.ContainsFunc(specialpurpose.Forbidden(), p.Overlaps) {
			t.Fatalf("scenario %s excepts %s, in a range every policy excepts: the evaluator could not tell whether the value took effect", scenario, p)
		}
	}
	for _, sample := range specialpurposetest.Samples() {
		f.DialerVerdicts = append(f.DialerVerdicts, dialerVerdict{Addr: sample.Addr.String(), Where: sample.Where, Allowed: fetch.IsPublicIPv4(sample.Addr)})
	}

	dep := find(objs, "Deployment", "")
	f.Manager.Namespace = dep.GetNamespace()
	f.Manager.PodLabels, _, _ = unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	var c corev1.Container
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(managerContainer(t, dep), &c); err != nil {
		t.Fatal(err)
	}
	f.Manager.Ports = c.Ports

	o := managerOptions(t, dep)
	f.CrawlerNamespaces = o.Manager.WatchNamespaces
	if o.Manager.WatchNamespaces.All() {
		f.CrawlerNamespaces, _, _ = unstructured.NestedStringSlice(merged, "networkPolicy", "crawlerNamespaces")
		f.CrawlerNamespaces = append(f.CrawlerNamespaces, elsewhereNamespace)
	}
	o.Pod.Egress = o.Index.Egress.Selector // as operator.New does
	f.CrawlerPodLabels = crawlerPod(t, f.CrawlerNamespaces[0], o.Pod).Labels

	for _, obj := range objs {
		if obj.GetKind() == "NetworkPolicy" {
			f.ChartPolicies = append(f.ChartPolicies, obj.Object)
		}
	}
	if o.NetworkPolicy.Enabled {
		cfg, err := o.CrawlerNetworkPolicy()
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range f.CrawlerNamespaces {
			np := crawlpod.NetworkPolicy(ns, cfg)
			np.TypeMeta = metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(np)
			if err != nil {
				t.Fatal(err)
			}
			f.ManagerPolicies = append(f.ManagerPolicies, u)
		}
	}
	b, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	header := "# Code generated by TestNetworkPolicyFixturesAreCurrent (test/chart) from the chart and internal/crawlpod\n" +
		"# (make netpol-fixtures). DO NOT EDIT: test/netpol feeds it to cyclonus's NetworkPolicy evaluator.\n"
	return append([]byte(header), b...)
}

// crawlerPod is a crawler Pod as the manager makes it in namespace ns.
func crawlerPod(t *testing.T, ns string, cfg crawlpod.Config) *corev1.Pod {
	t.Helper()
	const url = "https://bakery.example/"
	s, err := site.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	target := &crawlv1.CrawlTarget{
		ObjectMeta: metav1.ObjectMeta{Name: "bakery", Namespace: ns, UID: "5d1e0c6a-0000-4000-8000-000000000001"},
		Spec:       crawlv1.CrawlTargetSpec{URL: url},
	}
	return crawlpod.Pod(crawlpod.Run{Target: target, Site: s, Number: 1, Node: "egress-1", TokenSHA256: "sha"}, cfg)
}
