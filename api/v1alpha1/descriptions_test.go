package v1alpha1

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Every field of every CRD, status included, has a description, so
// `kubectl explain` says something useful for each. The descriptions come
// from the doc comments of the *_types.go files; this reads what `make
// manifests` generated from them.
func TestEveryCRDFieldHasADescription(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(crd.Spec.Versions) == 0 {
			t.Errorf("%s has no versions", f)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				t.Errorf("%s %s has no schema", crd.Name, v.Name)
				continue
			}
			root := v.Schema.OpenAPIV3Schema
			if root.Description == "" {
				t.Errorf("%s %s: the kind has no description", crd.Name, v.Name)
			}
			for _, path := range undocumented(root, "") {
				t.Errorf("%s %s: %s has no description: give its Go field a doc comment and run `make manifests`", crd.Name, v.Name, path)
			}
		}
	}
}

// undocumented lists the paths (spec.pages[].url) of the properties under
// s that have no description. The root's metadata is ObjectMeta, which the
// API server documents itself.
func undocumented(s *apiextensionsv1.JSONSchemaProps, path string) []string {
	var out []string
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := s.Properties[name]
		child := strings.TrimPrefix(path+"."+name, ".")
		if child == "metadata" {
			continue
		}
		if strings.TrimSpace(p.Description) == "" {
			out = append(out, child)
		}
		out = append(out, undocumented(&p, child)...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		out = append(out, undocumented(s.Items.Schema, path+"[]")...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out = append(out, undocumented(s.AdditionalProperties.Schema, path+"{}")...)
	}
	return out
}
