// Package helmchart packages a chart directory and pushes it to an OCI
// registry with the helm binary, the way a user's helm would read it
// back. make release, the GitOps demo's unsigned working-copy chart and
// the e2e tests' tampered charts all go through it, so a chart is
// packaged and pushed one way only.
//
// It runs bin/helm rather than importing helm's Go packages: the CLI is
// what users and Flux's docs drive, and its module would pull the whole
// of helm's dependency tree into the project's go.mod.
package helmchart

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// Helm runs one helm binary with its caches, configuration and registry
// logins in Home, away from the user's own (~/.cache/helm and friends).
type Helm struct {
	Bin  string // bin/helm (make helm-bin builds it)
	Home string // a scratch directory; made on first use
}

// Package packages the chart in dir into dest as NAME-VERSION.tgz and
// returns that file's path. version and appVersion override Chart.yaml's
// when set.
func (h Helm) Package(ctx context.Context, dir, version, appVersion, dest string) (string, error) {
	args := []string{"package", dir, "--destination", dest}
	if version != "" {
		args = append(args, "--version", version)
	}
	if appVersion != "" {
		args = append(args, "--app-version", appVersion)
	}
	out, err := h.run(ctx, args...)
	if err != nil {
		return "", err
	}
	m := packagedPath.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("helm package said not where it saved the chart:\n%s", out)
	}
	return string(m[1]), nil
}

// Push pushes a packaged chart to dest (oci://HOST:PORT/charts) and
// returns the digest of the OCI manifest the registry stored. plainHTTP
// is for loopback registries without TLS.
func (h Helm) Push(ctx context.Context, tgz, dest string, plainHTTP bool) (string, error) {
	args := []string{"push", tgz, dest}
	if plainHTTP {
		args = append(args, "--plain-http")
	}
	out, err := h.run(ctx, args...)
	if err != nil {
		return "", err
	}
	m := pushedDigest.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("helm push said no digest:\n%s", out)
	}
	return string(m[1]), nil
}

var (
	packagedPath = regexp.MustCompile(`(?m)Successfully packaged chart and saved it to: (\S+)\s*$`)
	pushedDigest = regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)
)

// Env is the environment helm runs in: the caller's, with helm's homes
// moved under h.Home.
func (h Helm) Env() []string {
	return append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(h.Home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(h.Home, "config"),
		"HELM_DATA_HOME="+filepath.Join(h.Home, "data"),
	)
}

func (h Helm) run(ctx context.Context, args ...string) ([]byte, error) {
	if h.Home == "" {
		return nil, fmt.Errorf("helmchart: no Home: helm would use the user's own caches and logins")
	}
	if _, err := os.Stat(h.Bin); err != nil {
		return nil, fmt.Errorf("%w (make helm-bin builds bin/helm)", err)
	}
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	cmd.Env = h.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s", args[0], err, out)
	}
	return out, nil
}
