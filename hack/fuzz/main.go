// Command fuzz runs every fuzz target of the module for FUZZTIME each
// (default 3s). `make test` runs it briefly so each target's generator and
// invariants run in CI; `make fuzz` runs it for minutes. `go test -fuzz`
// takes one target of one package at a time, hence the loop. New failures
// are written by Go to the package's testdata/fuzz/ folder: commit them,
// they become regression cases that every `go test` runs.
//
//	go run ./hack/fuzz [FUZZTIME [PACKAGE...]]
//
// The FUZZTIME environment variable, when set, wins over the argument.
// PACKAGE... (./crawler/robots) runs only those packages' targets.
//
// Go's fuzzing coordinator can fail a run with a bare "context deadline
// exceeded" when -fuzztime ends while a starved worker is mid-input (a race
// in the toolchain, golang/go#75804); it writes no failing input. Such a
// run is tried once more, and when it ends the same way again it is
// reported as a flake, not a finding. Every other failure, and any run that
// wrote a failing input, fails.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/lohisoft/crawl-operator/internal/repo"
)

func main() {
	fuzztime := os.Getenv("FUZZTIME")
	if fuzztime == "" && len(os.Args) > 1 {
		fuzztime = os.Args[1]
	}
	if fuzztime == "" {
		fuzztime = "3s"
	}
	root, err := repo.RootOfWorkingDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzz:", err)
		os.Exit(1)
	}
	targets, err := listTargets(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzz:", err)
		os.Exit(1)
	}
	if len(os.Args) > 2 {
		targets = inPackages(targets, os.Args[2:])
		if len(targets) == 0 {
			fmt.Fprintln(os.Stderr, "fuzz: no fuzz targets in", strings.Join(os.Args[2:], " "))
			os.Exit(1)
		}
	}
	if !fuzzAll(targets, fuzztime, goTestFuzz(root), os.Stdout) {
		fmt.Println("fuzzing found failures (see above)")
		os.Exit(1)
	}
}

// target is one fuzz target: Pkg is "./dir" (or ".") relative to the root.
type target struct{ Pkg, Name string }

var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)`)

// listTargets reads the tracked test files only: a file someone is still
// writing, untracked, is not fuzzed.
func listTargets(root string) ([]target, error) {
	cmd := exec.Command("git", "ls-files", "-z", "*_test.go")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var targets []target
	for file := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if file == "" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, err
		}
		targets = append(targets, fuzzTargets(file, src)...)
	}
	slices.SortFunc(targets, func(a, b target) int {
		return strings.Compare(a.Pkg+"\x00"+a.Name, b.Pkg+"\x00"+b.Name)
	})
	return targets, nil
}

// fuzzTargets are the Fuzz functions declared in the test file at path
// file (slash-separated, relative to the root), in its package.
func fuzzTargets(file string, src []byte) []target {
	pkg := "./" + path.Dir(file)
	if path.Dir(file) == "." {
		pkg = "."
	}
	var targets []target
	for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
		targets = append(targets, target{Pkg: pkg, Name: string(m[1])})
	}
	return targets
}

// inPackages keeps the targets of pkgs, named as `go test` takes them
// (./crawler/robots, crawler/robots/ alike).
func inPackages(targets []target, pkgs []string) []target {
	var kept []target
	for _, t := range targets {
		for _, p := range pkgs {
			if path.Clean(t.Pkg) == path.Clean(p) {
				kept = append(kept, t)
				break
			}
		}
	}
	return kept
}

// runFunc runs one target for fuzztime; its error is the run's failure,
// its output what the run printed. Tests pass a fake one.
type runFunc func(t target, fuzztime string) (output []byte, err error)

func goTestFuzz(root string) runFunc {
	return func(t target, fuzztime string) ([]byte, error) {
		cmd := exec.Command("go", "test", "-run", "^$", "-fuzz", "^"+t.Name+"$", "-fuzztime", fuzztime, t.Pkg)
		cmd.Dir = root
		return cmd.CombinedOutput()
	}
}

// fuzzAll runs each target, printing the output of the runs that fail;
// false when any failed other than by the coordinator race.
func fuzzAll(targets []target, fuzztime string, run runFunc, w io.Writer) bool {
	ok := true
	for _, t := range targets {
		for try := 1; try <= 2; try++ {
			fmt.Fprintf(w, "fuzz %s %s (%s)\n", t.Pkg, t.Name, fuzztime)
			out, err := run(t, fuzztime)
			if err == nil {
				break
			}
			w.Write(out)
			if !deadlineFlake(out) {
				ok = false
				break
			}
			if try == 2 {
				fmt.Fprintf(w, "fuzz %s %s: 'context deadline exceeded' twice with no failing input: the Go coordinator race, not a finding\n", t.Pkg, t.Name)
			} else {
				fmt.Fprintf(w, "fuzz %s %s: 'context deadline exceeded' with no failing input (the Go coordinator race): once more\n", t.Pkg, t.Name)
			}
		}
	}
	return ok
}

var finding = regexp.MustCompile(`Failing input written to|panic:|_test\.go:[0-9]+:`)

// deadlineFlake: the output of a failed run shows only the coordinator
// race of golang/go#75804, no failing input, panic or test failure.
func deadlineFlake(output []byte) bool {
	return bytes.Contains(output, []byte("context deadline exceeded")) && !finding.Match(output)
}
