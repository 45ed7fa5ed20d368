package crawlpod

import (
	"errors"
	"flag"
	"io"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/specialpurpose"
	"github.com/lohisoft/crawl-operator/crawler/specialpurpose/specialpurposetest"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// The ranges no crawler Pod may reach whatever the flags say: the ones the
// crawler's dialer refuses (specialpurpose's own test writes them out).
var wantReserved = func() []string {
	var out []string
	for _, p := range specialpurpose.Forbidden() {
		out = append(out, p.String())
	}
	return out
}()

func TestNetworkPolicy(t *testing.T) {
	base := func() NetworkPolicyConfig {
		c := DefaultNetworkPolicyConfig()
		c.ManagerNamespace, c.ResultsPort = "crawl-system", 8083
		return c
	}
	cases := []struct {
		name   string
		config func(*NetworkPolicyConfig)
		// what the rules must say
		except           []string
		dnsNS, managerNS string
		dnsPods, manager map[string]string
		port             int
	}{{
		name:    "defaults",
		config:  func(*NetworkPolicyConfig) {},
		except:  wantReserved,
		dnsNS:   "kube-system",
		dnsPods: map[string]string{"k8s-app": "kube-dns"}, managerNS: "crawl-system",
		manager: map[string]string{"app.kubernetes.io/name": "crawl-operator"}, port: 8083,
	}, {
		name: "egress IPs, then extra ranges, after the reserved ones",
		config: func(c *NetworkPolicyConfig) {
			c.EgressIPs = egress.MustParseAddresses("79.139.58.98,79.139.58.121")
			c.ExceptCIDRs = []netip.Prefix{netip.MustParsePrefix("34.118.224.0/20"), netip.MustParsePrefix("35.190.1.7/32")}
		},
		except:  append(append([]string{}, wantReserved...), "79.139.58.98/32", "79.139.58.121/32", "34.118.224.0/20", "35.190.1.7/32"),
		dnsNS:   "kube-system",
		dnsPods: map[string]string{"k8s-app": "kube-dns"}, managerNS: "crawl-system",
		manager: map[string]string{"app.kubernetes.io/name": "crawl-operator"}, port: 8083,
	}, {
		name: "another DNS, another manager",
		config: func(c *NetworkPolicyConfig) {
			c.DNSNamespace, c.DNSPodLabels = "dns", map[string]string{}
			c.ManagerNamespace, c.ResultsPort = "bots", 9443
			c.ManagerPodLabels = map[string]string{"app.kubernetes.io/name": "lohi", "app.kubernetes.io/instance": "prod"}
		},
		except:  wantReserved,
		dnsNS:   "dns",
		dnsPods: nil, managerNS: "bots",
		manager: map[string]string{"app.kubernetes.io/name": "lohi", "app.kubernetes.io/instance": "prod"}, port: 9443,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.config(&c)
			np := NetworkPolicy("sites", c)
			if np.Name != NetworkPolicyName || np.Namespace != "sites" {
				t.Errorf("NetworkPolicy %s/%s, want sites/%s", np.Namespace, np.Name, NetworkPolicyName)
			}
			spec := np.Spec
			if !reflect.DeepEqual(spec.PolicyTypes, []networkingv1.PolicyType{"Ingress", "Egress"}) || spec.Ingress != nil {
				t.Errorf("policyTypes %v, ingress %v: want Ingress and Egress with no ingress rule", spec.PolicyTypes, spec.Ingress)
			}
			if len(spec.Egress) != 3 {
				t.Fatalf("%d egress rules, want public IPv4, DNS, results", len(spec.Egress))
			}
			public := spec.Egress[0]
			if len(public.To) != 1 || public.To[0].IPBlock == nil || public.To[0].IPBlock.CIDR != "0.0.0.0/0" || public.Ports != nil ||
				!reflect.DeepEqual(public.To[0].IPBlock.Except, tc.except) {
				t.Errorf("public rule %+v, want 0.0.0.0/0 on every port except %v", public, tc.except)
			}
			checkPeer(t, "DNS", spec.Egress[1], tc.dnsNS, tc.dnsPods, "UDP/53,TCP/53")
			checkPeer(t, "results", spec.Egress[2], tc.managerNS, tc.manager, "TCP/"+strconv.Itoa(tc.port))
		})
	}
}

// The crawler's dialer and the NetworkPolicy judge every address alike:
// the first and last address of each special-purpose range, the ones just
// outside it, and public addresses. The policy's verdict is its ipBlock
// evaluated as Kubernetes defines it; the dialer's is its answer for the
// address as a URL's host.
func TestNetworkPolicyAgreesWithTheDialer(t *testing.T) {
	c := DefaultNetworkPolicyConfig()
	c.ManagerNamespace, c.ResultsPort = "crawl-system", 8083
	block := NetworkPolicy("sites", c).Spec.Egress[0].To[0].IPBlock
	var d fetch.Dialer
	verdicts := map[bool]int{}
	for _, s := range specialpurposetest.Samples() {
		_, err := d.Addresses(t.Context(), s.Addr.String())
		if err != nil && !errors.Is(err, fetch.ErrNonPublic) {
			t.Fatalf("%s: %v", s.Addr, err)
		}
		dialer, policy := err == nil, ipBlockAllows(t, block, s.Addr)
		if dialer != policy {
			t.Errorf("%s, %s: the dialer allows it %t, the NetworkPolicy %t", s.Addr, s.Where, dialer, policy)
		}
		verdicts[dialer]++
	}
	if verdicts[true] == 0 || verdicts[false] == 0 {
		t.Errorf("verdicts %v: the samples test only one side", verdicts)
	}
}

// ipBlockAllows is what an ipBlock peer lets through, as Kubernetes
// defines it: inside cidr and in none of except.
func ipBlockAllows(t *testing.T, b *networkingv1.IPBlock, a netip.Addr) bool {
	t.Helper()
	in := func(cidr string) bool {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			t.Fatalf("ipBlock: %v", err)
		}
		return p.Contains(a)
	}
	return in(b.CIDR) && !slices.ContainsFunc(b.Except, in)
}

// checkPeer checks a rule that opens ports to the Pods of one namespace.
func checkPeer(t *testing.T, what string, rule networkingv1.NetworkPolicyEgressRule, ns string, pods map[string]string, ports string) {
	t.Helper()
	if len(rule.To) != 1 || rule.To[0].IPBlock != nil || rule.To[0].NamespaceSelector == nil || rule.To[0].PodSelector == nil {
		t.Fatalf("%s rule %+v: want one namespace and Pod selector", what, rule)
	}
	peer := rule.To[0]
	if !reflect.DeepEqual(peer.NamespaceSelector.MatchLabels, map[string]string{corev1.LabelMetadataName: ns}) || peer.NamespaceSelector.MatchExpressions != nil {
		t.Errorf("%s rule selects namespaces %v, want only %s", what, peer.NamespaceSelector, ns)
	}
	if len(peer.PodSelector.MatchLabels)+len(pods) > 0 && !reflect.DeepEqual(peer.PodSelector.MatchLabels, pods) {
		t.Errorf("%s rule selects Pods %v, want %v", what, peer.PodSelector.MatchLabels, pods)
	}
	var got []string
	for _, p := range rule.Ports {
		got = append(got, string(*p.Protocol)+"/"+p.Port.String())
	}
	if strings.Join(got, ",") != ports {
		t.Errorf("%s rule ports %v, want %s", what, got, ports)
	}
}

// The policy selects the Pods this package makes, and not the manager's.
func TestNetworkPolicySelectsCrawlerPods(t *testing.T) {
	c := DefaultNetworkPolicyConfig()
	np := NetworkPolicy("web", c)
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	pod := Pod(testRun("example", crawlv1.CrawlTargetSpec{URL: "https://example.com/"}), testConfig())
	if !sel.Matches(k8slabels.Set(pod.Labels)) {
		t.Errorf("selector %s does not select a crawler Pod (%v)", sel, pod.Labels)
	}
	if sel.Matches(k8slabels.Set(c.ManagerPodLabels)) {
		t.Errorf("selector %s selects the manager's Pods", sel)
	}
	// The config's maps are the caller's: the policy holds copies.
	c.ManagerPodLabels["app.kubernetes.io/name"] = "changed"
	if np.Spec.Egress[2].To[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "crawl-operator" {
		t.Error("the policy shares the config's label map")
	}
}

func parseNetworkPolicyFlags(args ...string) (NetworkPolicyConfig, error) {
	c := DefaultNetworkPolicyConfig()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.BindFlags(fs)
	return c, fs.Parse(args)
}

func TestNetworkPolicyFlags(t *testing.T) {
	c, err := parseNetworkPolicyFlags("--manager-namespace=crawl-system",
		"--manager-pod-labels=app.kubernetes.io/name=crawl-operator,app.kubernetes.io/instance=crawl",
		"--crawler-network-policy-except-cidrs=203.0.113.0/24, 198.51.100.7/32,",
		"--crawler-network-policy-dns-namespace=dns", "--crawler-network-policy-dns-pod-labels=k8s-app=coredns")
	if err != nil {
		t.Fatal(err)
	}
	want := NetworkPolicyConfig{
		Enabled: true, ManagerNamespace: "crawl-system",
		ManagerPodLabels: map[string]string{"app.kubernetes.io/name": "crawl-operator", "app.kubernetes.io/instance": "crawl"},
		ExceptCIDRs:      []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.7/32")},
		DNSNamespace:     "dns", DNSPodLabels: map[string]string{"k8s-app": "coredns"},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("parsed %+v\nwant   %+v", c, want)
	}

	// Bad values are refused naming the flag.
	for _, tc := range []struct{ arg, want string }{
		{"--crawler-network-policy-except-cidrs=2001:db8::/32", `"2001:db8::/32" is not an IPv4 CIDR`},
		{"--crawler-network-policy-except-cidrs=10.1.2.3/24", `"10.1.2.3/24" has host bits set: did you mean 10.1.2.0/24?`},
		{"--crawler-network-policy-except-cidrs=10.0.0.0", `"10.0.0.0" is not an IPv4 CIDR`},
		{"--crawler-network-policy-except-cidrs=10.0.0.0/33", `"10.0.0.0/33" is not an IPv4 CIDR`},
		{"--manager-pod-labels=crawl-operator", "want comma-separated key=value labels"},
		{"--manager-pod-labels=app=crawl operator", `Invalid value: "crawl operator"`},
		{"--crawler-network-policy-dns-pod-labels=-bad-=x", `Invalid value: "-bad-"`},
		{"--crawler-network-policy=maybe", "parse error"},
	} {
		_, err := parseNetworkPolicyFlags(tc.arg)
		flagName, _, _ := strings.Cut(strings.TrimPrefix(tc.arg, "--"), "=")
		if err == nil || !strings.Contains(err.Error(), "-"+flagName+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming -%s and saying %q", tc.arg, err, flagName, tc.want)
		}
	}
}

func TestNetworkPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		port int32
		want string // "" = valid
	}{
		{"complete", []string{"--manager-namespace=crawl-system"}, 8083, ""},
		{"off needs nothing", []string{"--crawler-network-policy=false", "--manager-pod-labels="}, 0, ""},
		{"no manager namespace", nil, 8083, "--crawler-network-policy needs --manager-namespace"},
		{"manager namespace not a name", []string{"--manager-namespace=Crawl_System"}, 8083, `--manager-namespace "Crawl_System" is not a namespace name`},
		{"no manager labels", []string{"--manager-namespace=crawl-system", "--manager-pod-labels="}, 8083, "--manager-pod-labels must name at least one label"},
		{"no DNS namespace", []string{"--manager-namespace=crawl-system", "--crawler-network-policy-dns-namespace="}, 8083, `--crawler-network-policy-dns-namespace "" is not a namespace name`},
		{"no results port", []string{"--manager-namespace=crawl-system"}, 0, "--results-bind-address must name one"},
	} {
		c, err := parseNetworkPolicyFlags(tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c.ResultsPort = tc.port
		err = c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}
