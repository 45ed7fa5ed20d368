package addons

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lohisoft/crawl-operator/hack/devcluster/cluster"
)

func testOptions() Options {
	return Options{StateDir: "/state/addons", Network: cluster.Network{
		PodSubnet: netip.MustParsePrefix("100.64.213.0/24"), ServiceCIDR: netip.MustParsePrefix("10.96.213.0/24"),
	}}
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s among the add-ons", kind, name)
	return nil
}

// What other software relies on: the kube-dns Service at the plan's DNS
// address with the k8s-app label NetworkPolicies select, the default
// StorageClass, images that are never pulled, and a node whose only
// taint is the egress one.
func TestManifests(t *testing.T) {
	objs, err := Manifests(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	svc := find(t, objs, "Service", "kube-dns")
	if ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP"); ip != "10.96.213.10" {
		t.Errorf("kube-dns clusterIP = %q, want the plan's 10.96.213.10", ip)
	}
	if svc.GetNamespace() != "kube-system" || svc.GetLabels()["k8s-app"] != "kube-dns" {
		t.Errorf("kube-dns Service %s/%v", svc.GetNamespace(), svc.GetLabels())
	}
	sc := find(t, objs, "StorageClass", StorageClass)
	if sc.GetAnnotations()["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("StorageClass %s is not the default", StorageClass)
	}
	cm := find(t, objs, "ConfigMap", "local-path-config")
	var cfg struct {
		NodePathMap []struct {
			Node  string   `json:"node"`
			Paths []string `json:"paths"`
		} `json:"nodePathMap"`
		SetupCommand, TeardownCommand string
	}
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "config.json")
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("config.json: %v\n%s", err, raw)
	}
	if len(cfg.NodePathMap) != 1 || cfg.NodePathMap[0].Paths[0] != "/state/addons/volumes" || cfg.SetupCommand != "/local-path-helper" {
		t.Errorf("local-path config %+v", cfg)
	}
	helper, _, _ := unstructured.NestedString(cm.Object, "data", "helperPod.yaml")
	if !strings.Contains(helper, HelperImage) {
		t.Errorf("helper Pod does not run %s:\n%s", HelperImage, helper)
	}
	corefile, _, _ := unstructured.NestedString(find(t, objs, "ConfigMap", "coredns").Object, "data", "Corefile")
	if !strings.Contains(corefile, "kubernetes cluster.local in-addr.arpa") || strings.Contains(corefile, "forward") {
		t.Errorf("Corefile must serve cluster.local and forward nowhere:\n%s", corefile)
	}
	for _, name := range []string{"coredns", "local-path-provisioner"} {
		d := find(t, objs, "Deployment", name)
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		c := cs[0].(map[string]any)
		if c["imagePullPolicy"] != "Never" || !strings.HasPrefix(c["image"].(string), "localhost/crawl-operator-") {
			t.Errorf("%s runs %v with pull policy %v", name, c["image"], c["imagePullPolicy"])
		}
		tols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "tolerations")
		if !strings.Contains(toJSON(tols), "crawl.lohisoft.com/egress") {
			t.Errorf("%s does not tolerate the egress node's taint: %s", name, toJSON(tols))
		}
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
