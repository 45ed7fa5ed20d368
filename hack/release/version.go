package main

import (
	"fmt"
	"net"
	"regexp"
	"strings"
)

var versionRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// chartVersion checks a release version (vX.Y.Z, the form of the Git tag
// and the image tag) and returns the chart's version (X.Y.Z: Helm wants
// SemVer without the v).
func chartVersion(version string) (string, error) {
	if !versionRE.MatchString(version) {
		return "", fmt.Errorf("VERSION=%q: a release version is vX.Y.Z (e.g. VERSION=v0.2.0), without pre-release or build suffixes", version)
	}
	return strings.TrimPrefix(version, "v"), nil
}

// changelogEntry checks that CHANGELOG.md has a section for the version,
// `## [X.Y.Z]` as Keep a Changelog writes it (or `## [vX.Y.Z]`), with at
// least one line under it: a release says what it brings.
func changelogEntry(changelog, version string) error {
	bare := strings.TrimPrefix(version, "v")
	lines := strings.Split(changelog, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "## [") {
			continue
		}
		name, _, ok := strings.Cut(strings.TrimPrefix(l, "## ["), "]")
		if !ok || (name != bare && name != version) {
			continue
		}
		for _, next := range lines[i+1:] {
			if strings.HasPrefix(next, "## ") {
				break
			}
			if strings.HasPrefix(strings.TrimSpace(next), "- ") {
				return nil
			}
		}
		return fmt.Errorf("CHANGELOG.md: the section for %s lists nothing: add `- ` lines under it saying what the release brings", version)
	}
	return fmt.Errorf("CHANGELOG.md has no entry for %s: add a section `## [%s] - YYYY-MM-DD` (Keep a Changelog) listing what the release brings, commit it, then run make release again", version, bare)
}

// plainHTTP says whether to talk to the registry over plain HTTP: when
// asked to, and always for a loopback address, where the dev cluster's and
// the tests' registries serve without TLS.
func plainHTTP(registry string, insecure bool) bool {
	if insecure {
		return true
	}
	host, _, err := net.SplitHostPort(registry)
	if err != nil {
		host = registry
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
