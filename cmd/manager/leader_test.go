package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// replica is a manager process: this test binary running main.
type replica struct {
	name string
	// metricsAddr and resultsAddr are host:port of its metrics and
	// results endpoints.
	metricsAddr, resultsAddr string
	cmd                      *exec.Cmd
	exited                   chan error
	log                      string
}

// startReplica starts a manager process on the test API server with its
// own addresses and SQLite index, and args after those.
func startReplica(t *testing.T, name string, args ...string) *replica {
	t.Helper()
	r := &replica{name: name, metricsAddr: testutil.FreeAddr(t), resultsAddr: testutil.FreeAddr(t), exited: make(chan error, 1), log: filepath.Join(t.TempDir(), name+".log")}
	logFile, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(os.Args[0], append([]string{
		"--metrics-bind-address=" + r.metricsAddr,
		"--health-probe-bind-address=" + testutil.FreeAddr(t), "--results-bind-address=" + r.resultsAddr, "--index-bind-address=" + testutil.FreeAddr(t),
		"--crawler-image=crawler:test", "--storage=sqlite://" + filepath.Join(t.TempDir(), "index.db"), "--egress-check-interval=1h",
		"--manager-namespace=crawl-system",
	}, args...)...)
	r.cmd.Env = append(os.Environ(), runManagerEnv+"=1", "KUBECONFIG="+writeKubeconfig(t))
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			b, _ := os.ReadFile(r.log)
			t.Logf("%s log (last 3000 bytes):\n%s", name, b[max(0, len(b)-3000):])
		}
	})
	return r
}

// stop ends the process as the kubelet does, with SIGTERM, and waits.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.exited:
		r.exited <- err
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.exited:
		r.exited <- err
	case <-time.After(60 * time.Second):
		_ = r.cmd.Process.Kill()
		t.Errorf("%s did not stop within 60s of SIGTERM", r.name)
	}
}

// fleetGauges returns the lines of the fleet gauges in the replica's
// metrics, and whether it answered with its own metrics at all.
func (r *replica) fleetGauges() (lines []string, err error) {
	a, err := get("http://" + r.metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	if a.status != 200 || !strings.Contains(a.body, "crawl_operator_index_backend_up") {
		return nil, fmt.Errorf("%s metrics: %d %s", r.name, a.status, firstLine(a.body))
	}
	for _, line := range strings.Split(a.body, "\n") {
		if strings.HasPrefix(line, "crawl_operator_targets{") || strings.HasPrefix(line, "crawl_operator_crawls_running{") {
			lines = append(lines, line)
		}
	}
	return lines, nil
}

// hasFleetGauges is an eventually-check: the replica reports the targets
// of every phase and the running crawl.
func (r *replica) hasFleetGauges() error {
	lines, err := r.fleetGauges()
	if err != nil {
		return err
	}
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, `crawl_operator_targets{phase="Pending"}`) || !strings.Contains(joined, `crawl_operator_crawls_running{node="egress-leader"} 1`) {
		return fmt.Errorf("%s reports no fleet gauges: %q", r.name, lines)
	}
	return nil
}

// Two replicas with leader election, as the chart runs them: only the
// leader reports the gauges that describe the fleet, so a sum over the
// replicas counts each target and each running crawl once. When the leader
// stops, the other takes over the Lease (handed over at shutdown) and the
// gauges with it.
func TestOnlyTheLeaderReportsFleetGauges(t *testing.T) {
	leNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "leader-"}}
	if err := k8s.Create(ctx, leNS); err != nil {
		t.Fatal(err)
	}
	testutil.CreateEgressNode(t, k8s, "egress-leader", "79.139.58.121")

	// As the chart runs each replica, under the manager's own RBAC, whose
	// leader-election Role is in the manager's namespace; plain HTTP
	// metrics for the test.
	flags := []string{"--leader-elect=true", "--leader-election-namespace=" + testenv.ManagerNamespace, "--metrics-secure=false"}
	first := startReplica(t, "first", flags...)
	// A crawl runs, so crawls_running has a series: the leader starts it.
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: leNS.Name, Name: "gannets"}, Spec: crawlv1.CrawlTargetSpec{URL: "https://gannets.example/"}}
	if err := k8s.Create(ctx, ct); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the first replica leads and reports the fleet", first.hasFleetGauges)

	second := startReplica(t, "second", flags...)
	testutil.Eventually(t, time.Minute, "the second replica serves its metrics", func() error {
		_, err := second.fleetGauges()
		return err
	})
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if lines, err := second.fleetGauges(); err != nil || len(lines) > 0 {
			t.Fatalf("the replica that does not lead reports %q (%v)", lines, err)
		}
		if err := first.hasFleetGauges(); err != nil {
			t.Fatalf("the leader: %v", err)
		}
	}

	first.stop(t)
	took := time.Now()
	testutil.Eventually(t, time.Minute, "the second replica takes over the fleet gauges", second.hasFleetGauges)
	t.Logf("the second replica reported the fleet %s after the first stopped", time.Since(took).Round(100*time.Millisecond))
}

// writeKubeconfig writes the credentials of the manager's ServiceAccount
// (bound by config/rbac only) for a manager process.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: restConfig.CAData}
	kc.AuthInfos["manager"] = &clientcmdapi.AuthInfo{ClientCertificateData: restConfig.CertData, ClientKeyData: restConfig.KeyData, Token: restConfig.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "manager"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
