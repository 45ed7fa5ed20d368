// Package repo finds this repository's checkout, for the development
// commands (hack/) that are run from anywhere inside it or from its bin/.
package repo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// isRoot says whether dir holds this module's go.mod.
func isRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && strings.HasPrefix(string(b), "module github.com/lohisoft/crawl-operator\n")
}

// Root is the nearest directory at or above dir that holds this module's
// go.mod.
func Root(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if isRoot(d) {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no crawl-operator go.mod at or above %s", dir)
		}
	}
}

// RootOfWorkingDir is Root of the working directory.
func RootOfWorkingDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return Root(wd)
}

// RootOfCommand is the checkout a command was built into (its bin/), else
// the one around the working directory, else the working directory: a
// `go run` binary lives in a temporary directory.
func RootOfCommand() string {
	if exe, err := os.Executable(); err == nil {
		if r := filepath.Dir(filepath.Dir(exe)); isRoot(r) {
			return r
		}
	}
	wd, _ := os.Getwd()
	if r, err := Root(wd); err == nil {
		return r
	}
	return wd
}
