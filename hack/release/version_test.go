package main

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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

func TestPinDigest(t *testing.T) {
	d, err := v1.NewHash("sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	values := "image:\n  repository: r\n  tag: \"\"\n  digest: \"\"\n  pullPolicy: IfNotPresent\n"
	got, err := pinDigest([]byte(values), d)
	if want := strings.Replace(values, `digest: ""`, `digest: "`+d.String()+`"`, 1); err != nil || string(got) != want {
		t.Errorf("pinDigest = %q, %v; want %q", got, err, want)
	}
	// An older chart, from before image.digest, installs by tag.
	old := "image:\n  repository: r\n  tag: \"\"\n"
	if got, err := pinDigest([]byte(old), d); err != nil || string(got) != old {
		t.Errorf("pinDigest of a chart without image.digest = %q, %v; want it unchanged", got, err)
	}
	if _, err := pinDigest([]byte(values+"other:\n  digest: \"\"\n"), d); err == nil {
		t.Error("pinDigest chose one of two digest lines")
	}
}
