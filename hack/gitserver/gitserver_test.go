package gitserver

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// A real git client clones over smart HTTP, sees the next commit (a file
// changed, one deleted) on fetch, and cannot push.
func TestCloneFetchAndNoPush(t *testing.T) {
	s, err := Start(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	work := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("site.yaml", "url: https://a.example/\n")
	write("old.yaml", "gone soon\n")
	url, err := s.Init("sites", work, "first")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/sites.git") {
		t.Fatalf("URL %s", url)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, "", "clone", "--quiet", url, clone)
	if b, _ := os.ReadFile(filepath.Join(clone, "site.yaml")); string(b) != "url: https://a.example/\n" {
		t.Fatalf("cloned site.yaml = %q", b)
	}

	write("site.yaml", "url: https://b.example/\n")
	if err := os.Remove(filepath.Join(work, "old.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit("sites", work, "second"); err != nil {
		t.Fatal(err)
	}
	git(t, clone, "pull", "--quiet", "--ff-only")
	if got := git(t, clone, "log", "--format=%s"); got != "second\nfirst" {
		t.Errorf("history %q", got)
	}
	if _, err := os.Stat(filepath.Join(clone, "old.yaml")); !os.IsNotExist(err) {
		t.Errorf("old.yaml still there after the commit that deleted it")
	}

	resp, err := http.Get(url + "/info/refs?service=git-receive-pack")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("push advertisement: %s, want 403", resp.Status)
	}
	cmd := exec.Command("git", "push", "--quiet", "origin", "HEAD:main")
	cmd.Dir = clone
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("push succeeded: %s", out)
	}
}
