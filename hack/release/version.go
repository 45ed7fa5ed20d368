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
