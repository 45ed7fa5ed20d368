package chart

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lohisoft/crawl-operator/crawler/specialpurpose"
	"github.com/lohisoft/crawl-operator/internal/testutil/helmrender"
)

// forbiddenThen is the except-list of a crawler NetworkPolicy: the ranges
// the crawler's dialer refuses, in the table's order, then extra.
func forbiddenThen(extra ...string) []any {
	var out []any
	for _, p := range specialpurpose.Forbidden() {
		out = append(out, p.String())
	}
	for _, e := range extra {
		out = append(out, e)
	}
	return out
}

// The chart cannot import Go: it reads the ranges from
// files/networkpolicy/forbidden-ipv4.yaml, which `make manifests` generates
// from crawler/specialpurpose. Its except-list must be exactly the table's
// ranges, in order, then the egress IPs and extraExceptCIDRs, in every
// policy it renders: a stale file or a template that drops or adds a range
// fails here.
func TestChartExceptsTheRangesTheDialerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []any
	}{
		{"defaults", nil, forbiddenThen("79.139.58.98/32", "79.139.58.121/32")},
		{"no egress IPs, an extra range, two namespaces", map[string]any{
			"egress": map[string]any{"expectedIPs": []any{}},
			"networkPolicy": map[string]any{
				"extraExceptCIDRs":  []any{"34.118.224.0/20"},
				"crawlerNamespaces": []any{"sites", "shops"},
			},
		}, forbiddenThen("34.118.224.0/20")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for _, obj := range mustRender(t, tc.values) {
				if obj.GetKind() != "NetworkPolicy" {
					continue
				}
				n++
				rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "egress")
				var peers []any
				if len(rules) > 0 {
					peers, _, _ = unstructured.NestedSlice(rules[0].(map[string]any), "to")
				}
				if len(peers) != 1 {
					t.Fatalf("%s/%s: the first egress rule's peers are %v, want one ipBlock", obj.GetNamespace(), obj.GetName(), peers)
				}
				except, _, _ := unstructured.NestedSlice(peers[0].(map[string]any), "ipBlock", "except")
				if !reflect.DeepEqual(except, tc.want) {
					t.Errorf("%s/%s excepts\n%v\nwant\n%v", obj.GetNamespace(), obj.GetName(), except, tc.want)
				}
			}
			if n == 0 {
				t.Fatal("the chart rendered no NetworkPolicy")
			}
		})
	}
}

// A chart whose file of ranges is missing or empty refuses to render
// rather than let crawler Pods reach every private address.
func TestChartWithoutItsRangesRefusesToRender(t *testing.T) {
	const file = "files/networkpolicy/forbidden-ipv4.yaml"
	for _, content := range []string{"", "# nothing\n", "except: []\n"} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(chartPath)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := helmrender.RenderFor(dir, "crawl", releaseNamespace, kubeVersion(t), nil)
		if err == nil || !strings.Contains(err.Error(), file+" lists no ranges") {
			t.Errorf("%s holding %q: render error %v, want one naming the file", file, content, err)
		}
	}
}
