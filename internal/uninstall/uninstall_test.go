package uninstall

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testenv"
)

var crawlLabels = map[string]string{crawlpod.LabelName: crawlpod.NameValue, crawlpod.LabelManagedBy: crawlpod.ManagedByValue}

// What a cluster holds after the manager ran: its crawl objects beside
// look-alikes that are not its own (one of the two labels only, or the
// users' objects), in two namespaces. Cleanup takes exactly its own Pods
// and NetworkPolicies and makes no request at all on Secrets: a crawler's
// token Secret is owned by its Pod, and the garbage collector (which
// envtest does not run, so here the Secret stays) removes it with the Pod.
func TestCleanupTakesOnlyTheManagersCrawlObjects(t *testing.T) {
	ctx := context.Background()
	c, _ := testenv.StartServer(t, filepath.Join("..", ".."))
	only := func(k, v string) map[string]string { return map[string]string{k: v} }
	policy := crawlpod.DefaultNetworkPolicyConfig()
	policy.ManagerNamespace, policy.ResultsPort = "crawl-system", 8083
	for _, ns := range []string{"shop", "blog"} {
		if err := testenv.EnsureNamespace(ctx, c, ns); err != nil {
			t.Fatal(err)
		}
		crawler := pod(ns, "crawl-1", crawlLabels)
		for _, o := range []client.Object{
			crawler, pod(ns, "users-app", nil),
			pod(ns, "lookalike", only(crawlpod.LabelName, crawlpod.NameValue)),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "users-secret", Labels: only(crawlpod.LabelManagedBy, crawlpod.ManagedByValue)}},
			crawlpod.NetworkPolicy(ns, policy),
			&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "users-policy"}},
			&crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site", Labels: crawlLabels},
				Spec: crawlv1.CrawlTargetSpec{URL: "https://example.com/"}},
		} {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("create %T %s: %v", o, o.GetName(), err)
			}
		}
		// As the manager makes it: after its Pod, owned by it.
		token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crawl-1-token", Labels: crawlLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: crawler.Name, UID: crawler.UID}}}}
		if err := c.Create(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	cleaner := noSecrets(t, c)

	r, err := Cleanup(ctx, cleaner, []string{"shop"})
	if err != nil {
		t.Fatal(err)
	}
	if r != (Removed{Pods: 1, NetworkPolicies: 1}) {
		t.Errorf("removed in shop: %+v, want one of each", r)
	}
	want := map[string][]string{
		"shop": {"Pod/lookalike", "Pod/users-app", "Secret/crawl-1-token", "Secret/users-secret", "NetworkPolicy/users-policy", "CrawlTarget/site"},
		"blog": {"Pod/crawl-1", "Pod/lookalike", "Pod/users-app", "Secret/crawl-1-token", "Secret/users-secret",
			"NetworkPolicy/lohisoftbot-crawler", "NetworkPolicy/users-policy", "CrawlTarget/site"},
	}
	for ns, names := range want {
		if got := present(t, c, ns); !equal(got, names) {
			t.Errorf("%s after cleanup of shop: %v, want %v", ns, got, names)
		}
	}

	// Every namespace (no --namespaces), and again: nothing left to do.
	if r, err = Cleanup(ctx, cleaner, nil); err != nil || r != (Removed{Pods: 1, NetworkPolicies: 1}) {
		t.Errorf("cleanup of every namespace: %+v, %v", r, err)
	}
	if r, err = Cleanup(ctx, cleaner, nil); err != nil || r != (Removed{}) {
		t.Errorf("second cleanup: %+v, %v", r, err)
	}
	if got := present(t, c, "blog"); !equal(got, want["shop"]) {
		t.Errorf("blog after cleanup: %v", got)
	}
}

// noSecrets wraps c so that any request Cleanup makes on a Secret fails
// the test: the chart's hook has no right on Secrets.
func noSecrets(t *testing.T, c client.Client) client.Client { return secretless{c, t} }

type secretless struct {
	client.Client
	t *testing.T
}

func (c secretless) refuse(o runtime.Object) error {
	switch o.(type) {
	case *corev1.Secret, *corev1.SecretList:
		c.t.Errorf("Cleanup made a request on %T", o)
		return fmt.Errorf("no right on Secrets")
	}
	return nil
}

func (c secretless) Get(ctx context.Context, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	if err := c.refuse(o); err != nil {
		return err
	}
	return c.Client.Get(ctx, key, o, opts...)
}

func (c secretless) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	if err := c.refuse(l); err != nil {
		return err
	}
	return c.Client.List(ctx, l, opts...)
}

func (c secretless) Delete(ctx context.Context, o client.Object, opts ...client.DeleteOption) error {
	if err := c.refuse(o); err != nil {
		return err
	}
	return c.Client.Delete(ctx, o, opts...)
}

func (c secretless) DeleteAllOf(ctx context.Context, o client.Object, opts ...client.DeleteAllOfOption) error {
	if err := c.refuse(o); err != nil {
		return err
	}
	return c.Client.DeleteAllOf(ctx, o, opts...)
}

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/app:1"}}},
	}
}

// present lists what is left in ns, as Kind/name (envtest runs no
// kubelet, so Pods go at once, without a grace period).
func present(t *testing.T, c client.Client, ns string) []string {
	t.Helper()
	var out []string
	for kind, list := range map[string]client.ObjectList{
		"Pod": &corev1.PodList{}, "Secret": &corev1.SecretList{}, "NetworkPolicy": &networkingv1.NetworkPolicyList{},
		"CrawlTarget": &crawlv1.CrawlTargetList{},
	} {
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			out = append(out, kind+"/"+o.(client.Object).GetName())
		}
	}
	return out
}

func equal(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
