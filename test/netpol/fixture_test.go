package netpol

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// fixture is one install, as test/chart writes it (netpolFixture there):
// the facts about the cluster come from the chart's values, the manager's
// and the crawler Pods' labels and ports from what the chart and the
// manager make, and the policies from both.
type fixture struct {
	Scenario         string            `json:"scenario"`
	DNSNamespace     string            `json:"dnsNamespace"`
	DNSPodLabels     map[string]string `json:"dnsPodLabels"`
	EgressIPs        []string          `json:"egressIPs"`
	ExtraExceptCIDRs []string          `json:"extraExceptCIDRs"`
	Manager          struct {
		Namespace string                 `json:"namespace"`
		PodLabels map[string]string      `json:"podLabels"`
		Ports     []corev1.ContainerPort `json:"ports"`
	} `json:"manager"`
	CrawlerPodLabels  map[string]string             `json:"crawlerPodLabels"`
	CrawlerNamespaces []string                      `json:"crawlerNamespaces"`
	ChartPolicies     []*networkingv1.NetworkPolicy `json:"chartPolicies"`
	ManagerPolicies   []*networkingv1.NetworkPolicy `json:"managerPolicies"`
}

// The scenarios test/chart writes; a missing one is a failure, not a
// smaller test.
var scenarios = []string{"defaults", "user-settings", "chart-only"}

// loadFixtures reads every scenario's fixture, by name.
func loadFixtures(t *testing.T) map[string]*fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*fixture{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f := &fixture{}
		if err := yaml.UnmarshalStrict(b, f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[f.Scenario] = f
	}
	for _, name := range scenarios {
		if out[name] == nil {
			t.Fatalf("no fixture for scenario %q in testdata: run `make netpol-fixtures` in the repository's root", name)
		}
	}
	return out
}

// policySet is the policies that one writer, or both, put in a cluster.
type policySet struct {
	name     string
	policies []*networkingv1.NetworkPolicy
}

// sets are the chart's policies alone, the manager's alone and, when both
// wrote some, both together (policies add up).
func (f *fixture) sets() []policySet {
	var out []policySet
	for _, s := range []policySet{{"chart", f.ChartPolicies}, {"manager", f.ManagerPolicies}} {
		if len(s.policies) > 0 {
			out = append(out, s)
		}
	}
	if len(out) == 2 {
		out = append(out, policySet{"chart+manager", slices.Concat(f.ChartPolicies, f.ManagerPolicies)})
	}
	return out
}

// namespaces are the crawler namespaces where s has a policy.
func (s policySet) namespaces(crawlerNamespaces []string) []string {
	var out []string
	for _, ns := range crawlerNamespaces {
		if slices.ContainsFunc(s.policies, func(p *networkingv1.NetworkPolicy) bool { return p.Namespace == ns }) {
			out = append(out, ns)
		}
	}
	return out
}
