package rbac

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
	"github.com/lohisoft/crawl-operator/internal/testutil/helmrender"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// installChartRBAC renders the chart as release in namespace ns with
// vals and applies what it renders for the manager's identity (its
// ServiceAccount, ClusterRole, Roles and bindings), as `helm install`
// would. It returns the rendered objects and the config and user name of
// the chart's ServiceAccount.
func installChartRBAC(t *testing.T, release, ns string, vals map[string]any) ([]*unstructured.Unstructured, *rest.Config, string) {
	t.Helper()
	objs, err := helmrender.Render(repoRoot, release, ns, vals)
	if err != nil {
		t.Fatal(err)
	}
	var rbac []*unstructured.Unstructured
	sa := ""
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
			rbac = append(rbac, o)
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			rbac = append(rbac, o)
		}
	}
	if err := testenv.Apply(ctx, k8s, rbac...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range rbac {
			if o.GetNamespace() == "" {
				_ = k8s.Delete(ctx, o)
			}
		}
	})
	cfg, err := testenv.Current().ServiceAccountConfig(ns, sa)
	if err != nil {
		t.Fatal(err)
	}
	return objs, cfg, testenv.ServiceAccountUser(ns, sa)
}

// The chart's RBAC in its default, cluster-wide form runs the operator:
// leader election with its Event, a crawl to its end, nothing refused.
func TestChartRBACRunsTheOperator(t *testing.T) {
	release := newNamespace(t, "crawl-system-")
	_, cfg, user := installChartRBAC(t, "crawl", release, nil)
	testutil.CreateEgressNode(t, k8s, "egress-rbac-chart", "79.139.58.98")
	op := startOperator(t, cfg, operatorOptions{leaseNS: release})
	waitLeaderEvent(t, release)

	ct := createTarget(t, newNamespace(t, "rbac-chart-"), "site", "https://rbac-chart.example/")
	crawl(t, op, ct, 1, "https://rbac-chart.example", 2)
	op.stop()
	noneRefused(t, user)
}

// In namespaced mode (watchNamespaces) the chart grants Pods, Secrets,
// CrawlTargets and SiteIndexes by a Role per watched namespace only, and
// the manager (--watch-namespaces) works within them: CrawlTargets there
// are crawled; one elsewhere gets no Pod, no SiteIndex and no status, an
// Exclusion does not count it, and the results endpoint refuses a run
// there without asking the API server. The audit log shows that nothing
// was refused and that the manager read or wrote none of those kinds
// outside the watched namespaces, cluster-wide lists and watches included.
func TestNamespacedModeUnderTheChartsRBAC(t *testing.T) {
	release := newNamespace(t, "crawl-scoped-")
	watched := watchns.Namespaces{newNamespace(t, "rbac-watched-"), newNamespace(t, "rbac-watched-")}
	outside := newNamespace(t, "rbac-unwatched-")
	_, cfg, user := installChartRBAC(t, "scoped", release, map[string]any{"watchNamespaces": []any{watched[0], watched[1]}})
	testutil.CreateEgressNode(t, k8s, "egress-rbac-scoped", "79.139.58.98")
	op := startOperator(t, cfg, operatorOptions{leaseNS: release, namespaces: watched})
	waitLeaderEvent(t, release)

	in := createTarget(t, watched[0], "site", "https://in.rbac-scoped.example/")
	in2 := createTarget(t, watched[1], "site", "https://in2.rbac-scoped.example/")
	out := createTarget(t, outside, "site", "https://out.rbac-scoped.example/")
	crawl(t, op, in, 1, "https://in.rbac-scoped.example", 2)
	crawl(t, op, in2, 1, "https://in2.rbac-scoped.example", 1)

	// The unwatched target is left alone.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(outside)); err != nil {
			t.Fatal(err)
		}
		got := getTarget(t, out)
		if len(pods.Items) > 0 || got.Status.Phase != "" || len(got.Status.Conditions) > 0 || got.Status.Runs != 0 {
			t.Fatalf("the unwatched target was touched: %d Pods, status %+v", len(pods.Items), got.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(out), &crawlv1.SiteIndex{}); client.IgnoreNotFound(err) != nil || err == nil {
		t.Errorf("the unwatched target got a SiteIndex (%v)", err)
	}

	// A crawler Pod's report from outside (a look-alike Pod with a token
	// the caller knows) is refused as an unknown run.
	token, sum, err := crawlpod.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	fake := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: outside, Name: "lookalike-crawl-1",
			Labels:      map[string]string{crawlpod.LabelName: crawlpod.NameValue, crawlpod.LabelManagedBy: crawlpod.ManagedByValue},
			Annotations: map[string]string{crawlpod.AnnotationTokenSHA256: sum}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "crawler", Image: "crawler:test"}}},
	}
	if err := k8s.Create(ctx, fake); err != nil {
		t.Fatal(err)
	}
	if code, body := testutil.PostReport(t, op.results, fake, token, runreport.Report{Final: true}); code != http.StatusForbidden {
		t.Errorf("a report for a run outside the watched namespaces: HTTP %d %s, want 403", code, body)
	}

	// The dashboard shows the watched targets' state from the manager's
	// cache, not the unwatched one, and reads them within the Roles (the
	// audit log below would show a cluster-wide list).
	eventually(t, "dashboard with the watched targets", func() error {
		rec := httptest.NewRecorder()
		op.pages.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/sites", nil))
		page := rec.Body.String()
		if rec.Code != http.StatusOK || strings.Contains(page, `id="state-unknown"`) {
			return fmt.Errorf("/sites: %d, state unknown: %v", rec.Code, strings.Contains(page, `id="state-unknown"`))
		}
		for _, want := range []string{"<code>" + watched[0] + "/site</code>: Succeeded", "<code>" + watched[1] + "/site</code>: Succeeded"} {
			if !strings.Contains(page, want) {
				return fmt.Errorf("/sites lacks %q", want)
			}
		}
		if strings.Contains(page, outside) || strings.Contains(page, "out.rbac-scoped.example") {
			return fmt.Errorf("/sites shows the unwatched target")
		}
		return nil
	})

	// An Exclusion covering both sites matches the watched target only.
	enforceExclusion(t, "rbac-scoped-", "in.rbac-scoped.example", 2)
	waitReady(t, in, crawlv1.ReasonExcluded)
	op.stop()

	noneRefused(t, user)
	confined := map[string]bool{"pods": true, "secrets": true, "crawltargets": true, "siteindexes": true}
	for _, r := range requestsOf(t, user) {
		switch {
		case confined[r.Resource] && !watched.Has(r.Namespace):
			t.Errorf("namespaced mode: %s", r)
		case confined[r.Resource] && r.Namespace == "":
			t.Errorf("namespaced mode, cluster-wide request: %s", r)
		case r.Namespace != "" && !watched.Has(r.Namespace) && r.Namespace != release && r.Resource != "events":
			t.Errorf("namespaced mode, a request outside: %s", r)
		case strings.HasPrefix(r.Namespace, "rbac-unwatched-"):
			t.Errorf("namespaced mode, a request in the unwatched namespace: %s", r)
		}
	}
}
