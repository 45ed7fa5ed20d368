package flux

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestWithRepoURL(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "gitops", "flux-helmrelease.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := WithRepoURL(example, "http://127.0.0.1:9/crawl-operator.git")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), upstreamURL) || !strings.Contains(string(got), "url: http://127.0.0.1:9/crawl-operator.git\n") {
		t.Errorf("URL not replaced:\n%s", got)
	}
	if d := len(got) - len(example); d != len("http://127.0.0.1:9/crawl-operator.git")-len(upstreamURL) {
		t.Errorf("more than the URL changed (%d bytes)", d)
	}
	// An example that no longer names the repository, or names it twice,
	// must fail rather than leave Flux pointed at GitHub.
	for _, doc := range []string{"url: https://example.com\n", "url: " + upstreamURL + "\nurl: " + upstreamURL + "\n"} {
		if _, err := WithRepoURL([]byte(doc), "http://x"); err == nil {
			t.Errorf("accepted %q", doc)
		}
	}
}

// patchOf decodes the patch the bootstrap Kustomization applies to the
// Kustomization name.
func patchOf(t *testing.T, ks *unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	patches, _, _ := unstructured.NestedSlice(ks.Object, "spec", "patches")
	for _, p := range patches {
		m := p.(map[string]any)
		if m["target"].(map[string]any)["name"] == name {
			out := map[string]any{}
			if err := yaml.Unmarshal([]byte(m["patch"].(string)), &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("no patch for %s", name)
	return nil
}

func TestBootstrap(t *testing.T) {
	values := map[string]any{"image": map[string]any{"tag": "dev", "pullPolicy": "Never"}}
	for _, tc := range []struct {
		name        string
		dsn         string
		key         string
		wantStorage any
		wantSecret  bool
	}{
		{name: "without PostgreSQL: SQLite, one manager; an unsigned chart", wantStorage: map[string]any{"type": "sqlite"}},
		{name: "with a DSN: the example's PostgreSQL, its Secret patched; a signed release", dsn: "postgres://u@10.0.0.1/db", wantSecret: true,
			key: "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chart := Chart{URL: "oci://127.0.0.1:5000/charts/crawl-operator", PublicKey: tc.key}
			objs, err := Bootstrap("http://127.0.0.1:9/fleet.git", Laptop{Values: values, DSN: tc.dsn, Chart: chart})
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 2 || objs[0].GetKind() != "GitRepository" || objs[1].GetKind() != "Kustomization" {
				t.Fatalf("want the GitRepository and Kustomization flux-system, got %v", objs)
			}
			if url, _, _ := unstructured.NestedString(objs[0].Object, "spec", "url"); url != "http://127.0.0.1:9/fleet.git" {
				t.Errorf("GitRepository url %q", url)
			}
			if path, _, _ := unstructured.NestedString(objs[1].Object, "spec", "path"); path != "./"+ClusterPath {
				t.Errorf("Kustomization path %q", path)
			}
			operator := patchOf(t, objs[1], "crawl-operator")["spec"].(map[string]any)["patches"].([]any)
			var targets []string
			var release, source map[string]any
			for _, p := range operator {
				m := p.(map[string]any)
				target := m["target"].(map[string]any)
				targets = append(targets, target["kind"].(string)+"/"+target["name"].(string))
				doc := map[string]any{}
				if err := yaml.Unmarshal([]byte(m["patch"].(string)), &doc); err != nil {
					t.Fatal(err)
				}
				switch target["kind"].(string) + "/" + target["name"].(string) {
				case "HelmRelease/crawl-operator":
					release = doc["spec"].(map[string]any)["values"].(map[string]any)
				case "OCIRepository/crawl-operator":
					source = doc["spec"].(map[string]any)
				case "Secret/crawl-index-dsn":
					if doc["stringData"].(map[string]any)["dsn"] != tc.dsn {
						t.Errorf("DSN Secret patch %v", doc)
					}
				case "Secret/crawl-operator-cosign":
					if doc["stringData"].(map[string]any)["cosign.pub"] != tc.key {
						t.Errorf("cosign Secret patch %v", doc)
					}
				}
			}
			if got := slices.Contains(targets, "Secret/crawl-index-dsn"); got != tc.wantSecret {
				t.Errorf("DSN Secret patched: %v, want %v", got, tc.wantSecret)
			}
			if got := slices.Contains(targets, "Secret/crawl-operator-cosign"); got != (tc.key != "") {
				t.Errorf("cosign Secret patched: %v, want %v", got, tc.key != "")
			}
			// The chart from the registry here; verified when it is signed.
			verify, hasVerify := source["verify"]
			if source["url"] != chart.URL || source["insecure"] != true || (tc.key == "") != (hasVerify && verify == nil) {
				t.Errorf("OCIRepository patch %v", source)
			}
			if release["image"].(map[string]any)["tag"] != "dev" {
				t.Errorf("values %v lost the image", release)
			}
			if tc.wantStorage != nil && (release["storage"].(map[string]any)["type"] != "sqlite" || release["manager"].(map[string]any)["replicas"] != float64(1)) {
				t.Errorf("values %v: want SQLite and one manager", release)
			}
			if tc.wantStorage == nil && (release["storage"] != nil || release["manager"] != nil) {
				t.Errorf("values %v override the example's storage or replicas", release)
			}
			sites := patchOf(t, objs[1], "crawl-sites")["spec"].(map[string]any)
			if sites["path"] != "./"+SitesPath || sites["sourceRef"].(map[string]any)["name"] != "flux-system" {
				t.Errorf("crawl-sites patch %v", sites)
			}
		})
	}
	if _, ok := values["storage"]; ok {
		t.Error("Bootstrap changed the caller's values")
	}
}

func TestArgs(t *testing.T) {
	src := strings.Join(Args("source-controller", "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "/a"), " ")
	for _, want := range []string{"--storage-path=/a", "--storage-addr=127.0.0.1:3", "--storage-adv-addr=127.0.0.1:3", "--health-addr=127.0.0.1:2", "--enable-leader-election=false"} {
		if !strings.Contains(src, want) {
			t.Errorf("source-controller args %s lack %s", src, want)
		}
	}
	for _, c := range Controllers {
		for _, a := range Args(c, "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "/a") {
			if strings.Contains(a, "addr=") && !strings.Contains(a, "127.0.0.1:") {
				t.Errorf("%s listens beyond loopback: %s", c, a)
			}
		}
	}
}

// SetChartTag changes the example's release, and only that line.
func TestSetChartTag(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "gitops", "flux-helmrelease.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f := &Fleet{Work: t.TempDir()}
	if err := f.Write(filepath.Join(InfraPath, "flux-helmrelease.yaml"), example); err != nil {
		t.Fatal(err)
	}
	if err := f.SetChartTag("0.1.0"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(f.Work, InfraPath, "flux-helmrelease.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte("  ref:\n    # ")) || !bytes.Contains(got, []byte("\n    tag: 0.1.0\n")) || len(got) != len(example) {
		t.Errorf("after SetChartTag:\n%s", got)
	}
	if err := f.Write(filepath.Join(InfraPath, "flux-helmrelease.yaml"), append(example, []byte("---\n  ref:\n    tag: v2\n")...)); err != nil {
		t.Fatal(err)
	}
	if err := f.SetChartTag("0.1.0"); err == nil || !strings.Contains(err.Error(), "2 lines") {
		t.Errorf("two tag lines: %v", err)
	}
}
