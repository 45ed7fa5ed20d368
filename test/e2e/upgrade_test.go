package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/hack/devcluster/registry"
	"github.com/lohisoft/crawl-operator/hack/release/changelog"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// A release as users get it: made by make release (hack/release) and
// pushed by make release-push to a registry on loopback, where the real
// node's containerd, helm and Flux fetch it.
type published struct {
	changelog.Entry
	// Dist is the release's directory (make release's dist/).
	Dist string
	// Image is REGISTRY/crawl-operator:vX.Y.Z, Digest its index's.
	Image, Digest string
	// Chart is oci://REGISTRY/charts/crawl-operator (--version X.Y.Z).
	Chart string
}

// releases are the newest version CHANGELOG.md lists (this working tree)
// and the release before it (rebuilt from the commit its entry records).
func releases(t *testing.T) (previous, current changelog.Entry) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries := changelog.Entries(string(text))
	if len(entries) == 0 {
		t.Fatal("CHANGELOG.md lists no version")
	}
	current = entries[0]
	if previous, err = changelog.Previous(string(text), current.Tag()); err != nil {
		t.Fatal(err)
	}
	return previous, current
}

// signingKey is a cosign key pair (no password) that the test's releases
// are signed with, as the project's key signs real ones; it returns the
// private key's file and the public key.
func signingKey(t *testing.T) (key, pub string) {
	t.Helper()
	cosign := testutil.BuiltTool(t, repoRoot, "bin/cosign/cosign", "cosign-bin")
	dir := t.TempDir()
	cmd := exec.Command(cosign, "generate-key-pair", "--output-key-prefix", filepath.Join(dir, "release"))
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "release.pub"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "release.key"), string(b)
}

// publish builds a release with hack/release, signed with key, and
// pushes it to reg.
func publish(t *testing.T, reg *registry.Server, e changelog.Entry, key string) published {
	t.Helper()
	for _, tool := range []struct{ bin, target string }{
		{"bin/cosign/cosign", "cosign-bin"}, {"bin/cyclonedx/cyclonedx-gomod", "cyclonedx-bin"}, {"bin/helm", "helm-bin"},
	} {
		testutil.BuiltTool(t, repoRoot, tool.bin, tool.target)
	}
	dist := t.TempDir()
	start := time.Now()
	for _, args := range [][]string{
		// The working tree may differ from its commit while it is being
		// worked on; a released version is built from its own commit.
		{"build", "--version", e.Tag(), "--out", dist, "--key", key, "--allow-dirty"},
		{"push", "--version", e.Tag(), "--out", dist, "--key", key, "--registry", reg.Addr},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		cmd := exec.CommandContext(ctx, "go", append([]string{"run", "./hack/release"}, args...)...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("release %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	index, err := os.ReadFile(filepath.Join(dist, "image-index.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(index)
	p := published{Entry: e, Dist: dist, Image: reg.Addr + "/crawl-operator:" + e.Tag(),
		Digest: "sha256:" + hex.EncodeToString(sum[:]), Chart: "oci://" + reg.Addr + "/charts/crawl-operator"}
	t.Logf("release %s built and pushed in %s: %s@%s", e.Tag(), time.Since(start).Round(time.Second), p.Image, p.Digest)
	return p
}

// publishReleases makes the release before the newest and the newest
// (releases), signed with one test key, and pushes both to a registry on
// loopback; it returns the registry, the public key and both releases.
func publishReleases(t *testing.T) (reg *registry.Server, pub string, previous, current published) {
	t.Helper()
	prevEntry, curEntry := releases(t)
	reg = startRegistry(t)
	key, pub := signingKey(t)
	return reg, pub, publish(t, reg, prevEntry, key), publish(t, reg, curEntry, key)
}

// startRegistry serves an OCI registry on loopback for the test.
func startRegistry(t *testing.T) *registry.Server {
	t.Helper()
	reg, err := registry.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	return reg
}

// pulledByNode says whether the node's containerd asked the registry for
// the manifest ref (a tag or a digest) of the operator's image: it
// resolves with HEAD, then fetches by digest.
func pulledByNode(reg *registry.Server, ref string) bool {
	return slices.ContainsFunc(reg.Requests(), func(r registry.Request) bool {
		return (r.Method == "GET" || r.Method == "HEAD") && r.Path == "/v2/crawl-operator/manifests/"+ref && strings.HasPrefix(r.UserAgent, "containerd/")
	})
}

// versioned is KIND/NAME as KIND.VERSION.crawl.lohisoft.com/NAME: kubectl
// reads the object in that API version.
func versioned(kindName, version string) string {
	kind, name, _ := strings.Cut(kindName, "/")
	return kind + "." + version + ".crawl.lohisoft.com/" + name
}

// The upgrade a user runs: the previous release installed from the
// registry with CrawlTargets and Exclusions written in v1alpha1 and a
// crawl running, then helm upgrade to this release. Nothing may be lost;
// a rollback past the storage-version move is refused and changes nothing.
func TestUpgradeOnRealNode(t *testing.T) {
	helm := helmBinary(t)
	reg, _, prev, cur := publishReleases(t)

	c := startRealNode(t)
	ctx := context.Background()
	c.restrictedNamespace(t)
	site := startSite(t, c.gw, 6, 0)
	// 1.5 s a page: its crawl outlasts the upgrade's rollout.
	slow := startSite(t, c.gw, 8, 1500*time.Millisecond)
	// The laptop's values (make demo-helm), but the image from the
	// registry: the node pulls it, nothing is imported.
	helmArgs := func(verb string, r published, extra ...string) []string {
		args := []string{verb, helmRelease, r.Chart, "--version", r.Version, "--plain-http", "--namespace", helmNamespace,
			"-f", "hack/demo/helm-values.yaml", "--set", "image.repository=" + reg.Addr + "/crawl-operator",
			"--set", "image.pullPolicy=IfNotPresent"}
		return append(args, extra...)
	}
	alpha := func(t *testing.T, resource, field string) string {
		return c.field(t, versioned(resource, "v1alpha1"), field, "-n", rnNamespace)
	}
	beta := func(t *testing.T, resource, field string) string {
		return c.field(t, versioned(resource, "v1beta1"), field, "-n", rnNamespace)
	}

	if !t.Run("the previous release, installed from the registry, crawls v1alpha1 targets", func(t *testing.T) {
		c.helm(t, helm, helmArgs("install", prev, "--create-namespace", "--wait", "--timeout", "5m")...)
		m := c.runningManager(t)
		if got := m.Spec.Containers[0].Image; got != prev.Image {
			t.Errorf("manager image %s, want %s", got, prev.Image)
		}
		if !pulledByNode(reg, prev.Tag()) {
			t.Errorf("the node's containerd never asked the registry for %s: %+v", prev.Image, reg.Requests())
		}
		c.mustKubectl(t, fmt.Sprintf(`apiVersion: crawl.lohisoft.com/v1alpha1
kind: CrawlTarget
metadata: {name: bakery, namespace: %[1]s}
spec: {url: "%[2]s/", delay: 100ms, maxPages: 20}
---
apiVersion: crawl.lohisoft.com/v1alpha1
kind: CrawlTarget
metadata: {name: paused, namespace: %[1]s}
spec: {url: "http://paused.example/", suspend: true}
---
apiVersion: crawl.lohisoft.com/v1alpha1
kind: CrawlTarget
metadata: {name: forbidden, namespace: %[1]s}
spec: {url: "http://forbidden.example/"}
---
apiVersion: crawl.lohisoft.com/v1alpha1
kind: Exclusion
metadata: {name: forbidden}
spec: {domain: forbidden.example, reason: "asked by email", requestedBy: webmaster@forbidden.example}
`, rnNamespace, site.url), "apply", "-f", "-")
		testutil.Eventually(t, 2*time.Minute, "bakery crawled by the previous release", func() error {
			if got := alpha(t, "crawltarget/bakery", ".status.pagesIndexed"); got != "6" {
				return fmt.Errorf("%s pages", got)
			}
			if got := alpha(t, "crawltarget/forbidden", `.status.conditions[?(@.type=="Stalled")].reason`); got != "Excluded" {
				return fmt.Errorf("forbidden: Stalled reason %q", got)
			}
			return nil
		})
		c.mustKubectl(t, fmt.Sprintf(`apiVersion: crawl.lohisoft.com/v1alpha1
kind: CrawlTarget
metadata: {name: slow, namespace: %s}
spec: {url: "%s/", delay: 100ms}
`, rnNamespace, slow.url), "apply", "-f", "-")
		pod := c.runningPod(t, "slow", slow)
		if got := pod.Spec.Containers[0].Image; got != prev.Image {
			t.Errorf("crawler image %s, want %s", got, prev.Image)
		}
	}) {
		return
	}

	var upgraded corev1.Pod
	if !t.Run("helm upgrade to this release: the running crawl lands, nothing is lost", func(t *testing.T) {
		start := time.Now()
		c.helm(t, helm, helmArgs("upgrade", cur, "--wait", "--timeout", "5m")...)
		upgraded = c.runningManager(t)
		t.Logf("helm upgrade --wait %s → %s: %s; the crawl had made %d requests", prev.Tag(), cur.Tag(),
			time.Since(start).Round(100*time.Millisecond), slow.requests.Load())
		// One manager (SQLite: Recreate) serves conversions: reads that
		// need one fail until its Pod is behind the webhook Service.
		returned := time.Now()
		testutil.Eventually(t, time.Minute, "a v1alpha1-stored target read as v1beta1", func() error {
			return c.client.Get(ctx, client.ObjectKey{Namespace: rnNamespace, Name: "slow"}, &crawlv1.CrawlTarget{})
		})
		t.Logf("conversions answered %s after helm upgrade --wait returned", time.Since(returned).Round(10*time.Millisecond))
		// The released chart pins its image by digest: the node pulled
		// exactly that.
		if want := cur.Image + "@" + cur.Digest; upgraded.Spec.Containers[0].Image != want {
			t.Errorf("manager image %s, want %s", upgraded.Spec.Containers[0].Image, want)
		}
		if !pulledByNode(reg, cur.Digest) {
			t.Errorf("the node's containerd never asked the registry for %s", cur.Digest)
		}
		c.waitCrawled(t, "slow", 1, 8, 3*time.Minute)
		testutil.Eventually(t, time.Minute, "storedVersions [v1beta1]", func() error {
			for _, crd := range []string{"crawltargets", "exclusions", "siteindexes"} {
				if got := c.field(t, "crd/"+crd+".crawl.lohisoft.com", ".status.storedVersions"); got != `["v1beta1"]` {
					return fmt.Errorf("%s storedVersions %s", crd, got)
				}
			}
			return nil
		})
		// Every object reads in both versions, each saying the same.
		for _, tc := range []struct{ got, want string }{
			{alpha(t, "crawltarget/bakery", ".status.pagesIndexed"), "6"},
			{beta(t, "crawltarget/bakery", ".status.pagesIndexed"), "6"},
			{alpha(t, "crawltarget/paused", ".spec.suspend"), "true"},
			{beta(t, "crawltarget/paused", ".spec.crawlPolicy"), "Suspended"},
			{beta(t, "crawltarget/bakery", ".spec.maxPages"), "20"},
			{alpha(t, "siteindex/bakery", ".status.pages[5].title"), beta(t, "siteindex/bakery", ".status.pages[5].title")},
			{alpha(t, "crawltarget/slow", ".status.lastFinishedRun"), "1"},
			{c.field(t, "exclusion.v1alpha1.crawl.lohisoft.com/forbidden", ".spec.reason"), "asked by email"},
			{c.field(t, "exclusion.v1beta1.crawl.lohisoft.com/forbidden", ".spec.description"), "asked by email"},
		} {
			if tc.got != tc.want {
				t.Errorf("read %q, want %q", tc.got, tc.want)
			}
		}
		if alpha(t, "siteindex/bakery", ".status.pages[5].title") == "" {
			t.Error("bakery's SiteIndex lost its pages")
		}
		base := c.portForward(t, helmRelease+"-index", 8082)
		testutil.Eventually(t, 30*time.Second, "search answers from both crawls", func() error {
			got := strings.Join(searchURLs(t, base, "heading"), " ")
			for _, s := range []*testSite{site, slow} {
				if !strings.Contains(got, strings.TrimPrefix(s.url, "http://")) {
					return fmt.Errorf("no %s in %s", s.url, got)
				}
			}
			return nil
		})
		// The Exclusion holds: a crawl asked of the forbidden site makes
		// no Pod; one asked of the bakery runs this release's crawler.
		ct := c.target(t, "forbidden")
		if cond := meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionStalled); cond == nil || cond.Reason != crawlv1.ReasonExcluded {
			t.Errorf("forbidden after the upgrade: %+v", ct.Status.Conditions)
		}
		for _, name := range []string{"forbidden", "bakery"} {
			c.mustKubectl(t, "", "annotate", "-n", rnNamespace, "crawltarget/"+name,
				crawlpod.AnnotationRequestedAt+"="+time.Now().UTC().Format(time.RFC3339), "--overwrite")
		}
		run := c.target(t, "bakery").Status.LastFinishedRun + 1
		c.waitCrawled(t, "bakery", run, 6, 2*time.Minute)
		var pods corev1.PodList
		if err := c.client.List(ctx, &pods, client.InNamespace(rnNamespace)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, "forbidden") {
				t.Errorf("a crawler Pod %s for the excluded site", p.Name)
			}
		}
		pod := &corev1.Pod{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: rnNamespace, Name: crawlpod.PodName("bakery", run)}, pod); err == nil {
			if want := cur.Image + "@" + cur.Digest; pod.Spec.Containers[0].Image != want {
				t.Errorf("crawler image %s, want %s", pod.Spec.Containers[0].Image, want)
			}
		}
	}) {
		return
	}

	t.Run("a rollback to the previous release is refused and changes nothing", func(t *testing.T) {
		out, err := c.helmRun(t, helm, "rollback", helmRelease, "1", "--namespace", helmNamespace, "--wait", "--timeout", "2m")
		if err == nil {
			t.Fatalf("helm rollback to %s succeeded:\n%s", prev.Tag(), out)
		}
		t.Logf("helm rollback to %s: %v\n%s", prev.Tag(), err, out)
		for _, w := range []string{"refused: crawl-operator-" + prev.Version + " cannot read", "storedVersions"} {
			if !strings.Contains(out, w) {
				t.Errorf("helm rollback's error does not say %q", w)
			}
		}
		m := c.runningManager(t)
		if m.Name != upgraded.Name || m.Spec.Containers[0].Image != upgraded.Spec.Containers[0].Image {
			t.Errorf("after the refused rollback: manager %s running %s, want %s still", m.Name, m.Spec.Containers[0].Image, upgraded.Name)
		}
		if got := c.field(t, "deployment/"+helmRelease, ".spec.template.spec.containers[0].image", "-n", helmNamespace); got != cur.Image+"@"+cur.Digest {
			t.Errorf("the Deployment's image is now %s", got)
		}
		// docs/upgrading.md: roll forward with helm upgrade to the
		// version that ran; a crawl lands after it.
		c.helm(t, helm, helmArgs("upgrade", cur, "--wait", "--timeout", "5m")...)
		run := c.target(t, "bakery").Status.LastFinishedRun + 1
		c.mustKubectl(t, "", "annotate", "-n", rnNamespace, "crawltarget/bakery",
			crawlpod.AnnotationRequestedAt+"="+time.Now().UTC().Format(time.RFC3339), "--overwrite")
		c.waitCrawled(t, "bakery", run, 6, 2*time.Minute)
		if h := c.helm(t, helm, "history", helmRelease, "--namespace", helmNamespace); !strings.Contains(h, "failed") || !strings.Contains(h, "deployed") {
			t.Errorf("helm history:\n%s", h)
		}
	})
}
