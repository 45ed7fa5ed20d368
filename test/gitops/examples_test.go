// Package gitops tests the GitOps examples in docs/gitops for what they mean:
// the API server accepts every document (with the Flux and Argo CD CRDs
// vendored in testdata/crds), every reference between documents resolves,
// and the Argo CD health checks give the right health for each status of a
// CrawlTarget or Exclusion when run by a Lua interpreter as Argo CD runs them.
package gitops

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

var (
	repoRoot    = filepath.Join("..", "..")
	examplesDir = filepath.Join(repoRoot, "docs", "gitops")
	brokenDir   = filepath.Join("testdata", "broken")
)

// doc is one YAML document of an example file.
type doc struct {
	file string // base name of the example file
	obj  *unstructured.Unstructured
}

func (d doc) String() string {
	s := d.obj.GetKind() + " "
	if ns := d.obj.GetNamespace(); ns != "" {
		s += ns + "/"
	}
	return s + d.obj.GetName() + " (" + d.file + ")"
}

// exampleSet is the documents of a set of example files, and where each file
// says it goes in the repository Flux syncs ("# Goes to: ./dir/ ...").
type exampleSet struct {
	docs   []doc
	goesTo map[string]string // file -> directory in the Flux repository, "./infrastructure/x"
}

var goesToLine = regexp.MustCompile(`^# Goes to: (\./\S+?)/? in the repository Flux syncs`)

// loadExamples reads every *.yaml file of dir.
func loadExamples(t *testing.T, dir string) exampleSet {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no *.yaml in %s", dir)
	}
	sort.Strings(files)
	set := exampleSet{goesTo: map[string]string{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			if m := goesToLine.FindStringSubmatch(sc.Text()); m != nil {
				set.goesTo[name] = m[1]
			}
		}
		objs, err := decodeAll(string(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range objs {
			set.docs = append(set.docs, doc{file: name, obj: o})
		}
	}
	return set
}

// decodeAll decodes a multi-document YAML stream, skipping empty documents.
func decodeAll(manifest string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj.Object) == 0 {
			continue
		}
		out = append(out, obj)
	}
}

// groups splits the examples by tool, the file name's first word: flux-*.yaml, argocd-*.yaml.
func (s exampleSet) groups() map[string]exampleSet {
	out := map[string]exampleSet{}
	for _, d := range s.docs {
		tool, _, _ := strings.Cut(d.file, "-")
		g, ok := out[tool]
		if !ok {
			g = exampleSet{goesTo: map[string]string{}}
		}
		g.docs = append(g.docs, d)
		if to, ok := s.goesTo[d.file]; ok {
			g.goesTo[d.file] = to
		}
		out[tool] = g
	}
	return out
}

func (s exampleSet) find(kind, namespace, name string) *doc {
	for i := range s.docs {
		o := s.docs[i].obj
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return &s.docs[i]
		}
	}
	return nil
}

func (s exampleSet) ofKind(kind string) []doc {
	var out []doc
	for _, d := range s.docs {
		if d.obj.GetKind() == kind {
			out = append(out, d)
		}
	}
	return out
}

// The examples are the files the README lists, and each file has documents.
func TestExamplesAreListedAndParse(t *testing.T) {
	examples := loadExamples(t, examplesDir)
	readme, err := os.ReadFile(filepath.Join(examplesDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, d := range examples.docs {
		files[d.file] = true
		if d.obj.GetAPIVersion() == "" || d.obj.GetKind() == "" || d.obj.GetName() == "" {
			t.Errorf("%s: a document without apiVersion, kind or name", d)
		}
	}
	for f := range files {
		if !strings.Contains(string(readme), "("+f+")") {
			t.Errorf("docs/gitops/README.md does not link %s", f)
		}
	}
	for _, want := range []string{"HelmRelease", "Kustomization", "GitRepository", "Application", "ConfigMap", "Namespace"} {
		if len(examples.ofKind(want)) == 0 {
			t.Errorf("the examples have no %s", want)
		}
	}
}

// The vendored CRDs are the files testdata/README.md lists, unmodified.
func TestVendoredCRDs(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("testdata", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 6 || !strings.HasSuffix(strings.Trim(strings.TrimSpace(cells[1]), "`"), ".yaml") {
			continue
		}
		listed[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.Trim(strings.TrimSpace(cells[4]), "`")
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "crds", "*"))
	if len(files) == 0 || len(files) != len(listed) {
		t.Fatalf("testdata/crds has %d files, testdata/README.md lists %d", len(files), len(listed))
	}
	groups := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got, want := hex.EncodeToString(sum[:]), listed[filepath.Base(f)]; got != want {
			t.Errorf("%s: sha256 %s, testdata/README.md says %q", f, got, want)
		}
		objs, err := decodeAll(string(b))
		if err != nil || len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
			t.Errorf("%s: not one CustomResourceDefinition (%v)", f, err)
			continue
		}
		groups[str(objs[0].Object, "spec", "group")] = true
	}
	for _, g := range []string{"helm.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io", "argoproj.io"} {
		if !groups[g] {
			t.Errorf("no CRD of %s in testdata/crds", g)
		}
	}
}
