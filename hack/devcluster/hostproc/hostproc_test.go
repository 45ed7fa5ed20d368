package hostproc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartFindStop(t *testing.T) {
	p := Proc{Dir: t.TempDir(), Name: "sleeper"}
	if err := p.Start([]string{"GREETING=hello"}, "sh", "-c", `echo "$GREETING"; exec sleep 60`); err != nil {
		t.Fatal(err)
	}
	pid, ok := p.PID()
	if !ok {
		t.Fatal("the started process is not found through its pid file")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(p.LogFile()); string(b) == "hello\n" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("log %q, want the process's output", b)
		}
	}
	if err := p.Start(nil, "sleep", "60"); err == nil {
		t.Error("a second copy was started")
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.PID(); ok {
		t.Error("still found after Stop")
	}
	// Gone, or a zombie until the reaper goroutine collects it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z") || strings.Contains(string(b), ") X") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs: %s", pid, b)
		}
	}
	if _, err := os.Stat(p.PIDFile()); !os.IsNotExist(err) {
		t.Errorf("pid file left: %v", err)
	}
}

// A pid file naming a process this package did not start (a recycled pid)
// must not make Stop kill a stranger.
func TestPIDIgnoresStrangers(t *testing.T) {
	p := Proc{Dir: t.TempDir(), Name: "kube-proxy"}
	if _, ok := p.PID(); ok {
		t.Fatal("found a process without a pid file")
	}
	for _, pid := range []int{1, os.Getpid()} {
		if err := os.WriteFile(p.PIDFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := p.PID(); ok {
			t.Errorf("pid %d taken for ours (%d)", pid, got)
		}
	}
	if err := p.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.PIDFile()); !os.IsNotExist(err) {
		t.Errorf("stale pid file left: %v", err)
	}
}

// Stop escalates to SIGKILL when the process ignores SIGTERM.
func TestStopKillsWhatIgnoresTerm(t *testing.T) {
	p := Proc{Dir: t.TempDir(), Name: "stubborn"}
	if err := p.Start(nil, "sh", "-c", `trap "" TERM; while :; do sleep 0.1; done`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := p.Stop(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.PID(); ok {
		t.Error("still running")
	}
}

// A process that exits before it is healthy fails the wait at once, with
// its last words, instead of after the timeout.
func TestWaitHealthyNoticesAnExit(t *testing.T) {
	p := Proc{Dir: t.TempDir(), Name: "quitter"}
	if err := p.Start(nil, "sh", "-c", "echo invalid dir path; exit 1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := p.WaitHealthy(t.Context(), "http://127.0.0.1:1/healthz", time.Minute)
	if err == nil || !strings.Contains(err.Error(), "invalid dir path") {
		t.Fatalf("err = %v, want the process's exit and log", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %s to notice the exit", time.Since(start))
	}
}

// How a process ended is kept while its starter runs: a start that fails
// at once can say why.
func TestExitStatus(t *testing.T) {
	p := Proc{Dir: t.TempDir(), Name: "quits"}
	if err := p.Start(nil, "sh", "-c", "kill -9 $$"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.ExitStatus() == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := p.ExitStatus(); got != "signal: killed" {
		t.Errorf("ExitStatus = %q, want signal: killed", got)
	}
	if _, ok := p.PID(); ok {
		t.Error("an ended process counts as running")
	}
	// A new start forgets the old end.
	if err := p.Start(nil, "sleep", "5"); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	if got := p.ExitStatus(); got != "" {
		t.Errorf("ExitStatus of a running process = %q", got)
	}
}

// running: a live process is, a zombie nobody reaped yet and a pid that is
// gone are not.
func TestRunning(t *testing.T) {
	if !running(os.Getpid()) {
		t.Error("this test's own process is not running")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d (exited, not reaped) still counts as running", pid)
		}
	}
	_ = cmd.Wait()
	if running(pid) {
		t.Errorf("pid %d counts as running once reaped", pid)
	}
}
