package main

import (
	"strings"
	"testing"
)

func TestChartVersion(t *testing.T) {
	for _, tc := range []struct {
		version, want, err string
	}{
		{"v0.2.0", "0.2.0", ""},
		{"v1.10.3", "1.10.3", ""},
		{"0.2.0", "", "vX.Y.Z"},
		{"v0.2", "", "vX.Y.Z"},
		{"v0.2.0-rc.1", "", "pre-release"},
		{"v01.2.0", "", "vX.Y.Z"},
		{"", "", "vX.Y.Z"},
	} {
		got, err := chartVersion(tc.version)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("chartVersion(%q) = %q, %v; want %q, error with %q", tc.version, got, err, tc.want, tc.err)
		}
	}
}

func TestChangelogEntry(t *testing.T) {
	const log = "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-12-05\n\n### Added\n\n- Releases.\n\n## [v0.1.0] - 2026-01-01\n\n## [0.0.1]\n- First.\n"
	for _, tc := range []struct {
		version, err string
	}{
		{"v0.2.0", ""},
		{"v0.0.1", ""},
		{"v0.1.0", "lists nothing"},
		{"v0.3.0", "no entry for v0.3.0: add a section `## [0.3.0]"},
		{"v0.2.1", "no entry"},
	} {
		err := changelogEntry(log, tc.version)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("changelogEntry(%q) = %v, want error with %q", tc.version, err, tc.err)
		}
	}
}

func TestPlainHTTP(t *testing.T) {
	for _, tc := range []struct {
		registry string
		insecure bool
		want     bool
	}{
		{"127.0.0.1:5000", false, true},
		{"localhost:5000", false, true},
		{"[::1]:5000", false, true},
		{"registry.example.com", false, false},
		{"registry.example.com:5000", true, true},
		{"10.0.0.1:5000", false, false},
	} {
		if got := plainHTTP(tc.registry, tc.insecure); got != tc.want {
			t.Errorf("plainHTTP(%q, %v) = %v, want %v", tc.registry, tc.insecure, got, tc.want)
		}
	}
}
