package netpol

import (
	"slices"
	"testing"

	"github.com/mattfenwick/cyclonus/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// What cyclonus v0.5.6's matcher does not judge as Kubernetes does, read
// from its code (pkg/matcher, pkg/kube). Each test fails once that
// changes, so the notes here and in the tests above get revisited.
//
// Judged as Kubernetes does: ipBlock with except (net.IPNet.Contains, so
// IPv6 never matches 0.0.0.0/0), ports with protocol, endPort ranges,
// namespace and Pod selectors with matchLabels, policies adding up,
// ingress and egress both needed between two Pods.
//
// Not modelled at all, so given to it by the flows: Services (a flow goes
// to an endpoint, as after kube-proxy's translation); named ports (the
// flow carries the name); the label kubernetes.io/metadata.name (set on
// every namespace here, as the API server does). Not modelled and not
// expressible: traffic from a Pod's own node, which CNIs let in whatever
// the policy says (Kubernetes documents that a Pod cannot block its node),
// so "from the node" below is the policy's word, not what a CNI enforces;
// and a policy without policyTypes, which it refuses instead of defaulting
// (every policy here names them).

// matchExpressions NotIn matches a Pod without the key in Kubernetes and
// not in cyclonus. The policies under test use matchLabels only, and the
// user's "every Pod but crawlers" policy above is judged on Pods that have
// the key, so no verdict above depends on it.
func TestCyclonusNotInDiffersOnAMissingKey(t *testing.T) {
	sel := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"lohisoftbot-crawler"},
	}}}
	s, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		t.Fatal(err)
	}
	unlabelled := map[string]string{"app": "web"}
	if k8s, cyclonus := s.Matches(labels.Set(unlabelled)), kube.IsLabelsMatchLabelSelector(unlabelled, sel); k8s == cyclonus || !k8s {
		t.Errorf("NotIn on a Pod without the key: Kubernetes %t, cyclonus %t; the note above says they differ", k8s, cyclonus)
	}
}

// cyclonus matches ipBlocks against Pod addresses too, as Calico does
// (Cilium does not). So a Pod on a public address, in a cluster whose Pod
// range is public, is reachable through the public rule unless that range
// is in networkPolicy.extraExceptCIDRs: the policies keep crawlers from
// other Pods because Pod ranges are private, not by selecting Pods.
func TestPodsOnPublicAddressesAreOnlyAsSafeAsTheirRange(t *testing.T) {
	f := loadFixtures(t)["defaults"]
	crawler := podPeer("default", f.CrawlerPodLabels, crawlerIP)
	for _, tc := range []struct {
		ip      string
		allowed bool
	}{
		{"34.118.0.5", true}, // a public Pod range, not excepted
		{"10.244.2.30", false},
	} {
		res := evaluate(slices.Concat(f.ChartPolicies, f.ManagerPolicies), flow{
			from: crawler, to: podPeer("other", map[string]string{"app": "web"}, tc.ip), port: 80, proto: corev1.ProtocolTCP,
		})
		if res != tc.allowed {
			t.Errorf("crawler to a Pod at %s: allowed=%t, want %t", tc.ip, res, tc.allowed)
		}
	}
}
