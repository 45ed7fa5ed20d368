package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// The first command of the README on a fresh, busy machine: `make demo`
// runs `devcluster up`, which starts devcluster in the background
// and must wait for what matters (its ready file, Ready Nodes), not race
// on the command line of a process that has not exec'd yet. From a clean
// state, with CPU hogs on every core: up succeeds, the cluster is Ready and
// runs Pods, and down leaves nothing running.
//
// Under load the shell forked for devcluster execs it late (the old check
// lost that race in one or two starts of a hundred here); the test makes it late
// every time by starting devcluster through a script that waits a second
// and then execs it, so the same pid becomes devcluster, as with nohup.
func TestDevClusterUpUnderLoad(t *testing.T) {
	testenv.SetLogger()
	assets := testenv.MustAssets(t, repoRoot)
	dir := t.TempDir()
	devcluster := buildBinary(t, "hack/devcluster")
	crawler := buildBinary(t, "cmd/crawler")
	dev := filepath.Join(dir, "dev")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	script := devClusterScript(newDevCluster(dir, assets, devcluster), lateExec(t, devcluster, "1"), crawler)
	down := false
	t.Cleanup(func() {
		if !down {
			_, _ = script("down")
		}
		terminateMentioning(dir) // whatever a failed up or down left
	})

	stopHogs := startCPUHogs(t, 2*runtime.NumCPU())
	start := time.Now()
	out, err := script("up")
	upTime := time.Since(start)
	stopHogs()
	if err != nil {
		t.Fatalf("devcluster up under load: %v after %s\n%s", err, upTime.Round(100*time.Millisecond), out)
	}
	t.Logf("up in %s with %d CPU hogs", upTime.Round(100*time.Millisecond), 2*runtime.NumCPU())
	if !strings.Contains(out, "dev cluster ready: export KUBECONFIG="+kubeconfig) {
		t.Errorf("up did not say the cluster is ready:\n%s", out)
	}

	// The pid file and the ready file name the same live devcluster.
	pid := readPid(t, filepath.Join(dev, "devcluster.pid"))
	if ready := readPid(t, filepath.Join(dev, "devcluster.ready")); ready != pid {
		t.Errorf("ready file names pid %d, pid file %d", ready, pid)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != devcluster {
		t.Fatalf("pid %d runs %q (%v), want %s", pid, exe, err, devcluster)
	}

	// Ready: both egress Nodes, and the node agent runs what is bound to them.
	kc, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	ready := map[string]bool{}
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready[n.Name] = true
			}
		}
	}
	if len(nodes.Items) != 2 || !ready["egress-1"] || !ready["egress-2"] {
		t.Errorf("nodes after up: %d, Ready: %v", len(nodes.Items), ready)
	}
	site := startSite(t, "127.0.0.7", 1, 0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "first-crawl", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:      "egress-1",
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "crawler", Image: "crawler", Command: []string{"crawler"},
				Args: []string{"crawl", "--allow-private", "--delay=0s", site.url + "/"},
			}},
		},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, "crawler Pod Succeeded", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("phase %s", pod.Status.Phase)
		}
		return nil
	})

	// Everything the cluster runs descends from devcluster: etcd,
	// kube-apiserver, kube-scheduler, kube-controller-manager.
	tree := descendants(pid)
	var programs []string
	for _, p := range tree {
		programs = append(programs, filepath.Base(p.exe))
	}
	for _, want := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if !strings.Contains(strings.Join(programs, " "), want) {
			t.Errorf("%s is not among devcluster's processes %v", want, programs)
		}
	}

	start = time.Now()
	down = true
	if out, err := script("down"); err != nil {
		t.Fatalf("devcluster down: %v\n%s", err, out)
	}
	t.Logf("down in %s", time.Since(start).Round(100*time.Millisecond))
	for _, p := range append(tree, proc{pid: pid, start: startTime(pid), exe: devcluster}) {
		if p.start != "" && startTime(p.pid) == p.start {
			t.Errorf("%s (pid %d) still running after down", p.exe, p.pid)
		}
	}
	for _, f := range []string{filepath.Join(dev, "devcluster.pid"), filepath.Join(dev, "devcluster.ready"), filepath.Join(dev, "mode"), kubeconfig} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s left after down (%v)", f, err)
		}
	}
	if left := processesMentioning(dir); len(left) > 0 {
		t.Errorf("processes of this cluster left after down: %v", left)
	}
}

// devCluster runs `devcluster up` and `down` as `make dev-cluster` does,
// with the state, kubeconfig, binaries and nodes of a test's own.
type devCluster struct {
	bin    string   // the devcluster that runs up and down
	common []string // flags up and down share, so down finds what up made
	env    []string
}

func newDevCluster(dir, assets, devcluster string, extraEnv ...string) devCluster {
	var env []string
	for _, e := range os.Environ() {
		// envtest would prefer it to --bin-dir (make test exports it).
		if !strings.HasPrefix(e, "KUBEBUILDER_ASSETS=") {
			env = append(env, e)
		}
	}
	return devCluster{
		bin: devcluster,
		common: []string{
			"--dir", filepath.Join(dir, "dev"), "--kubeconfig", filepath.Join(dir, "kubeconfig"),
			"--bin-dir", assets, "--nodes-dir", filepath.Join(dir, "dev", "nodes"),
		},
		env: append(env, extraEnv...),
	}
}

// run runs `devcluster VERB` with the shared flags and extra ones.
func (d devCluster) run(timeout time.Duration, verb string, extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, append(append([]string{verb}, d.common...), extra...)...)
	cmd.Env = d.env
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// devClusterScript is up and down of stand-in nodes run by controlPlane (a
// devcluster, or a stand-in for one).
func devClusterScript(d devCluster, controlPlane, crawler string, extraUp ...string) func(verb string) (string, error) {
	return func(verb string) (string, error) {
		if verb == "up" {
			return d.run(5*time.Minute, "up", append([]string{"--control-plane-bin", controlPlane, "--crawler", crawler}, extraUp...)...)
		}
		return d.run(5*time.Minute, verb)
	}
}

// lateExec writes a script that sleeps, then execs binary with its
// arguments: the pid is a shell until then, as after a slow fork and exec.
func lateExec(t *testing.T, binary, sleep string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "late-devcluster")
	script := "#!/bin/sh\nsleep " + sleep + "\nexec " + binary + " \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// When devcluster dies or never becomes ready, up fails at once or at its
// timeout, says why with the end of the log, and leaves nothing running.
func TestDevClusterUpReportsFailures(t *testing.T) {
	devcluster := buildBinary(t, "hack/devcluster")
	t.Run("devcluster exits", func(t *testing.T) {
		dir := t.TempDir()
		// devcluster's temporary files go here, so the test sees what it
		// leaves in the machine's temporary directory.
		tmp := t.TempDir()
		// No control-plane binaries: devcluster fails to start etcd.
		script := devClusterScript(newDevCluster(dir, filepath.Join(dir, "no-k8s"), devcluster, "TMPDIR="+tmp), devcluster, "/bin/false")
		start := time.Now()
		out, err := script("up")
		if err == nil {
			t.Fatalf("up succeeded without control-plane binaries:\n%s", out)
		}
		t.Logf("failed in %s", time.Since(start).Round(100*time.Millisecond))
		for _, want := range []string{"dev cluster failed to start (devcluster: exit status 1)", "devcluster: start etcd and kube-apiserver", "no-k8s/etcd"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		for _, f := range []string{"dev/devcluster.pid", "dev/mode", "kubeconfig"} {
			if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
				t.Errorf("%s left behind (%v)", f, err)
			}
		}
		if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			t.Errorf("left in TMPDIR: %v (%v)", names, err)
		}
	})
	t.Run("devcluster never ready", func(t *testing.T) {
		dir := t.TempDir()
		// It never gets as far as exec'ing devcluster (and ends its sleep
		// when it is stopped).
		never := filepath.Join(t.TempDir(), "never-devcluster")
		if err := os.WriteFile(never, []byte("#!/bin/sh\ntrap 'kill $!; exit 1' TERM\nsleep 601 &\nwait\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		script := devClusterScript(newDevCluster(dir, filepath.Join(dir, "no-k8s"), devcluster), never, "/bin/false", "--timeout=3s")
		t.Cleanup(func() { terminateMentioning(never) }) // if up left it running
		start := time.Now()
		out, err := script("up")
		took := time.Since(start)
		if err == nil {
			t.Fatalf("up succeeded although devcluster never started:\n%s", out)
		}
		if !strings.Contains(out, "dev cluster not ready after 3s (--timeout); stopping it") {
			t.Errorf("output does not say it timed out:\n%s", out)
		}
		if took > 30*time.Second {
			t.Errorf("up took %s to give up after 3s", took)
		}
		for _, p := range []string{never, "sleep\x00601"} {
			if left := processesMentioning(p); len(left) > 0 {
				t.Errorf("still running after up gave up: %v", left)
			}
		}
	})
}

// startCPUHogs runs n busy processes until the returned function (or the
// end of the test) stops them.
func startCPUHogs(t *testing.T, n int) func() {
	t.Helper()
	var hogs []*exec.Cmd
	for i := 0; i < n; i++ {
		cmd := exec.Command("yes") // stdout is /dev/null
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, cmd)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, h := range hogs {
			_ = h.Process.Kill()
			_ = h.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

type proc struct {
	pid   int
	start string // start time in clock ticks since boot: tells a reused pid apart
	exe   string
}

// stat returns the parent pid and start time of a live (not zombie)
// process.
func stat(pid int) (ppid int, start string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	if len(fields) < 20 || fields[0] == "Z" {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, fields[19], true
}

func startTime(pid int) string {
	_, start, _ := stat(pid)
	return start
}

// descendants lists the live processes below pid.
func descendants(pid int) []proc {
	children := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		p, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if ppid, _, ok := stat(p); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []proc
	queue := children[pid]
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		out = append(out, proc{pid: p, start: startTime(p), exe: exe})
		queue = append(queue, children[p]...)
	}
	return out
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []string {
	var out []string
	for _, p := range pidsMentioning(s) {
		out = append(out, p.exe)
	}
	return out
}

// terminateMentioning sends SIGTERM to live processes whose command line
// contains s (a path of the test's own).
func terminateMentioning(s string) {
	for _, p := range pidsMentioning(s) {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
}

func pidsMentioning(s string) []proc {
	var out []proc
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if _, _, ok := stat(pid); ok && pid != os.Getpid() {
			out = append(out, proc{pid: pid, exe: strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")})
		}
	}
	return out
}
