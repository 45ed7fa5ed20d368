// Package hostproc runs the dev cluster's programs that live on the
// machine rather than in Pods (kube-proxy, Flux's controllers): each is
// started in its own session so that it outlives the command that started
// it, and is found again, for stopping, through a pid file in its state
// directory.
package hostproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// markerEnv is set in every process started here to the process's pid file.
// A pid file can outlive its process and the pid be reused by a stranger;
// only a process whose environment names the same pid file is ours.
const markerEnv = "DEVCLUSTER_PROCESS"

// Proc is one named program of a state directory: its pid file is
// Dir/Name.pid and its log Dir/Name.log.
type Proc struct {
	Dir  string
	Name string
}

// PIDFile is where the process's pid is kept.
func (p Proc) PIDFile() string { return filepath.Join(p.Dir, p.Name+".pid") }

// LogFile receives the process's stdout and stderr.
func (p Proc) LogFile() string { return filepath.Join(p.Dir, p.Name+".log") }

// Start runs bin with args and the extra environment variables, appending
// its output to LogFile. It refuses to start a second copy.
func (p Proc) Start(env []string, bin string, args ...string) error {
	if pid, ok := p.PID(); ok {
		return fmt.Errorf("%s already runs here (pid %d): stop it first", p.Name, pid)
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(p.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), env...), markerEnv+"="+p.PIDFile())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	if err := os.WriteFile(p.PIDFile(), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		return err
	}
	_ = os.Remove(p.exitFile())
	// Reap it if it exits while this process still runs, so that PID does
	// not see a zombie as alive, and keep how it ended for ExitStatus.
	go func() {
		if st, err := cmd.Process.Wait(); err == nil {
			_ = os.WriteFile(p.exitFile(), []byte(st.String()+"\n"), 0o644)
		}
	}()
	return nil
}

func (p Proc) exitFile() string { return filepath.Join(p.Dir, p.Name+".exit") }

// ExitStatus says how the process ended ("exit status 1", "signal:
// killed"), when it ended while the program that started it still ran;
// "" otherwise.
func (p Proc) ExitStatus() string {
	b, _ := os.ReadFile(p.exitFile())
	return strings.TrimSpace(string(b))
}

// PID is the running process this Proc started, if any.
func (p Proc) PID() (int, bool) {
	b, err := os.ReadFile(p.PIDFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	environ, err := readEnviron(pid)
	if err != nil {
		return 0, false
	}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if string(kv) == markerEnv+"="+p.PIDFile() {
			return pid, true
		}
	}
	return 0, false
}

// Stop ends the process (SIGTERM, then SIGKILL after grace) and removes
// its pid file. A process that is not running is not an error.
func (p Proc) Stop(grace time.Duration) error {
	pid, ok := p.PID()
	if !ok {
		if err := os.Remove(p.PIDFile()); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	killed := false
	for {
		// Gone, not only unrecognisable: an exiting process loses its
		// environment before its files, so its sockets can outlive PID.
		if _, ok := p.PID(); !ok && !running(pid) {
			break
		}
		if time.Now().After(deadline) {
			if killed {
				return fmt.Errorf("%s (pid %d) survived SIGKILL", p.Name, pid)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed, deadline = true, time.Now().Add(5*time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return os.Remove(p.PIDFile())
}

// running says whether pid is a process that has not finished exiting. A
// zombie leader is not enough: in a multi-threaded program (every Go one)
// the leader can be a zombie while its other threads still exit, holding
// the process's files, its listening sockets among them.
func running(pid int) bool {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	zombie, threads := false, 0
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			zombie = strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X")
		case "Threads":
			threads, _ = strconv.Atoi(v)
		}
	}
	return !zombie || threads > 1
}

// FreePorts returns n loopback ports free at the time of the call, for a
// process's listeners.
func FreePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// WaitHealthy polls the process's health URL until it answers 200, and
// fails at once, with the end of its log, when the process has exited.
func (p Proc) WaitHealthy(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "no answer"
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if _, ok := p.PID(); !ok {
			return fmt.Errorf("%s exited; the end of %s:\n%s", p.Name, p.LogFile(), Tail(p.LogFile(), 2000))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy after %s: %s (log: %s)", p.Name, timeout, last, p.LogFile())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// readEnviron reads a process's environment. While a process execs (a
// shell that execs its command, a program just started), the kernel shows
// an empty one for a moment; that is read again rather than taken as a
// stranger's.
func readEnviron(pid int) ([]byte, error) {
	for range 100 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || len(b) > 0 {
			return b, err
		}
		if !running(pid) {
			return nil, errors.New("no process")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil, errors.New("no environment")
}

// Tail is the last n bytes of a file, for an error message.
func Tail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}
