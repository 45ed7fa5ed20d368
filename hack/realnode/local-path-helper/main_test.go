package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreateAndDelete(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "pvc-1_ns_data")
	if err := run(dir, "Filesystem", "create"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 {
		t.Fatalf("mode = %v, want 0777 whatever the umask", fi.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(dir, "index.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, "Filesystem", "delete"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("volume still there after delete: %v", err)
	}
	if _, err := os.Stat(base); err != nil {
		t.Fatalf("the base directory went with the volume: %v", err)
	}
}

func TestRefuses(t *testing.T) {
	for _, c := range []struct{ dir, mode, action, err string }{
		{"relative/dir", "Filesystem", "create", "absolute"},
		{"/base/../etc", "Filesystem", "delete", "clean"},
		{"/etc", "Filesystem", "delete", "inside"},
		{"/", "Filesystem", "delete", "inside"},
		{"/base/vol/", "Filesystem", "delete", "clean"},
		{"/base/vol", "Block", "create", "only Filesystem"},
		{"/base/vol", "Filesystem", "chmod", "create or delete"},
	} {
		err := run(c.dir, c.mode, c.action)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("run(%q, %q, %q) = %v, want %q", c.dir, c.mode, c.action, err, c.err)
		}
	}
}
