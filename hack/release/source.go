package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lohisoft/crawl-operator/hack/release/changelog"
)

// source is the tree a release is built from: the working tree for a
// version being made, or, for a version whose CHANGELOG entry records the
// commit it was built from, a checkout of that commit, so that a released
// version is rebuilt as it was (the upgrade test installs the previous
// release this way).
func source(ctx context.Context, o Options, e changelog.Entry, tmp string) (string, error) {
	if e.Commit == "" {
		return o.Root, nil
	}
	dir := filepath.Join(tmp, "src")
	for _, args := range [][]string{
		// --shared borrows the checkout's objects: nothing is copied, and
		// nothing is fetched.
		{"clone", "--quiet", "--shared", "--no-checkout", o.Root, dir},
		{"-C", dir, "checkout", "--quiet", "--detach", e.Commit},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			if strings.Contains(args[len(args)-1], e.Commit) {
				return "", fmt.Errorf("%s was built from commit %s (CHANGELOG.md), which this clone lacks (a shallow clone? git fetch --unshallow): %w: %s", e.Tag(), e.Commit, err, out)
			}
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	fmt.Fprintf(o.Log, "%s is released: building it from its commit %s\n", e.Tag(), e.Commit[:12])
	return dir, nil
}
