package chart

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// leaves are the dotted paths of values.yaml's settings: every key whose
// value is not a map with keys of its own (lists and empty maps are
// leaves: --set replaces them whole).
func leaves(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			out = append(out, leaves(p, sub)...)
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// goFormatGarbage is what text/template and fmt write for a value that is
// not there: a flag such as --leader-elect=%!t(<nil>) that the manager
// refuses at start, long after helm said the install went well.
var goFormatGarbage = []string{"%!", "<nil>", "<no value>"}

// `--set KEY=null` deletes a chart default (Helm's documented way to
// remove one). For every setting of values.yaml, the chart either refuses
// that, naming the key, or renders without a value made of Go's
// formatting of nothing. Found: null replicas, leader election, log level
// and thresholds rendered such flags and the manager crash-looped.
func TestNullRemovesADefaultOrIsRefused(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartPath, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]any
	if err := yaml.Unmarshal(b, &defaults); err != nil {
		t.Fatal(err)
	}
	paths := leaves("", defaults)
	if len(paths) < 60 {
		t.Fatalf("found %d settings in values.yaml: the walk is wrong", len(paths))
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			objs, err := render(t, vals(p, nil))
			key := p[strings.LastIndex(p, ".")+1:]
			if err != nil {
				if msg := err.Error(); !strings.Contains(msg, p) && !strings.Contains(msg, "'"+key+"'") {
					t.Errorf("refused without naming %s: %s", p, msg)
				}
				return
			}
			for _, o := range objs {
				y, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				for _, g := range goFormatGarbage {
					if i := strings.Index(string(y), g); i >= 0 {
						line := string(y)[strings.LastIndex(string(y[:i]), "\n")+1:]
						if j := strings.IndexByte(line, '\n'); j >= 0 {
							line = line[:j]
						}
						t.Errorf("%s %s renders %q: refuse a null %s, or treat it as unset", o.GetKind(), o.GetName(), strings.TrimSpace(line), p)
					}
				}
			}
		})
	}
}
