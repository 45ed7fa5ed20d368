package uninstall

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/site"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
	"github.com/lohisoft/crawl-operator/internal/testutil/helmrender"
)

// The uninstall as the chart runs it, on a control plane with a garbage
// collector (kube-controller-manager; no node): `manager cleanup` under
// exactly the RBAC the chart renders for its hook, which cannot read a
// Secret, deletes a crawler Pod, and the collector removes the Pod's token
// Secret, made as the manager makes it.
func TestCleanupLeavesTokenSecretsToTheGarbageCollector(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join("..", "..")
	bin := testenv.MustAssets(t, root)
	c, err := cluster.Start(ctx, cluster.Options{BinDir: bin, Dir: t.TempDir(), Nodes: []cluster.EgressNode{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	admin, err := client.New(c.Config, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}

	// The hook's ServiceAccount, Role and binding, as the chart renders
	// them cluster-wide.
	const release, releaseNS = "crawl", "crawl-system"
	kv, err := helmrender.KubeVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmrender.RenderWithHooksFor(helmrender.ChartPath(root), release, releaseNS, kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	sa := ""
	var hookRBAC []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/hook"] == "" {
			continue
		}
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
			hookRBAC = append(hookRBAC, o)
		case "ClusterRole", "ClusterRoleBinding":
			hookRBAC = append(hookRBAC, o)
		}
	}
	if sa == "" || len(hookRBAC) != 3 {
		t.Fatalf("the hook's ServiceAccount %q and %d RBAC objects rendered, want it with its ClusterRole and binding", sa, len(hookRBAC))
	}
	if err := testenv.EnsureNamespace(ctx, admin, releaseNS); err != nil {
		t.Fatal(err)
	}
	if err := testenv.Apply(ctx, admin, hookRBAC...); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: testenv.ServiceAccountUser(releaseNS, sa),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNS, "system:authenticated"}}
	hook, err := client.New(cfg, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	// A run's Pod and its token Secret, as the reconciler makes them.
	const ns = "blog"
	if err := testenv.EnsureNamespace(ctx, admin, ns); err != nil {
		t.Fatal(err)
	}
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site"}, Spec: crawlv1.CrawlTargetSpec{URL: "https://example.com/"}}
	if err := admin.Create(ctx, ct); err != nil {
		t.Fatal(err)
	}
	st, err := site.Parse(ct.Spec.URL)
	if err != nil {
		t.Fatal(err)
	}
	run := crawlpod.Run{Target: ct, Site: st, Number: 1, Node: "egress-1", NodeIP: "79.139.58.98", TokenSHA256: crawlpod.TokenSHA256("t")}
	crawler := crawlpod.Pod(run, crawlpod.DefaultConfig())
	if err := admin.Create(ctx, crawler); err != nil {
		t.Fatal(err)
	}
	token := crawlpod.TokenSecret(run, crawler, "t")
	if err := admin.Create(ctx, token); err != nil {
		t.Fatal(err)
	}

	// The hook can read no Secret, its own crawlers' included.
	if err := hook.Get(ctx, client.ObjectKeyFromObject(token), &corev1.Secret{}); !apierrors.IsForbidden(err) {
		t.Errorf("the hook's get of a Secret: %v, want Forbidden", err)
	}
	if err := hook.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("the hook's list of Secrets: %v, want Forbidden", err)
	}

	r, err := Cleanup(ctx, hook, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pods != 1 {
		t.Errorf("removed %+v, want the crawler Pod", r)
	}
	testutil.Eventually(t, time.Minute, "the token Secret removed by the garbage collector", func() error {
		err := admin.Get(ctx, client.ObjectKeyFromObject(token), &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return errStillThere
		}
		return err
	})
	// The target and what the users made stay.
	if err := admin.Get(ctx, client.ObjectKeyFromObject(ct), &crawlv1.CrawlTarget{}); err != nil {
		t.Errorf("the CrawlTarget: %v", err)
	}
}

var errStillThere = errors.New("still there")
