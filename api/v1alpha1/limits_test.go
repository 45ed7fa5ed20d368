package v1alpha1

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// TestMarkersMatchLimits checks the generated CRDs, every version of them,
// against the limits of package runreport: kubebuilder markers can only
// hold literals, so this is what keeps the API server's validation, the
// crawler's caps and the results endpoint on one set of numbers.
func TestMarkersMatchLimits(t *testing.T) {
	sis := schemasOf(t, "crawl.lohisoft.com_siteindexes.yaml")
	cts := schemasOf(t, "crawl.lohisoft.com_crawltargets.yaml")
	if len(sis) != len(cts) {
		t.Fatalf("the CRDs serve %d and %d versions", len(cts), len(sis))
	}
	for version, si := range sis {
		ct, ok := cts[version]
		if !ok {
			t.Fatalf("CrawlTarget has no version %s", version)
		}
		t.Run(version, func(t *testing.T) { markersMatchLimits(t, ct, si) })
	}
}

func markersMatchLimits(t *testing.T, ct, si *apiextensionsv1.JSONSchemaProps) {
	cases := []struct {
		schema *apiextensionsv1.JSONSchemaProps
		path   string
		field  string // maxLength, maxItems or maximum
		want   int64
	}{
		{ct, "spec.url", "maxLength", runreport.MaxURLLength},
		{ct, "spec.maxPages", "maximum", runreport.MaxPages},
		{si, "status.pages", "maxItems", runreport.MaxPages},
		{si, "status.pages[].url", "maxLength", runreport.MaxURLLength},
		{si, "status.pages[].title", "maxLength", runreport.MaxTitleLength},
	}
	for _, c := range cases {
		p := walk(t, c.schema, c.path)
		var got *int64
		switch c.field {
		case "maxLength":
			got = p.MaxLength
		case "maxItems":
			got = p.MaxItems
		case "maximum":
			if p.Maximum != nil {
				v := int64(*p.Maximum)
				got = &v
			}
		}
		if got == nil || *got != c.want {
			t.Errorf("%s %s = %v, want %d (the limit in crawler/runreport)", c.path, c.field, deref(got), c.want)
		}
	}
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// schemasOf returns the schema of each version of the CRD in file.
func schemasOf(t *testing.T, file string) map[string]*apiextensionsv1.JSONSchemaProps {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	out := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, v := range crd.Spec.Versions {
		out[v.Name] = v.Schema.OpenAPIV3Schema
	}
	return out
}

// walk follows a dotted path; "[]" steps into an array's items.
func walk(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, part := range strings.Split(path, ".") {
		name, items := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[name]
		if !ok {
			t.Fatalf("%s: no property %q", path, name)
		}
		s = &p
		if items {
			if s.Items == nil || s.Items.Schema == nil {
				t.Fatalf("%s: %q has no items", path, name)
			}
			s = s.Items.Schema
		}
	}
	return s
}
