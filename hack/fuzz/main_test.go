package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestDeadlineFlake(t *testing.T) {
	for _, tc := range []struct {
		name, output string
		want         bool
	}{
		{"the coordinator race", "fuzz: elapsed: 3s, execs: 81234 (27077/sec), new interesting: 0 (total: 12)\n--- FAIL: FuzzClean (3.01s)\n    context deadline exceeded\nFAIL\nexit status 1\nFAIL\tgithub.com/lohisoft/crawl-operator/crawler/urlnorm\t3.1s\n", true},
		{"a failing input", "--- FAIL: FuzzClean (0.20s)\n    --- FAIL: FuzzClean (0.00s)\n        clean_test.go:88: not idempotent\n\n    Failing input written to testdata/fuzz/FuzzClean/6b1d\n    To re-run:\n    go test -run=FuzzClean/6b1d\ncontext deadline exceeded\nFAIL\n", false},
		{"a failing input only", "    Failing input written to testdata/fuzz/FuzzClean/6b1d\ncontext deadline exceeded\n", false},
		{"a panic", "panic: runtime error: index out of range [3] with length 3\ncontext deadline exceeded\n", false},
		{"a test's message", "    robots_test.go:41: want allowed\ncontext deadline exceeded\n", false},
		{"no deadline", "# github.com/lohisoft/crawl-operator/crawler/urlnorm\n./clean.go:12:2: undefined: x\nFAIL\n", false},
		{"empty", "", false},
	} {
		if got := deadlineFlake([]byte(tc.output)); got != tc.want {
			t.Errorf("%s: deadlineFlake = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFuzzTargets(t *testing.T) {
	// "\n" escapes: a line of this file that began with the declaration
	// would be listed as a target of this package.
	src := "package x\n\nfunc FuzzA(f *testing.F) {}\n\n// func FuzzComment\nfunc Fuzz_b2(f *testing.F) {}\nfunc (s) FuzzMethod() {}\nfunc TestC(t *testing.T) {}\n  func FuzzIndented() {}\n"
	got := fuzzTargets("crawler/robots/fuzz_test.go", []byte(src))
	want := []target{{"./crawler/robots", "FuzzA"}, {"./crawler/robots", "Fuzz_b2"}}
	if !slices.Equal(got, want) {
		t.Errorf("fuzzTargets = %v, want %v", got, want)
	}
	if got := fuzzTargets("root_test.go", []byte("func FuzzRoot(f *testing.F) {}\n")); !slices.Equal(got, []target{{".", "FuzzRoot"}}) {
		t.Errorf("fuzzTargets at the root = %v", got)
	}
}

var errFailed = errors.New("exit status 1")

const raceOutput = "--- FAIL: FuzzX (3.01s)\n    context deadline exceeded\nFAIL\n"

func TestFuzzAll(t *testing.T) {
	type result struct {
		out string
		err error
	}
	pass := result{"ok\n", nil}
	race := result{raceOutput, errFailed}
	found := result{"    Failing input written to testdata/fuzz/FuzzX/1\nFAIL\n", errFailed}
	for _, tc := range []struct {
		name    string
		results map[string][]result // each run of a target takes the next
		wantOK  bool
		runs    map[string]int
		wantLog []string // lines the log must hold
	}{
		{
			name:    "all pass",
			results: map[string][]result{"FuzzA": {pass}, "FuzzB": {pass}},
			wantOK:  true,
			runs:    map[string]int{"FuzzA": 1, "FuzzB": 1},
			wantLog: []string{"fuzz ./p FuzzA (1s)", "fuzz ./p FuzzB (1s)"},
		},
		{
			name:    "the race once, then a pass",
			results: map[string][]result{"FuzzA": {race, pass}, "FuzzB": {pass}},
			wantOK:  true,
			runs:    map[string]int{"FuzzA": 2, "FuzzB": 1},
			wantLog: []string{"fuzz ./p FuzzA: 'context deadline exceeded' with no failing input (the Go coordinator race): once more"},
		},
		{
			name:    "the race twice is a flake",
			results: map[string][]result{"FuzzA": {race, race}, "FuzzB": {pass}},
			wantOK:  true,
			runs:    map[string]int{"FuzzA": 2, "FuzzB": 1},
			wantLog: []string{"fuzz ./p FuzzA: 'context deadline exceeded' twice with no failing input: the Go coordinator race, not a finding"},
		},
		{
			name:    "the race, then a finding",
			results: map[string][]result{"FuzzA": {race, found}, "FuzzB": {pass}},
			wantOK:  false,
			runs:    map[string]int{"FuzzA": 2, "FuzzB": 1},
			wantLog: []string{"    Failing input written to testdata/fuzz/FuzzX/1"},
		},
		{
			name:    "a finding is not retried, the others still run",
			results: map[string][]result{"FuzzA": {found}, "FuzzB": {pass}},
			wantOK:  false,
			runs:    map[string]int{"FuzzA": 1, "FuzzB": 1},
			wantLog: []string{"    Failing input written to testdata/fuzz/FuzzX/1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := map[string]int{}
			run := func(tg target, fuzztime string) ([]byte, error) {
				r := tc.results[tg.Name][runs[tg.Name]]
				runs[tg.Name]++
				return []byte(r.out), r.err
			}
			var log strings.Builder
			targets := []target{{"./p", "FuzzA"}, {"./p", "FuzzB"}}
			if ok := fuzzAll(targets, "1s", run, &log); ok != tc.wantOK {
				t.Errorf("fuzzAll = %v, want %v; log:\n%s", ok, tc.wantOK, log.String())
			}
			for name, n := range tc.runs {
				if runs[name] != n {
					t.Errorf("%s ran %d times, want %d", name, runs[name], n)
				}
			}
			lines := strings.Split(log.String(), "\n")
			for _, want := range tc.wantLog {
				if !slices.Contains(lines, want) {
					t.Errorf("log lacks %q:\n%s", want, log.String())
				}
			}
		})
	}
}

func TestInPackages(t *testing.T) {
	targets := []target{{".", "FuzzRoot"}, {"./crawler/robots", "FuzzMatch"}, {"./crawler/robots", "FuzzRobots"}, {"./crawler/robotsx", "FuzzX"}}
	for _, tc := range []struct {
		pkgs []string
		want []string
	}{
		{[]string{"./crawler/robots"}, []string{"FuzzMatch", "FuzzRobots"}},
		{[]string{"crawler/robots/"}, []string{"FuzzMatch", "FuzzRobots"}},
		{[]string{"."}, []string{"FuzzRoot"}},
		{[]string{"./crawler"}, nil},
	} {
		var got []string
		for _, tg := range inPackages(targets, tc.pkgs) {
			got = append(got, tg.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("inPackages(%q) = %q, want %q", tc.pkgs, got, tc.want)
		}
	}
}
