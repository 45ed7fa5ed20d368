package main

import (
	"encoding/json"
	"testing"
)

// TestImageSBOM merges two binaries' BOMs that share a module: the image
// is the subject, both binaries are applications it depends on, the shared
// module is listed once, and each dependency list is the union.
func TestImageSBOM(t *testing.T) {
	bom := func(app string, libs ...string) map[string]any {
		var comps, on []any
		for _, l := range libs {
			comps = append(comps, map[string]any{"bom-ref": l, "type": "library", "name": l, "version": "v1.0.0"})
			on = append(on, l)
		}
		deps := []any{map[string]any{"ref": app, "dependsOn": on}}
		for _, l := range libs {
			deps = append(deps, map[string]any{"ref": l})
		}
		return map[string]any{
			"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1.0,
			"metadata":   map[string]any{"component": map[string]any{"bom-ref": app, "type": "application"}},
			"components": comps, "dependencies": deps,
			"compositions": []any{map[string]any{"aggregate": "complete"}},
		}
	}
	image := map[string]any{"bom-ref": "img", "type": "container"}
	got, err := imageSBOM(image, []map[string]any{bom("manager", "b", "a"), bom("crawler", "a", "c")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"bomFormat":"CycloneDX",` +
		`"components":[{"bom-ref":"manager","type":"application"},{"bom-ref":"crawler","type":"application"},` +
		`{"bom-ref":"a","name":"a","type":"library","version":"v1.0.0"},{"bom-ref":"b","name":"b","type":"library","version":"v1.0.0"},` +
		`{"bom-ref":"c","name":"c","type":"library","version":"v1.0.0"}],` +
		`"dependencies":[{"ref":"a"},{"ref":"b"},{"ref":"c"},{"dependsOn":["a","c"],"ref":"crawler"},` +
		`{"dependsOn":["crawler","manager"],"ref":"img"},{"dependsOn":["a","b"],"ref":"manager"}],` +
		`"metadata":{"component":{"bom-ref":"img","type":"container"}},"specVersion":"1.6","version":1}`
	if string(b) != want {
		t.Errorf("merged BOM:\n%s\nwant\n%s", b, want)
	}
	if _, err := imageSBOM(image, nil); err == nil {
		t.Error("merging no BOMs: no error")
	}
}
