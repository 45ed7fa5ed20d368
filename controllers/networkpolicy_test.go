package controllers_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// crawlerPolicies lists the NetworkPolicies of a namespace.
func crawlerPolicies(t *testing.T, ns string) []networkingv1.NetworkPolicy {
	t.Helper()
	var list networkingv1.NetworkPolicyList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// rv is an object's resourceVersion as a number. Clients must treat it as
// opaque; in this API server it is etcd's revision, which grows with every
// write, so it orders the writes of two objects.
func rv(t *testing.T, o client.Object) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q of %s: %v", o.GetResourceVersion(), o.GetName(), err)
	}
	return n
}

// checkPolicyBefore checks that the namespace's crawler NetworkPolicy is
// the one the operator's configuration describes, that it selects pod, and
// that it was last written before pod was created.
func checkPolicyBefore(t *testing.T, op *harness, pod *corev1.Pod) {
	t.Helper()
	np := &networkingv1.NetworkPolicy{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: pod.Namespace, Name: crawlpod.NetworkPolicyName}, np); err != nil {
		t.Fatalf("crawler Pod %s exists, its NetworkPolicy does not: %v", pod.Name, err)
	}
	if rv(t, np) >= rv(t, pod) {
		t.Errorf("NetworkPolicy written at revision %d, after crawler Pod %s (created at %d)", rv(t, np), pod.Name, rv(t, pod))
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("NetworkPolicy selects %s, which does not match crawler Pod labels %v", sel, pod.Labels)
	}
	if want := crawlpod.NetworkPolicy(pod.Namespace, op.networkPolicy); !equality.Semantic.DeepEqual(np.Spec, want.Spec) {
		got, _ := yaml.Marshal(np.Spec)
		exp, _ := yaml.Marshal(want.Spec)
		t.Errorf("NetworkPolicy spec:\n%s\nwant:\n%s", got, exp)
	}
	if np.Labels[crawlpod.LabelManagedBy] != crawlpod.ManagedByValue || len(np.OwnerReferences) != 0 {
		t.Errorf("NetworkPolicy labels %v, owners %v: want managed-by %s and no owner", np.Labels, np.OwnerReferences, crawlpod.ManagedByValue)
	}
}

// A CrawlTarget in a namespace without a NetworkPolicy gets one before its
// first crawler Pod exists, selecting that Pod: egress to public IPv4, DNS
// and the results endpoint, no ingress. A policy someone loosened is put
// back before the next crawl.
func TestCrawlerNetworkPolicyBeforeFirstPod(t *testing.T) {
	createEgressNode(t, "egress-np", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	if n := len(crawlerPolicies(t, ns)); n != 0 {
		t.Fatalf("fresh namespace has %d NetworkPolicies", n)
	}
	ct := createTarget(t, ns, "confined", "https://confined.example.com/")
	pod := waitPod(t, ct, 1)
	checkPolicyBefore(t, op, pod)

	// What the rules mean, read from the object the API server stored.
	np := crawlerPolicies(t, ns)[0]
	spec := np.Spec
	if fmt.Sprint(spec.PolicyTypes) != "[Ingress Egress]" || len(spec.Ingress) != 0 {
		t.Errorf("policy types %v with %d ingress rules: want no ingress at all", spec.PolicyTypes, len(spec.Ingress))
	}
	if len(spec.Egress) != 3 {
		t.Fatalf("%d egress rules, want public IPv4, DNS and results", len(spec.Egress))
	}
	public := spec.Egress[0].To[0].IPBlock
	if public == nil || public.CIDR != "0.0.0.0/0" || !strings.Contains(strings.Join(public.Except, " "), "10.0.0.0/8 100.64.0.0/10 127.0.0.0/8 169.254.0.0/16 172.16.0.0/12") {
		t.Errorf("public rule %+v: want 0.0.0.0/0 without private, loopback and link-local ranges", public)
	}
	results := spec.Egress[2]
	if got := results.To[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName]; got != managerNamespace ||
		results.Ports[0].Port.IntValue() != resultsPort || *results.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("results rule %+v: want TCP %d to the manager's Pods in %s", results, resultsPort, managerNamespace)
	}

	// Loosened by hand (allow everything), restored before crawl 2.
	np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	if err := k8s.Update(context.Background(), &np); err != nil {
		t.Fatal(err)
	}
	finishCrawl(t, op, pod, "https://confined.example.com", 1)
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "restore-the-policy")
	checkPolicyBefore(t, op, waitPod(t, ct, 2))
}

// When the policy cannot be written, no crawler Pod starts and the error
// shows in the target's status like any failed step; once it can, the
// crawl starts behind its policy.
func TestNoCrawlerPodWithoutItsNetworkPolicy(t *testing.T) {
	createEgressNode(t, "egress-np-refused", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	unblock := refuseNetworkPolicies(t, ns)

	ct := createTarget(t, ns, "refused", "https://refused.example.com/")
	// A failed step observes no generation, so waitReady does not apply.
	eventually(t, "Ready Unknown with the refusal", func() error {
		c := readyCondition(getTarget(t, ct))
		if c.Status != metav1.ConditionUnknown || c.Reason != crawlv1.ReasonReconcileError ||
			!strings.Contains(c.Message, "create crawler NetworkPolicy") || !strings.Contains(c.Message, "refused in this test") {
			return fmt.Errorf("Ready = %+v", c)
		}
		return nil
	})
	podCountStays(t, ct, 0, time.Second, "no crawler Pod without its NetworkPolicy")
	var secrets corev1.SecretList
	if err := k8s.List(context.Background(), &secrets, client.InNamespace(ns)); err != nil || len(secrets.Items) != 0 {
		t.Errorf("%d Secrets (%v): no run token should be made before the policy", len(secrets.Items), err)
	}

	unblock()
	poke(t, ct)
	checkPolicyBefore(t, op, waitPod(t, ct, 1))
}

// refuseNetworkPolicies makes the API server refuse NetworkPolicy creation
// in ns (a ValidatingAdmissionPolicy, no webhook) until the returned
// function is called.
func refuseNetworkPolicies(t *testing.T, ns string) (unblock func()) {
	t.Helper()
	ctx := context.Background()
	vap := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-netpol-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"},
						Resources: []string{"networkpolicies"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "NetworkPolicies are refused in this test"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: vap.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        vap.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}},
		},
	}
	for _, o := range []client.Object{vap, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	unblock = func() {
		for _, o := range []client.Object{binding, vap} {
			if err := k8s.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "NetworkPolicies accepted again", func() error { return probePolicy(ns) })
	}
	t.Cleanup(unblock)
	// The API server applies a new admission policy within a moment.
	eventually(t, "NetworkPolicies refused", func() error {
		if err := probePolicy(ns); err == nil || !strings.Contains(err.Error(), "refused in this test") {
			return fmt.Errorf("dry-run create: %v", err)
		}
		return nil
	})
	return unblock
}

// probePolicy tries to create a NetworkPolicy in ns without storing it.
func probePolicy(ns string) error {
	probe := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}}
	return k8s.Create(context.Background(), probe, client.DryRunAll)
}

// --crawler-network-policy=false: crawls start and no policy is made.
func TestCrawlerNetworkPolicyOff(t *testing.T) {
	createEgressNode(t, "egress-np-off", "79.139.58.98")
	startOperator(t, operatorOptions{noNetworkPolicy: true})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "unconfined", "https://unconfined.example.com/")
	waitPod(t, ct, 1)
	if nps := crawlerPolicies(t, ns); len(nps) != 0 {
		t.Errorf("%d NetworkPolicies (%s) with --crawler-network-policy=false", len(nps), nps[0].Name)
	}
}
