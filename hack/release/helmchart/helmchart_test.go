package helmchart

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/lohisoft/crawl-operator/hack/devcluster/registry"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

const root = "../../.."

// The repository's chart, packaged with another version and pushed to a
// real registry: the digest Push returns is the manifest the registry
// serves for that tag, and the package is where Package says.
func TestPackageAndPush(t *testing.T) {
	h := Helm{Bin: testutil.BuiltTool(t, root, "bin/helm", "helm-bin"), Home: t.TempDir()}
	ctx := context.Background()
	dest := t.TempDir()
	tgz, err := h.Package(ctx, filepath.Join(root, "charts", "crawl-operator"), "7.8.9", "v7.8.9", dest)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dest, "crawl-operator-7.8.9.tgz"); tgz != want {
		t.Errorf("Package returned %s, want %s", tgz, want)
	}
	if _, err := os.Stat(tgz); err != nil {
		t.Fatal(err)
	}

	reg, err := registry.Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	digest, err := h.Push(ctx, tgz, "oci://"+reg.Addr+"/charts", true)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg.Addr+"/charts/crawl-operator:7.8.9", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != digest {
		t.Errorf("Push returned %s, the registry serves %s", digest, desc.Digest)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		h    Helm
		want string
	}{
		{"no home", Helm{Bin: "/bin/true"}, "no Home"},
		{"no helm", Helm{Bin: filepath.Join(t.TempDir(), "helm"), Home: t.TempDir()}, "make helm-bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.h.Package(ctx, ".", "", "", t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Package: %v, want an error saying %q", err, tc.want)
			}
			if _, err := tc.h.Push(ctx, "x.tgz", "oci://127.0.0.1:1/charts", true); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Push: %v, want an error saying %q", err, tc.want)
			}
		})
	}
	// A chart helm cannot read: its words reach the caller.
	if bin := filepath.Join(root, "bin", "helm"); fileExists(bin) {
		h := Helm{Bin: bin, Home: t.TempDir()}
		if _, err := h.Package(ctx, t.TempDir(), "", "", t.TempDir()); err == nil || !strings.Contains(err.Error(), "Chart.yaml") {
			t.Errorf("Package of an empty directory: %v, want helm's error naming Chart.yaml", err)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
