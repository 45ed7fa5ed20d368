package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// The downgrade guard (templates/downgrade-guard.yaml) in a real API
// server: what a chart before 0.2.0 would write for this release is
// refused with a message saying why and what to do; everything else, this
// release's own objects, another release's, deletions, passes.
func TestDowngradeGuard(t *testing.T) {
	c, _ := apiServer(t)
	ctx := context.Background()
	objs := mustRender(t, nil)
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		o := find(objs, kind, "crawl-crawl-operator-downgrade-guard")
		if o == nil {
			t.Fatalf("no %s crawl-crawl-operator-downgrade-guard rendered", kind)
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	labels := func(instance, chart string) map[string]string {
		return map[string]string{
			"app.kubernetes.io/part-of": "crawl-operator", "app.kubernetes.io/managed-by": "Helm",
			"app.kubernetes.io/instance": instance, "app.kubernetes.io/name": "crawl-operator", "helm.sh/chart": chart,
		}
	}
	configMap := func(name, instance, chart string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: releaseNamespace, Labels: labels(instance, chart)}}
	}
	// The API server loads a new policy in the background: wait until it
	// refuses the plainest case.
	testutil.Eventually(t, 30*time.Second, "the policy in force", func() error {
		err := c.Create(ctx, configMap("probe", "crawl", "crawl-operator-0.1.0"))
		if err == nil {
			_ = c.Delete(ctx, configMap("probe", "crawl", ""))
			return errAllowed
		}
		return nil
	})
	const why = "cannot read this release's CrawlTargets, Exclusions and SiteIndexes, which are stored as v1beta1 since chart 0.2.0"
	refused := func(t *testing.T, err error, chart string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s was allowed", chart)
		}
		for _, w := range []string{"refused: " + chart + " " + why, "helm upgrade crawl with the chart version you ran before", "docs/upgrading.md"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the refusal does not say %q:\n%v", w, err)
			}
		}
	}
	for _, chart := range []string{"crawl-operator-0.1.0", "crawl-operator-0.1.7", "crawl-operator-0.0.1", "crawl-operator-0.1.0-rc.1"} {
		t.Run("create of "+chart+" refused", func(t *testing.T) {
			refused(t, c.Create(ctx, configMap("old", "crawl", chart)), chart)
		})
	}
	for _, chart := range []string{"crawl-operator-0.2.0", "crawl-operator-0.10.0", "crawl-operator-1.1.0"} {
		t.Run("create of "+chart+" allowed", func(t *testing.T) {
			cm := configMap("new-"+strings.ReplaceAll(chart, ".", "-"), "crawl", chart)
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("another release's old chart is not this release's business", func(t *testing.T) {
		if err := c.Create(ctx, configMap("other", "other", "crawl-operator-0.1.0")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("an update back to 0.1.0 is refused, in any API group", func(t *testing.T) {
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "crawl-crawl-operator", Namespace: releaseNamespace, Labels: labels("crawl", "crawl-operator-0.2.0")},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "m"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "m"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "ghcr.io/lohisoft/crawl-operator:v0.2.0"}}},
				},
			},
		}
		if err := c.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
		before := dep.DeepCopy()
		dep.Labels["helm.sh/chart"] = "crawl-operator-0.1.0"
		dep.Spec.Template.Spec.Containers[0].Image = "ghcr.io/lohisoft/crawl-operator:v0.1.0"
		refused(t, c.Patch(ctx, dep, client.MergeFrom(before)), "crawl-operator-0.1.0")
		got := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), got); err != nil {
			t.Fatal(err)
		}
		if img := got.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/lohisoft/crawl-operator:v0.2.0" {
			t.Errorf("the refused update changed the image to %s", img)
		}
	})
	t.Run("deleting is allowed (uninstall)", func(t *testing.T) {
		if err := c.Delete(ctx, configMap("other", "other", "")); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, configMap("new-crawl-operator-0-2-0", "crawl", "")); err != nil {
			t.Fatal(err)
		}
	})
}

var errAllowed = errString("the old chart's object was allowed")

type errString string

func (e errString) Error() string { return string(e) }
