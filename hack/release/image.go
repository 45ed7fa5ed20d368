package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// platformImage builds the operator image for linux/arch with hack/image
// (so the release has exactly the layout `make image` gives, read from the
// Dockerfile) and returns it with OCI media types.
//
// The build is reproducible: -trimpath keeps the checkout's path out of
// the binaries, SOURCE_DATE_EPOCH (the commit's time) is every time in the
// image, and hack/image writes its layers' tar entries in a fixed order
// with fixed owners and modes.
//
// hack/image is this checkout's (root), the sources are src's: an older
// release is rebuilt from its commit by today's builder.
func platformImage(ctx context.Context, root, src, tmp, arch, ref string, epoch int64) (v1.Image, error) {
	file := filepath.Join(tmp, "image-"+arch+".tar")
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/image", "--root", src, "--arch", arch, "--tag", ref, "--out", file)
	cmd.Dir = root
	// GOFLAGS is replaced, not added to: a caller's -race or -tags are for
	// tests, not for the binaries a release ships.
	cmd.Env = append(os.Environ(), "GOFLAGS=-trimpath", fmt.Sprintf("SOURCE_DATE_EPOCH=%d", epoch))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go run ./hack/image --arch %s: %w\n%s", arch, err, out)
	}
	docker, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		return nil, err
	}
	return asOCI(docker)
}

// asOCI gives an image OCI media types (manifest, config, layers) with the
// same config and layer blobs: a docker-archive tarball reads back with
// Docker's, and an OCI index should hold OCI manifests.
func asOCI(img v1.Image) (v1.Image, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	out := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, l := range layers {
		if out, err = mutate.Append(out, mutate.Addendum{Layer: l, MediaType: types.OCILayer}); err != nil {
			return nil, err
		}
	}
	// The original config, whole: Append adds a history entry per layer.
	return mutate.ConfigFile(out, cf)
}

// extractExecutables writes the image's executable regular files into
// dir, named by their base name, and returns their paths: the binaries an
// SBOM describes, taken from the image itself.
func extractExecutables(img v1.Image, dir string) ([]string, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		files, err := extractLayer(rc, dir)
		rc.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	if len(out) == 0 {
		return nil, errors.New("the image has no executable files")
	}
	return out, nil
}

func extractLayer(r io.Reader, dir string) ([]string, error) {
	var out []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
			continue
		}
		name := path.Base(h.Name)
		if strings.HasPrefix(name, ".") {
			continue
		}
		file := filepath.Join(dir, name)
		f, err := os.OpenFile(file, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		out = append(out, file)
	}
}

// imageIndex puts the platform images into one OCI image index, with the
// OCI annotations that say which release and commit it is.
func imageIndex(images map[string]v1.Image, arches []string, annotations map[string]string) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, arch := range arches {
		adds = append(adds, mutate.IndexAddendum{
			Add:        images[arch],
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	out, ok := mutate.Annotations(idx, annotations).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("annotating the index did not give an index")
	}
	return out, nil
}
