package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// binarySBOM runs cyclonedx-gomod on one binary: a CycloneDX BOM of the
// modules its build information records (what `go version -m` shows),
// the binary itself as the main component at the release's version. No
// serial number or timestamp, so a rebuild gives the same document.
func binarySBOM(ctx context.Context, tool, binary, version string) (map[string]any, error) {
	cmd := exec.CommandContext(ctx, tool, "bin", "-json", "-noserial", "-notimestamp", "-version", version, binary)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("cyclonedx-gomod bin %s: %w\n%s", filepath.Base(binary), err, stderr(err))
	}
	var bom map[string]any
	if err := json.Unmarshal(out, &bom); err != nil {
		return nil, fmt.Errorf("cyclonedx-gomod bin %s: %w", filepath.Base(binary), err)
	}
	return bom, nil
}

// imageSBOM merges the BOMs of an image's binaries into one BOM of the
// image: the image is the main component, each binary an application
// component it depends on, and their modules are listed once each. The
// BOMs' compositions are left out: they describe one binary each.
func imageSBOM(image map[string]any, boms []map[string]any) (map[string]any, error) {
	if len(boms) == 0 {
		return nil, fmt.Errorf("no BOMs to merge")
	}
	out := map[string]any{}
	for _, k := range []string{"$schema", "bomFormat", "specVersion", "version"} {
		if v, ok := boms[0][k]; ok {
			out[k] = v
		}
	}
	meta, _ := boms[0]["metadata"].(map[string]any)
	outMeta := map[string]any{"component": image}
	if tools, ok := meta["tools"]; ok {
		outMeta["tools"] = tools
	}
	out["metadata"] = outMeta
	imageRef, _ := image["bom-ref"].(string)
	var apps, libs []any
	seen := map[string]bool{}
	deps := map[string][]string{}
	for _, b := range boms {
		m, _ := b["metadata"].(map[string]any)
		app, ok := m["component"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a BOM without metadata.component")
		}
		ref, _ := app["bom-ref"].(string)
		apps = append(apps, app)
		deps[imageRef] = append(deps[imageRef], ref)
		list, _ := b["components"].([]any)
		for _, c := range list {
			cm, _ := c.(map[string]any)
			r, _ := cm["bom-ref"].(string)
			if !seen[r] {
				seen[r] = true
				libs = append(libs, c)
			}
		}
		dl, _ := b["dependencies"].([]any)
		for _, d := range dl {
			dm, _ := d.(map[string]any)
			r, _ := dm["ref"].(string)
			on, _ := dm["dependsOn"].([]any)
			for _, x := range on {
				if s, _ := x.(string); !slices.Contains(deps[r], s) {
					deps[r] = append(deps[r], s)
				}
			}
			if _, ok := deps[r]; !ok {
				deps[r] = nil
			}
		}
	}
	slices.SortFunc(libs, func(a, b any) int {
		return compareStrings(a.(map[string]any)["bom-ref"], b.(map[string]any)["bom-ref"])
	})
	out["components"] = append(apps, libs...)
	var depList []any
	for _, r := range slices.Sorted(maps.Keys(deps)) {
		d := map[string]any{"ref": r}
		if len(deps[r]) > 0 {
			on := slices.Clone(deps[r])
			slices.Sort(on)
			d["dependsOn"] = on
		}
		depList = append(depList, d)
	}
	out["dependencies"] = depList
	return out, nil
}

func compareStrings(a, b any) int {
	as, _ := a.(string)
	bs, _ := b.(string)
	return strings.Compare(as, bs)
}

func writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

// stderr is what a failed command said, when exec kept it.
func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
