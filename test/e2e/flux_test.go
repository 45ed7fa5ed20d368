package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/hack/devcluster/flux"
	"github.com/lohisoft/crawl-operator/hack/devcluster/registry"
	"github.com/lohisoft/crawl-operator/hack/gitserver"
	"github.com/lohisoft/crawl-operator/hack/release/helmchart"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// The GitOps examples (docs/gitops) as Flux reconciles them: Flux's own
// controllers against the dev cluster's real node, the examples in a Git
// repository served here, only the chart repository's URL changed and the
// laptop's values patched in by the bootstrap Kustomization.
const sitesNamespace = "sites"

// fluxBinDir is bin/flux (make flux-bin); without it the test cannot run.
func fluxBinDir(t *testing.T) string {
	t.Helper()
	for _, c := range flux.Controllers {
		testutil.BuiltTool(t, repoRoot, filepath.Join("bin", "flux", c), "flux-bin")
	}
	abs, err := filepath.Abs(filepath.Join(repoRoot, "bin", "flux"))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// siteTarget is a CrawlTarget as a GitOps repository written for the
// first release holds it: v1alpha1, which every release still serves.
func siteTarget(name, siteURL string) string {
	return fmt.Sprintf(`apiVersion: crawl.lohisoft.com/v1alpha1
kind: CrawlTarget
metadata:
  name: %s
spec:
  url: %s/
`, name, siteURL)
}

// fluxObject reads a Flux object; nil while it does not exist.
func (c *realNodeCluster) fluxObject(t *testing.T, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// readyOf is an object's Ready condition ("" when it has none yet).
func readyOf(u *unstructured.Unstructured) (status, reason, message string) {
	if u == nil {
		return "", "", "not found"
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", "no Ready condition"
}

func (c *realNodeCluster) kustomization(t *testing.T, name string) *unstructured.Unstructured {
	return c.fluxObject(t, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", flux.Namespace, name)
}

// sitesTargets are the fleet's CrawlTargets, read as v1alpha1, which
// every release serves (the previous one serves nothing else), into the
// v1beta1 type: the status fields read here are the same in both.
func (c *realNodeCluster) sitesTargets(t *testing.T) map[string]crawlv1.CrawlTarget {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("crawl.lohisoft.com/v1alpha1")
	l.SetKind("CrawlTargetList")
	err := c.client.List(context.Background(), l, client.InNamespace(sitesNamespace))
	if meta.IsNoMatchError(err) {
		return nil // the release has not installed the CRDs yet
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]crawlv1.CrawlTarget{}
	for _, u := range l.Items {
		var ct crawlv1.CrawlTarget
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ct); err != nil {
			t.Fatal(err)
		}
		out[ct.Name] = ct
	}
	return out
}

// syncNow asks Flux to fetch the fleet now.
func (c *realNodeCluster) syncNow(t *testing.T) {
	t.Helper()
	if err := flux.RequestReconcile(context.Background(), c.client); err != nil {
		t.Fatal(err)
	}
}

func TestFluxOnRealNode(t *testing.T) {
	bin := fluxBinDir(t)
	helm := helmBinary(t)
	// The releases Flux installs, signed with the key the cluster trusts.
	reg, pub, prev, cur := publishReleases(t)
	c := startRealNode(t)
	ctx := context.Background()
	// 600 ms a page: the first crawls take a few seconds, long enough to
	// see crawl-sites wait for them.
	bakery := startSite(t, c.gw, 5, 600*time.Millisecond)
	florist := startSite(t, c.gw, 3, 0)

	state := t.TempDir()
	start := time.Now()
	t.Cleanup(func() {
		if err := flux.Down(state); err != nil {
			t.Error(err)
		}
		if left := flux.Running(state); len(left) > 0 {
			t.Errorf("still running after flux.Down: %v", left)
		}
		if t.Failed() {
			for _, name := range flux.Controllers {
				t.Logf("%s log tail:\n%s", name, tailFile(filepath.Join(state, name+".log"), 4000))
			}
		}
	})
	if err := flux.Up(ctx, flux.Options{Root: repoRoot, BinDir: bin, StateDir: state, Kubeconfig: c.kubeconfig}); err != nil {
		t.Fatal(err)
	}
	t.Logf("Flux controllers and CRDs up in %s", time.Since(start).Round(100*time.Millisecond))

	git, err := gitserver.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = git.Close() })
	fleet, err := flux.NewFleet(repoRoot, git, t.TempDir(), map[string]string{
		"bakery.yaml":  siteTarget("bakery", bakery.url),
		"florist.yaml": siteTarget("florist", florist.url),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The cluster starts on the previous release, as a fleet would have.
	if err := fleet.SetChartTag(prev.Version); err != nil {
		t.Fatal(err)
	}
	if err := fleet.Commit("crawl-operator " + prev.Version); err != nil {
		t.Fatal(err)
	}

	// The example's PostgreSQL release, two managers, on the test server:
	// it listens on loopback only, so Pods reach it through a proxy.
	dsn, err := url.Parse(pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	dsn.Host = startTCPProxy(t, c.gw, dsn.Host)
	// The laptop's values with the registry's image: the chart's own
	// tag (and, from 0.2.0, its pinned digest), pulled by the node.
	values, err := flux.LaptopValues(filepath.Join(repoRoot, "hack", "demo", "helm-values.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	values["image"] = map[string]any{"repository": reg.Addr + "/crawl-operator", "pullPolicy": "IfNotPresent"}
	boot, err := flux.Bootstrap(fleet.URL, flux.Laptop{Values: values, DSN: dsn.String(), Chart: flux.Chart{URL: prev.Chart, PublicKey: pub}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range boot {
		if err := c.client.Patch(ctx, u, client.Apply, client.FieldOwner("flux-bootstrap"), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured
			t.Fatal(err)
		}
	}

	if !t.Run("the HelmRelease is Ready, and crawl-sites only once its CrawlTargets are", func(t *testing.T) {
		var sawWaiting bool
		testutil.Eventually(t, 8*time.Minute, "crawl-sites Ready", func() error {
			targets := c.sitesTargets(t)
			status, reason, msg := readyOf(c.kustomization(t, "crawl-sites"))
			if status != "True" {
				if len(targets) > 0 {
					sawWaiting = true
				}
				return fmt.Errorf("crawl-sites Ready=%s %s: %s", status, reason, msg)
			}
			for _, name := range []string{"bakery", "florist"} {
				ct, ok := targets[name]
				if !ok || !meta.IsStatusConditionTrue(ct.Status.Conditions, crawlv1.ConditionReady) {
					t.Fatalf("crawl-sites is Ready while CrawlTarget %s is not: %+v", name, ct.Status.Conditions)
				}
			}
			return nil
		})
		if !sawWaiting {
			t.Error("crawl-sites was never seen waiting for its CrawlTargets")
		}
		for _, ks := range []string{"flux-system", "crawl-operator"} {
			if s, r, m := readyOf(c.kustomization(t, ks)); s != "True" {
				t.Errorf("Kustomization %s Ready=%s %s: %s", ks, s, r, m)
			}
		}
		hr := c.fluxObject(t, "helm.toolkit.fluxcd.io/v2", "HelmRelease", helmNamespace, helmRelease)
		if s, r, m := readyOf(hr); s != "True" {
			t.Errorf("HelmRelease Ready=%s %s: %s", s, r, m)
		}
		pods := c.managerPods(t)
		if len(pods) != 2 {
			t.Errorf("%d manager Pods, want the example's 2", len(pods))
		}
		for _, p := range pods {
			if p.Spec.Containers[0].Image != prev.Image {
				t.Errorf("manager Pod %s runs %s, want %s", p.Name, p.Spec.Containers[0].Image, prev.Image)
			}
		}
		if s, r, m := c.sourceVerified(t); s != "True" {
			t.Errorf("OCIRepository SourceVerified=%s %s: %s", s, r, m)
		}
		for name, pages := range map[string]int32{"bakery": 5, "florist": 3} {
			if ct := c.sitesTargets(t)[name]; ct.Status.PagesIndexed != pages {
				t.Errorf("%s: %d pages indexed, want %d", name, ct.Status.PagesIndexed, pages)
			}
		}
	}) {
		return
	}
	host := strings.TrimPrefix(florist.url, "http://")
	ip := host[:strings.LastIndex(host, ":")]

	if !t.Run("a commit of the new release's tag upgrades it, verified, and nothing is lost", func(t *testing.T) {
		if err := fleet.SetChartTag(cur.Version); err != nil {
			t.Fatal(err)
		}
		if err := fleet.Commit("crawl-operator " + cur.Version); err != nil {
			t.Fatal(err)
		}
		c.syncNow(t)
		want := cur.Image + "@" + cur.Digest
		testutil.Eventually(t, 6*time.Minute, "the HelmRelease upgraded to "+cur.Version, func() error {
			hr := c.fluxObject(t, "helm.toolkit.fluxcd.io/v2", "HelmRelease", helmNamespace, helmRelease)
			if s, r, m := readyOf(hr); s != "True" || r != "UpgradeSucceeded" {
				return fmt.Errorf("HelmRelease Ready=%s %s: %s", s, r, m)
			}
			d := &appsv1.Deployment{}
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: helmNamespace, Name: helmRelease}, d); err != nil {
				return err
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; img != want {
				return fmt.Errorf("manager image %s", img)
			}
			if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != 2 || d.Status.AvailableReplicas != 2 {
				return fmt.Errorf("rollout: %d updated, %d available", d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
			}
			return nil
		})
		if !pulledByNode(reg, cur.Digest) {
			t.Errorf("the node's containerd never asked the registry for %s", cur.Digest)
		}
		testutil.Eventually(t, 2*time.Minute, "storedVersions [v1beta1], the sites still crawled and Ready", func() error {
			for _, crd := range []string{"crawltargets", "exclusions", "siteindexes"} {
				if got := c.field(t, "crd/"+crd+".crawl.lohisoft.com", ".status.storedVersions"); got != `["v1beta1"]` {
					return fmt.Errorf("%s storedVersions %s", crd, got)
				}
			}
			for name, pages := range map[string]int32{"bakery": 5, "florist": 3} {
				ct := c.sitesTargets(t)[name]
				if ct.Status.PagesIndexed != pages || !meta.IsStatusConditionTrue(ct.Status.Conditions, crawlv1.ConditionReady) {
					return fmt.Errorf("%s: %d pages, %+v", name, ct.Status.PagesIndexed, ct.Status.Conditions)
				}
			}
			if s, r, m := readyOf(c.kustomization(t, "crawl-sites")); s != "True" {
				return fmt.Errorf("crawl-sites Ready=%s %s: %s", s, r, m)
			}
			return nil
		})
		// The fleet's v1alpha1 files still read as written.
		if got := c.field(t, "crawltarget.v1alpha1.crawl.lohisoft.com/bakery", ".spec.url", "-n", sitesNamespace); got != bakery.url+"/" {
			t.Errorf("bakery read as v1alpha1: url %q", got)
		}
	}) {
		return
	}

	t.Run("a commit that adds an Exclusion purges the domain", func(t *testing.T) {
		if err := fleet.Write(filepath.Join(flux.SitesPath, "exclusion.yaml"), fmt.Appendf(nil, `apiVersion: crawl.lohisoft.com/v1beta1
kind: Exclusion
metadata:
  name: bridge-sites
spec:
  domain: %s
  description: The sites' owner asked not to be crawled.
`, ip)); err != nil {
			t.Fatal(err)
		}
		if err := fleet.Commit("exclude the bridge's sites"); err != nil {
			t.Fatal(err)
		}
		c.syncNow(t)
		testutil.Eventually(t, 2*time.Minute, "both targets Excluded, their SiteIndexes emptied", func() error {
			for name, ct := range c.sitesTargets(t) {
				if cond := meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionStalled); cond == nil || cond.Reason != "Excluded" {
					return fmt.Errorf("%s: %+v", name, ct.Status.Conditions)
				}
			}
			var si crawlv1.SiteIndexList
			if err := c.client.List(ctx, &si, client.InNamespace(sitesNamespace)); err != nil {
				return err
			}
			for _, x := range si.Items {
				if len(x.Status.Pages) > 0 {
					return fmt.Errorf("SiteIndex %s still holds %d pages", x.Name, len(x.Status.Pages))
				}
			}
			return nil
		})
		base := c.portForward(t, helmRelease+"-index", 8082)
		if got := searchURLs(t, base, "heading"); len(got) > 0 {
			t.Errorf("search still finds the excluded sites: %v", got)
		}
		// Flux reads the Stalled targets through kstatus, at its next
		// reconcile: its health check after applying the Exclusion may
		// have run before the manager marked them (flux reconcile
		// kustomization crawl-sites).
		if err := flux.RequestReconcileOf(ctx, c.client, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "crawl-sites"); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, time.Minute, "crawl-sites not Ready", func() error {
			if s, r, m := readyOf(c.kustomization(t, "crawl-sites")); s != "False" {
				return fmt.Errorf("Ready=%s %s: %s", s, r, m)
			}
			return nil
		})
	})

	t.Run("a commit that removes a CrawlTarget prunes it", func(t *testing.T) {
		for _, f := range []string{"florist.yaml", "exclusion.yaml"} {
			if err := fleet.Remove(filepath.Join(flux.SitesPath, f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := fleet.Commit("florist leaves; the exclusion is lifted"); err != nil {
			t.Fatal(err)
		}
		c.syncNow(t)
		testutil.Eventually(t, 3*time.Minute, "florist pruned, bakery crawled again, crawl-sites Ready", func() error {
			targets := c.sitesTargets(t)
			if _, ok := targets["florist"]; ok {
				return fmt.Errorf("florist still there")
			}
			var ex crawlv1.ExclusionList
			if err := c.client.List(ctx, &ex); err != nil {
				return err
			}
			if len(ex.Items) > 0 {
				return fmt.Errorf("exclusion %s still there", ex.Items[0].Name)
			}
			if s, r, m := readyOf(c.kustomization(t, "crawl-sites")); s != "True" {
				return fmt.Errorf("crawl-sites Ready=%s %s: %s", s, r, m)
			}
			if !meta.IsStatusConditionTrue(targets["bakery"].Status.Conditions, crawlv1.ConditionReady) {
				return fmt.Errorf("bakery not Ready: %+v", targets["bakery"].Status.Conditions)
			}
			return nil
		})
	})

	t.Run("a commit that changes a chart value upgrades the release", func(t *testing.T) {
		path := filepath.Join(flux.InfraPath, "flux-helmrelease.yaml")
		doc, err := os.ReadFile(filepath.Join(fleet.Work, path))
		if err != nil {
			t.Fatal(err)
		}
		old := []byte("    manager:\n      replicas: 2\n")
		if bytes.Count(doc, old) != 1 {
			t.Fatalf("the example's manager values changed; update this test:\n%s", doc)
		}
		doc = bytes.Replace(doc, old, []byte("    manager:\n      replicas: 2\n      logLevel: debug\n"), 1)
		if err := fleet.Write(path, doc); err != nil {
			t.Fatal(err)
		}
		if err := fleet.Commit("manager.logLevel: debug"); err != nil {
			t.Fatal(err)
		}
		c.syncNow(t)
		testutil.Eventually(t, 5*time.Minute, "the Deployment rolled out with --zap-log-level=debug", func() error {
			d := &appsv1.Deployment{}
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: helmNamespace, Name: helmRelease}, d); err != nil {
				return err
			}
			args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(args, "--zap-log-level=debug") {
				return fmt.Errorf("manager args %s", args)
			}
			if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != 2 || d.Status.AvailableReplicas != 2 {
				return fmt.Errorf("rollout: %d updated, %d available", d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
			}
			hr := c.fluxObject(t, "helm.toolkit.fluxcd.io/v2", "HelmRelease", helmNamespace, helmRelease)
			if s, r, m := readyOf(hr); s != "True" || r != "UpgradeSucceeded" {
				return fmt.Errorf("HelmRelease Ready=%s %s: %s", s, r, m)
			}
			return nil
		})
		var secrets corev1.SecretList
		if err := c.client.List(ctx, &secrets, client.InNamespace(helmNamespace), client.MatchingLabels{"owner": "helm", "name": helmRelease}); err != nil {
			t.Fatal(err)
		}
		if len(secrets.Items) < 2 {
			t.Errorf("%d Helm release revisions, want an upgrade after the install", len(secrets.Items))
		}
	})

	t.Run("an unsigned chart, or the release's tag moved to one, is refused and changes nothing", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: helmNamespace, Name: helmRelease}, d); err != nil {
			t.Fatal(err)
		}
		running := d.Spec.Template.Spec.Containers[0].Image
		// First the tag Git names, moved; then a commit of another tag.
		// (The other order would wait out the crawl-operator
		// Kustomization's health check of the refused source, 10
		// minutes, before it applied the next commit.)
		for _, tc := range []struct {
			name, version string
			commit        bool
		}{
			// The tag the cluster runs, pointed at another chart: the
			// signature is of the release's digest, not of the new one.
			// Flux sees it at its next fetch (flux reconcile source oci).
			{"the release's own tag moved", cur.Version, false},
			{"a version nobody signed, committed", "9.9.9", true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				digest := pushUnsignedChart(t, helm, reg, tc.version)
				if !tc.commit {
					if err := flux.RequestReconcileOf(ctx, c.client, "source.toolkit.fluxcd.io/v1", "OCIRepository", "crawl-operator"); err != nil {
						t.Fatal(err)
					}
				} else {
					if err := fleet.SetChartTag(tc.version); err != nil {
						t.Fatal(err)
					}
					if err := fleet.Commit("crawl-operator " + tc.version + " (" + tc.name + ")"); err != nil {
						t.Fatal(err)
					}
					c.syncNow(t)
				}
				testutil.Eventually(t, 3*time.Minute, "the OCIRepository refuses "+tc.version, func() error {
					s, r, m := c.sourceVerified(t)
					if s != "False" || r != "VerificationError" {
						return fmt.Errorf("SourceVerified=%s %s: %s", s, r, m)
					}
					// Of what was just pushed, not an earlier refusal.
					if !strings.Contains(m, "failed to verify the signature using provider 'cosign'") || !strings.Contains(m, digest) {
						return fmt.Errorf("SourceVerified message %q (want one about %s)", m, digest)
					}
					// Ready says so once the attempt has ended
					// (Unknown, Progressing while it runs).
					src := c.fluxObject(t, "source.toolkit.fluxcd.io/v1", "OCIRepository", flux.Namespace, "crawl-operator")
					if s, r, m := readyOf(src); s != "False" || r != "VerificationError" {
						return fmt.Errorf("OCIRepository Ready=%s %s: %s", s, r, m)
					}
					t.Logf("refused %s: %s", tc.version, m)
					return nil
				})
				// Nothing of the refused chart reached the cluster.
				time.Sleep(5 * time.Second)
				if err := c.client.Get(ctx, client.ObjectKey{Namespace: helmNamespace, Name: helmRelease}, d); err != nil {
					t.Fatal(err)
				}
				if img := d.Spec.Template.Spec.Containers[0].Image; img != running {
					t.Errorf("the manager's image changed to %s", img)
				}
				hr := c.fluxObject(t, "helm.toolkit.fluxcd.io/v2", "HelmRelease", helmNamespace, helmRelease)
				history, _, _ := unstructured.NestedSlice(hr.Object, "status", "history")
				if len(history) == 0 {
					t.Fatal("the HelmRelease has no history")
				}
				// Flux adds the OCI digest as build metadata: X.Y.Z+digest.
				if v, _, _ := unstructured.NestedString(history[0].(map[string]any), "chartVersion"); v != cur.Version && !strings.HasPrefix(v, cur.Version+"+") {
					t.Errorf("the HelmRelease's last release is chart %q, want %s", v, cur.Version)
				}
			})
		}
	})
}

// condition is an object's condition of type typ ("" when it has none).
func condition(u *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", "no " + typ + " condition"
}

// sourceVerified is the chart OCIRepository's SourceVerified condition:
// whether the cosign signature of what it fetched verified.
func (c *realNodeCluster) sourceVerified(t *testing.T) (status, reason, message string) {
	t.Helper()
	src := c.fluxObject(t, "source.toolkit.fluxcd.io/v1", "OCIRepository", flux.Namespace, "crawl-operator")
	if src == nil {
		return "", "", "no OCIRepository"
	}
	return condition(src, "SourceVerified")
}

// pushUnsignedChart pushes the working copy's chart as version to reg,
// with nobody's signature: what an attacker with write access to the
// registry, or a mistaken push, puts there. It returns the pushed
// manifest's digest.
func pushUnsignedChart(t *testing.T, helm string, reg *registry.Server, version string) string {
	t.Helper()
	h := helmchart.Helm{Bin: helm, Home: t.TempDir()}
	tgz, err := h.Package(context.Background(), filepath.Join(repoRoot, "charts", "crawl-operator"), version, "v"+version, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	digest, err := h.Push(context.Background(), tgz, "oci://"+reg.Addr+"/charts", true)
	if err != nil {
		t.Fatal(err)
	}
	return digest
}
