package hostchange

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupMounts are the cgroup hierarchies of this machine: each v1
// controller's mount and the v2 (unified) one.
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		// "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS"
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		fields, typ := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(typ) == 0 || (typ[0] != "cgroup" && typ[0] != "cgroup2") {
			continue
		}
		if !slices.Contains(out, fields[4]) {
			out = append(out, fields[4])
		}
	}
	return out, s.Err()
}

// makeCgroup makes the cgroup name (such as /crawl-realnode-1) in every
// hierarchy. A v1 cpuset cgroup starts with no CPUs and no memory nodes,
// where no task may run: it gets its parent's, as a kubelet's root cgroup
// made by systemd would have.
func makeCgroup(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
			if err != nil {
				continue // not a cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
			}
		}
	}
	return nil
}

// walkCgroup calls f with each directory of the cgroup name and its
// children, in every hierarchy.
func walkCgroup(name string, f func(dir string)) {
	mounts, _ := cgroupMounts()
	for _, m := range mounts {
		_ = filepath.WalkDir(filepath.Join(m, name), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				f(p)
			}
			return nil
		})
	}
}

// CgroupProcs lists every process in the cgroup name or below it, in any
// hierarchy.
func CgroupProcs(name string) []int {
	var pids []int
	walkCgroup(name, func(dir string) {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	})
	slices.Sort(pids)
	return pids
}

// CgroupDirs lists the directories of the cgroup name and its children in
// every hierarchy, deepest first.
func CgroupDirs(name string) []string {
	var dirs []string
	walkCgroup(name, func(dir string) { dirs = append(dirs, dir) })
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// RemoveCgroup kills whatever still runs in the cgroup name (a node's
// containers, when its kubelet could not stop them) and removes it with
// its children, deepest first. A cgroup goes only once its last task has
// been reaped, so it retries for a few seconds.
func RemoveCgroup(name string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, pid := range CgroupProcs(name) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var errs []error
		for _, d := range CgroupDirs(name) {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			}
		}
		if len(errs) == 0 || time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
