package crawlpod

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lohisoft/crawl-operator/crawler/specialpurpose"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// NetworkPolicyName is the name of the NetworkPolicy the operator keeps in
// every namespace where it runs crawler Pods. It differs from the chart's
// (RELEASE-crawl-operator-crawlers), so the operator never rewrites an
// object Helm manages.
const NetworkPolicyName = "lohisoftbot-crawler"

// NetworkPolicyConfig is what the crawler NetworkPolicy needs to know. The
// flags set all but ResultsPort and EgressIPs, which belong to other
// options (--results-bind-address, --expected-egress-ips): the operator
// fills them in.
type NetworkPolicyConfig struct {
	// Enabled makes the operator ensure the policy in a namespace before it
	// starts a crawler Pod there.
	Enabled bool
	// ManagerNamespace and ManagerPodLabels select the manager's Pods,
	// which crawler Pods reach on ResultsPort to report.
	ManagerNamespace string
	ManagerPodLabels map[string]string
	// ResultsPort is the port the results endpoint listens on in the
	// manager's Pods (not the Service's port: policies see Pod ports).
	ResultsPort int32
	// EgressIPs are the egress nodes' published addresses: crawler Pods
	// must not reach the nodes' own services (kubelet, NodePorts) there.
	EgressIPs egress.Addresses
	// ExceptCIDRs are more IPv4 ranges crawler Pods must not reach, such as
	// the API server's public endpoint.
	ExceptCIDRs []netip.Prefix
	// DNSNamespace and DNSPodLabels select cluster DNS.
	DNSNamespace string
	DNSPodLabels map[string]string
}

// DefaultNetworkPolicyConfig is the NetworkPolicyConfig of the manager's
// flag defaults. The manager's namespace has no default: a wrong one would
// cut crawler Pods off the results endpoint.
func DefaultNetworkPolicyConfig() NetworkPolicyConfig {
	return NetworkPolicyConfig{
		Enabled:          true,
		ManagerPodLabels: map[string]string{"app.kubernetes.io/name": "crawl-operator"},
		DNSNamespace:     "kube-system",
		DNSPodLabels:     map[string]string{"k8s-app": "kube-dns"},
	}
}

// BindFlags binds the crawler NetworkPolicy flags to c, with c's values as
// the defaults.
func (c *NetworkPolicyConfig) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.Enabled, "crawler-network-policy", c.Enabled,
		"Before starting a crawler Pod in a namespace, ensure the NetworkPolicy "+NetworkPolicyName+" there: crawler Pods may reach public IPv4 addresses, cluster DNS and the results endpoint, and nothing may connect to them.")
	fs.StringVar(&c.ManagerNamespace, "manager-namespace", c.ManagerNamespace,
		"Namespace of the manager's Pods, whose results endpoint crawler Pods may reach; required with --crawler-network-policy (the chart passes it from the downward API).")
	fs.Var(labelsFlag{&c.ManagerPodLabels}, "manager-pod-labels",
		"Labels (key=value,...) that select the manager's Pods in --manager-namespace, for the crawler NetworkPolicy.")
	fs.Var(prefixesFlag{&c.ExceptCIDRs}, "crawler-network-policy-except-cidrs",
		"Comma-separated IPv4 ranges crawler Pods must not reach, besides the special-purpose ranges the crawler refuses too (private, reserved, documentation, ...) and --expected-egress-ips (e.g. the API server's public address).")
	fs.StringVar(&c.DNSNamespace, "crawler-network-policy-dns-namespace", c.DNSNamespace,
		"Namespace of cluster DNS, which crawler Pods may reach on port 53.")
	fs.Var(labelsFlag{&c.DNSPodLabels}, "crawler-network-policy-dns-pod-labels",
		"Labels (key=value,...) that select the cluster DNS Pods in --crawler-network-policy-dns-namespace.")
}

// Validate reports the first setting the policy cannot be built with. Off,
// nothing is needed.
func (c NetworkPolicyConfig) Validate() error {
	if !c.Enabled {
		return nil
	}
	switch {
	case c.ManagerNamespace == "":
		return errors.New("--crawler-network-policy needs --manager-namespace, the namespace of the manager's Pods that crawler Pods report to " +
			"(set --crawler-network-policy=false when the manager runs outside the cluster: no NetworkPolicy can let Pods reach it there)")
	case len(validation.IsDNS1123Label(c.ManagerNamespace)) > 0:
		return fmt.Errorf("--manager-namespace %q is not a namespace name", c.ManagerNamespace)
	case len(c.ManagerPodLabels) == 0:
		return errors.New("--manager-pod-labels must name at least one label of the manager's Pods: none would open the results port of every Pod in --manager-namespace")
	case len(validation.IsDNS1123Label(c.DNSNamespace)) > 0:
		return fmt.Errorf("--crawler-network-policy-dns-namespace %q is not a namespace name", c.DNSNamespace)
	case c.ResultsPort < 1 || c.ResultsPort > 65535:
		return fmt.Errorf("the crawler NetworkPolicy has no port for the results endpoint (%d): --results-bind-address must name one", c.ResultsPort)
	}
	return nil
}

// NetworkPolicy builds the crawler NetworkPolicy of a namespace. Crawler
// Pods process hostile input from the internet: they may reach public IPv4
// addresses (never the cluster, the nodes, metadata or private ranges, and
// no IPv6), cluster DNS and the manager's results endpoint, and nothing may
// connect to them. Policies only add up, so this one confines crawler Pods
// only where no other policy selecting them allows more.
func NetworkPolicy(namespace string, c NetworkPolicyConfig) *networkingv1.NetworkPolicy {
	// The ranges the crawler's dialer refuses too, from the same table:
	// the policy holds for the whole Pod, the dialer also for a crawler
	// run outside a cluster.
	var except []string
	for _, p := range specialpurpose.Forbidden() {
		except = append(except, p.String())
	}
	for _, ip := range c.EgressIPs.List() {
		except = append(except, ip+"/32")
	}
	for _, p := range c.ExceptCIDRs {
		except = append(except, p.String())
	}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	dns, results := intstr.FromInt32(53), intstr.FromInt32(c.ResultsPort)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:      NetworkPolicyName,
			Namespace: namespace,
			Labels:    map[string]string{LabelName: NameValue, LabelManagedBy: ManagedByValue},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelName: NameValue, LabelManagedBy: ManagedByValue}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: except}}}},
				{
					To:    []networkingv1.NetworkPolicyPeer{podsIn(c.DNSNamespace, c.DNSPodLabels)},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
				},
				{
					To:    []networkingv1.NetworkPolicyPeer{podsIn(c.ManagerNamespace, c.ManagerPodLabels)},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &results}},
				},
			},
		},
	}
}

func podsIn(namespace string, podLabels map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(podLabels)},
	}
}

// labelsFlag is a key=value,... flag; every key and value must be a valid
// label key and value.
type labelsFlag struct{ m *map[string]string }

func (f labelsFlag) String() string {
	if f.m == nil {
		return ""
	}
	return k8slabels.Set(*f.m).String()
}

func (f labelsFlag) Set(v string) error {
	set, err := k8slabels.ConvertSelectorToLabelsMap(v)
	if err != nil {
		return fmt.Errorf("want comma-separated key=value labels: %w", err)
	}
	*f.m = set
	return nil
}

// prefixesFlag is a comma-separated list of IPv4 CIDRs in their canonical
// form: 10.1.2.0/24, not 10.1.2.3/24, which the API server warns about and
// which often means a typo.
type prefixesFlag struct{ p *[]netip.Prefix }

func (f prefixesFlag) String() string {
	if f.p == nil {
		return ""
	}
	s := make([]string, len(*f.p))
	for i, p := range *f.p {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (f prefixesFlag) Set(v string) error {
	var out []netip.Prefix
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil || !p.Addr().Is4():
			return fmt.Errorf("%q is not an IPv4 CIDR", s)
		case p != p.Masked():
			return fmt.Errorf("%q has host bits set: did you mean %s?", s, p.Masked())
		}
		out = append(out, p)
	}
	*f.p = out
	return nil
}
