// Package gitserver serves Git repositories over HTTP on this machine, for
// GitOps tests and demos: Flux's source-controller clones from it as it
// would from any Git host. It runs Git's own smart-HTTP server, `git
// http-backend`, as a CGI program (net/http/cgi), so the protocol is
// Git's, not a reimplementation; it serves the bare repositories in one
// directory, read-only, to anyone who can reach its address.
package gitserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Server serves the bare repositories under Root at URL.
type Server struct {
	// Root holds the repositories, each a bare repository NAME.git.
	Root string
	// URL is the base URL: a repository is URL/NAME.git.
	URL string

	srv *http.Server
	ln  net.Listener
}

// Start serves root on addr (host:port; port 0 picks a free one).
func Start(root, addr string) (*Server, error) {
	backend, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %w (is git installed?)", err)
	}
	handler := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(backend)), "git-http-backend"),
		Root: "/",
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			// Every repository under root, without a git-daemon-export-ok
			// file in each.
			"GIT_HTTP_EXPORT_ALL=1",
		},
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Root: root, URL: "http://" + ln.Addr().String(), ln: ln}
	s.srv = &http.Server{Handler: readOnly(handler), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// readOnly refuses pushes: the repositories change through their working
// copies on this machine, never over HTTP.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack" {
			http.Error(w, "this server is read-only", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Init makes the bare repository NAME.git under the server's root, with
// dir's files as its first commit on branch main, and returns its URL.
func (s *Server) Init(name, dir, message string) (string, error) {
	bare := filepath.Join(s.Root, name+".git")
	if err := run("", "git", "init", "--quiet", "--bare", "--initial-branch=main", bare); err != nil {
		return "", err
	}
	return s.URL + "/" + name + ".git", s.Commit(name, dir, message)
}

// Commit makes dir's files (all of them, deletions included) the next
// commit on main of NAME.git.
func (s *Server) Commit(name, dir, message string) error {
	bare := filepath.Join(s.Root, name+".git")
	env := []string{"GIT_DIR=" + bare, "GIT_WORK_TREE=" + dir, "GIT_INDEX_FILE=" + bare + "/index.crawl",
		"GIT_AUTHOR_NAME=crawl-operator tests", "GIT_AUTHOR_EMAIL=tests@crawl-operator.invalid",
		"GIT_COMMITTER_NAME=crawl-operator tests", "GIT_COMMITTER_EMAIL=tests@crawl-operator.invalid"}
	for _, args := range [][]string{
		{"add", "--all", "."},
		{"commit", "--quiet", "--allow-empty", "-m", message},
		{"update-server-info"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
