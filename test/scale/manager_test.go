//go:build scale

package scale

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/internal/operator"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// managerProcess is bin/manager run as a process of its own, so its
// resident memory (/proc/PID/status) is its own and not the harness's.
// Its metrics are served over plain HTTP on loopback for the harness to
// scrape; it runs outside the cluster, so without the crawler
// NetworkPolicy, and resolves the egress FCrDNS self-check on a loopback
// DNS server.
type managerProcess struct {
	binary     string
	kubeconfig string
	dnsServer  string
	// storage is the SQLite file of the index backend; it outlives a
	// restart.
	storage string
	// Loopback addresses it listens on.
	probes, metrics, index, results, pprof string

	cmd  *exec.Cmd
	logs *os.File
	// done closes when the process has exited, with waitErr.
	done    chan struct{}
	waitErr error
}

// newManagerProcess prepares a manager; start runs it. Its index is a
// SQLite file of its own, or with $SCALE_STORAGE=postgres a schema of its
// own on the machine's PostgreSQL (pgtest), as production runs it.
func newManagerProcess(t *testing.T, binary, kubeconfig, dnsServer string) *managerProcess {
	t.Helper()
	dir := t.TempDir()
	logs, err := os.Create(filepath.Join(dir, "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	m := &managerProcess{
		binary: binary, kubeconfig: kubeconfig, dnsServer: dnsServer,
		storage: "sqlite://" + filepath.Join(dir, "index.db"),
		probes:  testutil.FreeAddr(t), metrics: testutil.FreeAddr(t),
		index: testutil.FreeAddr(t), results: testutil.FreeAddr(t), pprof: testutil.FreeAddr(t),
		logs: logs,
	}
	switch storage := os.Getenv("SCALE_STORAGE"); storage {
	case "", "sqlite":
	case "postgres":
		m.storage = pgtest.Schema(t)
	default:
		t.Fatalf("SCALE_STORAGE=%q: want sqlite or postgres", storage)
	}
	t.Cleanup(func() {
		m.stop(t)
		logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("manager logs (last 8 KiB):\n%s", tail(b, 8<<10))
		}
	})
	return m
}

func (m *managerProcess) start(t *testing.T) {
	t.Helper()
	m.cmd = exec.Command(m.binary,
		"--metrics-bind-address="+m.metrics, "--metrics-secure=false",
		"--health-probe-bind-address="+m.probes, "--pprof-bind-address="+m.pprof,
		"--results-bind-address="+m.results, "--results-url=http://"+m.results,
		"--index-bind-address="+m.index, "--storage="+m.storage,
		"--crawler-image=crawler:scale",
		"--max-crawls-per-node="+strconv.Itoa(slotsPerNode),
		"--egress-dns-server="+m.dnsServer, "--egress-check-interval=1h",
		// A manager outside the cluster: no NetworkPolicy can let crawler
		// Pods reach it.
		"--crawler-network-policy=false",
	)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+m.kubeconfig)
	if memoryLimit > 0 {
		m.cmd.Env = append(m.cmd.Env, operator.MemoryLimitEnv+"="+strconv.FormatInt(memoryLimit, 10))
	}
	m.cmd.Stdout, m.cmd.Stderr = m.logs, m.logs
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, cmd := make(chan struct{}), m.cmd
	m.done = done
	go func() {
		m.waitErr = cmd.Wait()
		close(done)
	}()
}

// stop sends SIGTERM and waits for the manager to exit (SIGKILL after a
// minute); calling it again does nothing.
func (m *managerProcess) stop(t *testing.T) {
	t.Helper()
	if m.cmd == nil {
		return
	}
	cmd := m.cmd
	m.cmd = nil
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
		if m.waitErr != nil {
			t.Errorf("manager exited: %v", m.waitErr)
		}
	case <-time.After(time.Minute):
		t.Errorf("manager did not stop within a minute of SIGTERM; killed")
		_ = cmd.Process.Kill()
		<-m.done
	}
}

// running fails when the manager has exited by itself.
func (m *managerProcess) running() error {
	if m.cmd == nil {
		return fmt.Errorf("manager is not running")
	}
	select {
	case <-m.done:
		return fmt.Errorf("manager exited: %v", m.waitErr)
	default:
		return nil
	}
}

// ready reports whether /readyz answers 200: the manager is up and its
// index backend answers (the "index" check is included).
func (m *managerProcess) ready() bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + m.probes + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// rss is the manager's resident memory in bytes (VmRSS).
func (m *managerProcess) rss() (int64, error) {
	mem, err := m.memory()
	return mem["VmRSS"], err
}

// memory is the manager's resident memory in bytes from
// /proc/PID/status: VmRSS, and its parts RssAnon (what a container's
// limit holds: heap, SQLite's caches) and RssFile (the binary's pages,
// which the kernel drops under pressure before it kills anything).
func (m *managerProcess) memory() (map[string]int64, error) {
	if err := m.running(); err != nil {
		return nil, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && !strings.HasPrefix(k, "Rss")) {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/status %s: %w", m.cmd.Process.Pid, k, err)
		}
		out[k] = kb << 10
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, fmt.Errorf("no VmRSS in /proc/%d/status", m.cmd.Process.Pid)
	}
	return out, sc.Err()
}

// scrape reads the manager's metrics.
func (m *managerProcess) scrape() (map[string]float64, error) {
	return testutil.Scrape("http://" + m.metrics + "/metrics")
}

// saveHeapProfile writes the manager's heap profile, taken right after a
// garbage collection (so in-use figures are live objects), to path: `go
// tool pprof -top -inuse_space bin/manager path` says what a site costs.
func (m *managerProcess) saveHeapProfile(path string) error {
	resp, err := http.Get("http://" + m.pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// backendBytes is the size of the SQLite index on disk: the database and
// its write-ahead log (0 on PostgreSQL, whose files are the server's).
func (m *managerProcess) backendBytes() (db, wal int64) {
	path, ok := strings.CutPrefix(m.storage, "sqlite://")
	if !ok {
		return 0, 0
	}
	return fileSize(path), fileSize(path + "-wal")
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
