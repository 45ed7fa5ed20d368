package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lohisoft/crawl-operator/crawler/testutil/testca"
)

const crawlerCAName = "crawl-crawl-operator-crawler-ca"

// crawler.extraCACerts: off, nothing rendered and no flag; set, a ConfigMap
// whose ca.crt the manager, given the flag the chart passes, finds at the
// path it is mounted on, reads and accepts; and a checksum that rolls the
// manager, which reads the CAs only at start, when they change.
func TestCrawlerExtraCACerts(t *testing.T) {
	ca, other := testca.New(t), testca.New(t)
	bundle := "# the world's CA\n" + ca.PEM + other.PEM
	rolls := map[string]string{}
	for _, tc := range []struct {
		name  string
		certs string
	}{
		{"unset", ""},
		{"one CA", ca.PEM},
		{"a bundle with comments", bundle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := mustRender(t, map[string]any{"crawler": map[string]any{"extraCACerts": tc.certs}})
			dep := find(objs, "Deployment", "")
			cm := find(objs, "ConfigMap", crawlerCAName)
			podAnnotations, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "annotations")
			o := managerOptions(t, dep)
			if tc.certs == "" {
				if cm != nil || o.Pod.ExtraCAFile != "" || len(podAnnotations) != 0 || strings.Contains(fmtVolumes(t, dep), "crawler-ca") {
					t.Errorf("rendered although unset: ConfigMap %v, flag %q, annotations %v, volumes %s", cm != nil, o.Pod.ExtraCAFile, podAnnotations, fmtVolumes(t, dep))
				}
				return
			}
			if cm == nil || cm.GetNamespace() != releaseNamespace {
				t.Fatalf("no ConfigMap %s in %s", crawlerCAName, releaseNamespace)
			}
			data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
			if len(data) != 1 || data["ca.crt"] != tc.certs {
				t.Fatalf("ConfigMap data %q, want ca.crt exactly as given", data)
			}
			// Project the ConfigMap as the kubelet would, where the manager
			// container mounts it, and let the manager read it from there.
			dir := mountedAt(t, dep, crawlerCAName)
			rel, err := filepath.Rel(dir, o.Pod.ExtraCAFile)
			if err != nil || rel != "ca.crt" {
				t.Fatalf("--crawler-extra-ca-file=%s is not ca.crt of the mount %s", o.Pod.ExtraCAFile, dir)
			}
			local := filepath.Join(t.TempDir(), "ca.crt")
			if err := os.WriteFile(local, []byte(data["ca.crt"]), 0o444); err != nil {
				t.Fatal(err)
			}
			o.Pod.ExtraCAFile = local
			if err := o.Pod.ReadExtraCAFile(); err != nil {
				t.Fatal(err)
			}
			if err := o.Pod.Validate(); err != nil || o.Pod.ExtraCACerts != tc.certs {
				t.Errorf("the manager refused the mounted file (%v) or read %q", err, o.Pod.ExtraCACerts)
			}
			sum := podAnnotations["checksum/crawler-extra-ca"]
			if sum == "" {
				t.Errorf("Pod annotations %v: no checksum of the CAs", podAnnotations)
			}
			rolls[tc.name] = sum
		})
	}
	if rolls["one CA"] == rolls["a bundle with comments"] {
		t.Error("changing the CAs leaves the Pod template as it was: the manager would keep the old ones")
	}
}

// mountedAt is the read-only mount path, in the manager container, of the
// Deployment's volume of ConfigMap name.
func mountedAt(t *testing.T, dep *unstructured.Unstructured, name string) string {
	t.Helper()
	volumes, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	vol := ""
	for _, v := range volumes {
		v := v.(map[string]any)
		if cm, _, _ := unstructured.NestedString(v, "configMap", "name"); cm == name {
			vol = v["name"].(string)
		}
	}
	mounts, _, _ := unstructured.NestedSlice(managerContainer(t, dep), "volumeMounts")
	for _, m := range mounts {
		m := m.(map[string]any)
		if m["name"] == vol && vol != "" {
			if m["readOnly"] != true {
				t.Errorf("volume %s is mounted writable", vol)
			}
			return m["mountPath"].(string)
		}
	}
	t.Fatalf("ConfigMap %s is not mounted into the manager (volumes %v)", name, volumes)
	return ""
}

// fmtVolumes shows the Deployment's volumes and the manager's mounts.
func fmtVolumes(t *testing.T, dep *unstructured.Unstructured) string {
	t.Helper()
	volumes, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	mounts, _, _ := unstructured.NestedSlice(managerContainer(t, dep), "volumeMounts")
	return fmt.Sprint(volumes, mounts)
}

func TestSchemaRejectsBadExtraCACerts(t *testing.T) {
	for name, v := range map[string]any{
		"a list":      []any{"-----BEGIN CERTIFICATE-----"},
		"a map":       map[string]any{"ca.crt": "x"},
		"over 64 KiB": strings.Repeat("x", 64<<10+1),
	} {
		if _, err := render(t, map[string]any{"crawler": map[string]any{"extraCACerts": v}}); err == nil || !strings.Contains(err.Error(), "extraCACerts") {
			t.Errorf("%s: %v, want the schema to refuse extraCACerts", name, err)
		}
	}
}

// The CAs reach the ConfigMap exactly as given, whatever the text around
// the PEM blocks holds.
func TestCrawlerExtraCACertsRenderExactly(t *testing.T) {
	for _, c := range hostile {
		cm := find(mustRender(t, map[string]any{"crawler": map[string]any{"extraCACerts": c}}), "ConfigMap", crawlerCAName)
		if got, err := dig(cm.Object, "data", "ca.crt"); err != nil || got != c {
			t.Errorf("extraCACerts = %q: ca.crt is %q (%v)", c, got, err)
		}
	}
}
