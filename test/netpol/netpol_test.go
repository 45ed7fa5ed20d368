package netpol

import (
	"slices"
	"strings"
	"testing"

	"github.com/mattfenwick/cyclonus/pkg/matcher"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// wrong returns the flows whose verdict under policies differs from what
// the flow says, each with the evaluator's explanation.
func wrong(policies []*networkingv1.NetworkPolicy, flows []flow) map[*flow]string {
	// Unsimplified: the evaluator judges the policies as written.
	evaluator := matcher.BuildNetworkPolicies(false, policies)
	out := map[*flow]string{}
	for i := range flows {
		fl := &flows[i]
		if res := evaluator.IsTrafficAllowed(fl.traffic()); res.IsAllowed() != fl.allowed {
			out[fl] = res.Table()
		}
	}
	return out
}

// evaluate is the evaluator's verdict on one flow.
func evaluate(policies []*networkingv1.NetworkPolicy, fl flow) bool {
	return matcher.BuildNetworkPolicies(false, policies).IsTrafficAllowed(fl.traffic()).IsAllowed()
}

func (fl *flow) traffic() *matcher.Traffic {
	return &matcher.Traffic{Source: fl.from, Destination: fl.to, ResolvedPort: fl.port, ResolvedPortName: fl.portName, Protocol: fl.proto}
}

// Every policy set the chart and the manager write, alone and together,
// lets crawler Pods reach public IPv4 addresses on any port, cluster DNS
// and the results endpoint, and nothing else; nothing reaches them.
func TestCrawlerPolicies(t *testing.T) {
	fixtures := loadFixtures(t)
	for _, sc := range scenarios {
		name, f := sc.name, fixtures[sc.name]
		if got := policyNamespaces(f.ChartPolicies); !slices.Equal(got, sc.chartNS) {
			t.Errorf("%s: the chart wrote crawler policies in %v, want %v", name, got, sc.chartNS)
		}
		if got := policyNamespaces(f.ManagerPolicies); !slices.Equal(got, sc.managerNS) {
			t.Errorf("%s: the manager wrote crawler policies in %v, want %v", name, got, sc.managerNS)
		}
		if all := (policySet{policies: slices.Concat(f.ChartPolicies, f.ManagerPolicies)}).namespaces(f.CrawlerNamespaces); len(all) != len(f.CrawlerNamespaces) {
			t.Errorf("%s: crawler Pods run in %v, but only %v have a crawler policy", name, f.CrawlerNamespaces, all)
		}
		for _, set := range f.sets() {
			for _, ns := range set.namespaces(f.CrawlerNamespaces) {
				t.Run(name+"/"+set.name+"/"+ns, func(t *testing.T) {
					flows := f.flows(t, ns)
					for fl, why := range wrong(set.policies, flows) {
						t.Errorf("%s: %s: allowed=%t, want %t\n%s", fl.group, fl.name, !fl.allowed, fl.allowed, why)
					}
				})
			}
		}
	}
}

// flips says which of a namespace's flows another policy is expected to
// turn around; nil means none.
type flips func(*flow) bool

func inGroups(groups ...string) flips {
	return func(fl *flow) bool {
		return slices.Contains(groups, fl.group)
	}
}

// egressOnly is a crawler's connection to something that is not a crawler.
func egressOnly(fl *flow) bool { return fl.fromCrawler && !fl.toCrawler }

// assertFlips checks that exactly the flows want names change their
// verdict once extra joins the policies, and that want names at least one.
func assertFlips(t *testing.T, f *fixture, ns string, extra []*networkingv1.NetworkPolicy, want flips) {
	t.Helper()
	flows := f.flows(t, ns)
	got := wrong(slices.Concat(f.ChartPolicies, f.ManagerPolicies, extra), flows)
	expected := 0
	for i := range flows {
		fl := &flows[i]
		w := want != nil && want(fl)
		if w {
			expected++
		}
		if _, flipped := got[fl]; flipped != w {
			t.Errorf("%s: %s: verdict changed %t, want %t\n%s", fl.group, fl.name, flipped, w, got[fl])
		}
	}
	if want != nil && expected == 0 {
		t.Error("the case expects flows to change but names none: the table says nothing")
	}
}

// Policies add up: whatever else selects crawler Pods in their namespace
// widens what they may do. Rows with flips are findings: a user's policy
// that selects every Pod of the namespace opens crawler Pods too, and two
// releases whose crawlerNamespaces meet lose each other's excepted ranges.
// Policies that do not select crawler Pods change nothing.
func TestOtherPoliciesInTheNamespace(t *testing.T) {
	fixtures := loadFixtures(t)
	anotherRelease := fixtures["defaults"].ChartPolicies[0].DeepCopy()
	anotherRelease.Namespace = "sites"
	for _, tc := range []struct {
		name, scenario, ns string
		extra              *networkingv1.NetworkPolicy
		flips              flips
	}{
		{"default deny for every Pod", "defaults", "default", parse(t, `
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}`), nil},
		{"a proxy for the web Pods", "defaults", "default", parse(t, `
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8}}]}]`), nil},
		{"all egress for every Pod but crawlers", "defaults", "default", parse(t, `
spec:
  podSelector:
    matchExpressions: [{key: app.kubernetes.io/name, operator: NotIn, values: [lohisoftbot-crawler]}]
  policyTypes: [Egress]
  egress: [{}]`), nil},
		{"finding: DNS anywhere for every Pod", "defaults", "default", parse(t, `
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{ports: [{protocol: UDP, port: 53}, {protocol: TCP, port: 53}]}]`),
			func(fl *flow) bool { return egressOnly(fl) && !fl.allowed && fl.port == 53 }},
		{"finding: all egress for every Pod", "defaults", "default", parse(t, `
spec: {podSelector: {}, policyTypes: [Egress], egress: [{}]}`),
			func(fl *flow) bool { return egressOnly(fl) && !fl.allowed }},
		{"finding: all ingress for every Pod", "defaults", "default", parse(t, `
spec: {podSelector: {}, policyTypes: [Ingress], ingress: [{}]}`),
			func(fl *flow) bool { return fl.toCrawler && !fl.fromCrawler }},
		{"finding: another release's chart policy in the same namespace", "user-settings", "sites", anotherRelease,
			inGroups(groupEgressIP, groupExcept)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertFlips(t, fixtures[tc.scenario], tc.ns, []*networkingv1.NetworkPolicy{withNamespace(tc.extra, tc.ns)}, tc.flips)
		})
	}
}

// parse reads a NetworkPolicy a user might write.
func parse(t *testing.T, spec string) *networkingv1.NetworkPolicy {
	t.Helper()
	np := &networkingv1.NetworkPolicy{}
	if err := yaml.UnmarshalStrict([]byte(spec), np); err != nil {
		t.Fatalf("%v:\n%s", err, spec)
	}
	np.Name = "users-own"
	return np
}

func withNamespace(np *networkingv1.NetworkPolicy, ns string) *networkingv1.NetworkPolicy {
	np = np.DeepCopy()
	np.Namespace = ns
	return np
}

// The evaluator is not a yes-man: with no policy it lets a crawler reach
// the metadata service, and each policy with one promise taken out fails
// the flows of that promise.
func TestTheEvaluatorCatchesBrokenPolicies(t *testing.T) {
	f := loadFixtures(t)["defaults"]
	flows := f.flows(t, "default")
	if got := wrong(nil, flows); len(got) == 0 {
		t.Fatal("with no policy at all every flow got its expected verdict: the flows check nothing")
	}
	for _, tc := range []struct {
		name   string
		break_ func(*networkingv1.NetworkPolicySpec)
		group  string
	}{
		{"no except list", func(s *networkingv1.NetworkPolicySpec) { s.Egress[0].To[0].IPBlock.Except = nil }, groupReserved},
		// The except-list as it was before it came from the dialer's table.
		{"documentation and 6to4 ranges allowed", func(s *networkingv1.NetworkPolicySpec) {
			block := s.Egress[0].To[0].IPBlock
			block.Except = slices.DeleteFunc(block.Except, func(c string) bool {
				return slices.Contains([]string{"192.0.2.0/24", "192.88.99.0/24", "198.51.100.0/24", "203.0.113.0/24"}, c)
			})
		}, groupDialer},
		{"AS112 excepted too", func(s *networkingv1.NetworkPolicySpec) {
			block := s.Egress[0].To[0].IPBlock
			block.Except = append(block.Except, "192.31.196.0/24")
		}, groupDialer},
		{"no egress IPs excepted", func(s *networkingv1.NetworkPolicySpec) {
			block := s.Egress[0].To[0].IPBlock
			block.Except = slices.DeleteFunc(block.Except, func(c string) bool { return slices.Contains(f.EgressIPs, strings.TrimSuffix(c, "/32")) })
		}, groupEgressIP},
		{"public rule on port 443 only", func(s *networkingv1.NetworkPolicySpec) {
			https := intstr.FromInt32(443)
			s.Egress[0].Ports = []networkingv1.NetworkPolicyPort{{Port: &https}}
		}, groupPublic},
		{"DNS rule on every port", func(s *networkingv1.NetworkPolicySpec) { s.Egress[1].Ports = nil }, groupDNS},
		{"DNS rule in every namespace", func(s *networkingv1.NetworkPolicySpec) { s.Egress[1].To[0].NamespaceSelector = nil }, groupDNS},
		{"results rule on every port", func(s *networkingv1.NetworkPolicySpec) { s.Egress[2].Ports = nil }, groupManager},
		{"results rule in every namespace", func(s *networkingv1.NetworkPolicySpec) {
			s.Egress[2].To[0].NamespaceSelector.MatchLabels = nil
		}, groupManager},
		{"results rule for every Pod", func(s *networkingv1.NetworkPolicySpec) { s.Egress[2].To[0].PodSelector = nil }, groupManager},
		{"egress only", func(s *networkingv1.NetworkPolicySpec) { s.PolicyTypes = s.PolicyTypes[1:] }, groupIngress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := f.ManagerPolicies[0].DeepCopy()
			tc.break_(&np.Spec)
			var failed []string
			for fl := range wrong([]*networkingv1.NetworkPolicy{np}, flows) {
				failed = append(failed, fl.group+": "+fl.name)
			}
			if !slices.ContainsFunc(failed, func(s string) bool { return strings.HasPrefix(s, tc.group+": ") }) {
				t.Errorf("the broken policy passed every flow of %q (failed: %v)", tc.group, failed)
			}
		})
	}
}
