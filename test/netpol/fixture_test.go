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

// fixture is one install, as test/chart writes it (netpolFixture there;
// this module cannot import that one, and the strict decoding below fails
// on any field the two do not share): the facts about the cluster come
// from the chart's values, the manager's and the crawler Pods' labels and
// ports from what the chart and the manager make, and the policies from
// both.
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
	// DialerVerdicts are the crawler's dialer's answers at the edges of
	// every special-purpose range (crawler/specialpurpose).
	DialerVerdicts []struct {
		Addr    string `json:"addr"`
		Where   string `json:"where"`
		Allowed bool   `json:"allowed"`
	} `json:"dialerVerdicts"`
}

// The scenarios test/chart writes, and the namespaces where each writer
// must have put a crawler policy: a missing fixture, or a writer that
// wrote fewer policies, is a failure, not a smaller test.
var scenarios = []struct {
	name               string
	chartNS, managerNS []string
}{
	{"defaults", []string{"default"}, []string{"default", "elsewhere"}},
	{"user-settings", []string{"sites", "shops"}, []string{"sites", "shops", "elsewhere"}},
	{"chart-only", []string{"sites"}, nil}, // networkPolicy.operatorManaged=false
}

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
	for _, sc := range scenarios {
		if out[sc.name] == nil {
			t.Fatalf("no fixture for scenario %q in testdata: run `make netpol-fixtures` in the repository's root", sc.name)
		}
	}
	return out
}

// policyNamespaces are the namespaces of policies, in order.
func policyNamespaces(policies []*networkingv1.NetworkPolicy) []string {
	var out []string
	for _, p := range policies {
		out = append(out, p.Namespace)
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
