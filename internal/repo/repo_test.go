package repo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRoot(t *testing.T) {
	tmp := t.TempDir()
	mod := filepath.Join(tmp, "checkout")
	deep := filepath.Join(mod, "hack", "tools", "x")
	other := filepath.Join(tmp, "other")
	for _, d := range []string{deep, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(dir, content string) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(mod, "module github.com/lohisoft/crawl-operator\n\ngo 1.26\n")
	// A tools module inside the checkout is not the checkout.
	write(deep, "module github.com/lohisoft/crawl-operator/hack/tools/x\n")
	write(other, "module example.com/other\n")
	for _, tc := range []struct {
		from, want string
		ok         bool
	}{
		{mod, mod, true},
		{deep, mod, true},
		{filepath.Join(deep, "..", ".."), mod, true},
		{other, "", false},
	} {
		got, err := Root(filepath.Clean(tc.from))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Root(%s) = %q, %v; want %q (ok %v)", tc.from, got, err, tc.want, tc.ok)
		}
	}
}
