package changelog

import (
	"strings"
	"testing"
)

const sample = `# Changelog

Built from commit 0000000000000000000000000000000000000000 (the preamble is no version's)

## [Unreleased]

- Not released yet.

## [0.3.0] - 2026-12-06

### Added

- Something.

## [0.2.0] - 2026-12-05

Built from commit 1111111111111111111111111111111111111111.

- Releases.
- Built from commit 2222222222222222222222222222222222222222 (an item, not the record)

## [v0.1.0] - 2026-01-01

## Notes

Built from commit 3333333333333333333333333333333333333333

## [0.0.1]
- First.
Built from commit 4444444
`

func TestEntries(t *testing.T) {
	got := Entries(sample)
	want := []Entry{
		{Version: "0.3.0", Items: 1},
		{Version: "0.2.0", Commit: strings.Repeat("1", 40), Items: 2},
		{Version: "0.1.0"},
		{Version: "0.0.1", Items: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Entries = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		version, commit, err string
	}{
		{"v0.2.0", strings.Repeat("1", 40), ""},
		{"0.2.0", strings.Repeat("1", 40), ""},
		{"v0.3.0", "", ""},
		{"v0.0.1", "", ""},
		{"v0.1.0", "", "lists nothing"},
		{"v0.4.0", "", "no entry for v0.4.0: add a section `## [0.4.0]"},
		{"v0.2.1", "", "no entry"},
		{"vUnreleased", "", "no entry"},
	} {
		e, err := Find(sample, tc.version)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Find(%q) = %v, want error with %q", tc.version, err, tc.err)
		}
		if err == nil && e.Commit != tc.commit {
			t.Errorf("Find(%q).Commit = %q, want %q", tc.version, e.Commit, tc.commit)
		}
	}
}

func TestPrevious(t *testing.T) {
	for _, tc := range []struct {
		version, want, err string
	}{
		{"v0.3.0", "v0.2.0", ""},
		{"v0.2.0", "", "v0.1.0, the release before v0.2.0, records no commit"},
		{"v0.0.1", "", "no version before"},
		{"v9.9.9", "", "no entry"},
	} {
		e, err := Previous(sample, tc.version)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Previous(%q) = %v, want error with %q", tc.version, err, tc.err)
		}
		if err == nil && e.Tag() != tc.want {
			t.Errorf("Previous(%q) = %s, want %s", tc.version, e.Tag(), tc.want)
		}
	}
}
