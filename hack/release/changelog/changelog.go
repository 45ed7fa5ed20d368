// Package changelog reads CHANGELOG.md, the one record of the project's
// releases (Keep a Changelog): what each version brings and, once a
// version is released, the commit it was built from. make release refuses
// a version without an entry and rebuilds a released one from its commit;
// the upgrade test installs the release before the newest from its
// recorded commit.
package changelog

import (
	"fmt"
	"regexp"
	"strings"
)

// Entry is one version's section.
type Entry struct {
	// Version is the section's name without a leading v (X.Y.Z).
	Version string
	// Commit is the full hash after "Built from commit": set once the
	// version is released, empty while it is being made.
	Commit string
	// Items are the section's "- " lines: what the release brings.
	Items int
}

// Tag is the version as the image and the Git tag carry it: vX.Y.Z.
func (e Entry) Tag() string { return "v" + e.Version }

var commitRE = regexp.MustCompile(`^Built from commit ([0-9a-f]{40})\b`)

// Entries are the versions' sections, newest first as the file lists
// them; [Unreleased] is not a version.
func Entries(changelog string) []Entry {
	var out []Entry
	for _, l := range strings.Split(changelog, "\n") {
		if strings.HasPrefix(l, "## ") {
			name, _, ok := strings.Cut(strings.TrimPrefix(l, "## ["), "]")
			if !strings.HasPrefix(l, "## [") || !ok || strings.EqualFold(name, "Unreleased") {
				// A section that is no version ends the one before it.
				out = append(out, Entry{})
				continue
			}
			out = append(out, Entry{Version: strings.TrimPrefix(name, "v")})
			continue
		}
		if len(out) == 0 || out[len(out)-1].Version == "" {
			continue
		}
		e := &out[len(out)-1]
		if m := commitRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil && e.Commit == "" {
			e.Commit = m[1]
		}
		if strings.HasPrefix(strings.TrimSpace(l), "- ") {
			e.Items++
		}
	}
	versions := out[:0]
	for _, e := range out {
		if e.Version != "" {
			versions = append(versions, e)
		}
	}
	return versions
}

// Find is version's entry (vX.Y.Z or X.Y.Z); it must list what the
// release brings.
func Find(changelog, version string) (Entry, error) {
	bare := strings.TrimPrefix(version, "v")
	for _, e := range Entries(changelog) {
		if e.Version != bare {
			continue
		}
		if e.Items == 0 {
			return e, fmt.Errorf("CHANGELOG.md: the section for %s lists nothing: add `- ` lines under it saying what the release brings", version)
		}
		return e, nil
	}
	return Entry{}, fmt.Errorf("CHANGELOG.md has no entry for %s: add a section `## [%s] - YYYY-MM-DD` (Keep a Changelog) listing what the release brings, commit it, then run make release again", version, bare)
}

// Previous is the newest released version older than version: the one an
// upgrade to version starts from. It must record its commit, or it cannot
// be rebuilt.
func Previous(changelog, version string) (Entry, error) {
	bare := strings.TrimPrefix(version, "v")
	entries := Entries(changelog)
	for i, e := range entries {
		if e.Version != bare {
			continue
		}
		if i+1 == len(entries) {
			return Entry{}, fmt.Errorf("CHANGELOG.md lists no version before %s", version)
		}
		prev := entries[i+1]
		if prev.Commit == "" {
			return prev, fmt.Errorf("CHANGELOG.md: %s, the release before %s, records no commit: add the line `Built from commit <full hash>` under its heading", prev.Tag(), version)
		}
		return prev, nil
	}
	return Entry{}, fmt.Errorf("CHANGELOG.md has no entry for %s", version)
}
