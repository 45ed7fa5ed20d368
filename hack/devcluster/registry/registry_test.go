package registry

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushPull pushes an image to each kind of storage and reads it back
// by tag with the digest it was pushed with.
func TestPushPull(t *testing.T) {
	for _, tc := range []struct {
		name string
		root string
	}{
		{"memory", ""},
		{"filesystem", t.TempDir()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(tc.root, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			img, err := random.Image(1024, 2)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := name.ParseReference(s.Addr+"/test/img:v1", name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(ref, img); err != nil {
				t.Fatal(err)
			}
			got, err := remote.Image(ref)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := img.Digest()
			if d, _ := got.Digest(); d != want {
				t.Fatalf("pulled %s, pushed %s", d, want)
			}
			var pulls int
			for _, r := range s.Requests() {
				if r.Method == "GET" && r.Path == "/v2/test/img/manifests/v1" && strings.HasPrefix(r.UserAgent, "go-containerregistry") {
					pulls++
				}
			}
			if pulls != 1 {
				t.Errorf("%d GETs of the manifest by tag recorded, want 1: %+v", pulls, s.Requests())
			}
		})
	}
}
