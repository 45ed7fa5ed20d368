package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// `make dev-cluster-down` with crawls running on the node agent's nodes:
// the agent stops its crawler processes before it exits, so none is left.
func TestDevClusterDownStopsCrawlers(t *testing.T) {
	testenv.SetLogger()
	assets := testenv.MustAssets(t, repoRoot)
	dir := t.TempDir()
	crawler := buildBinary(t, "cmd/crawler")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	devcluster := buildBinary(t, "hack/devcluster")
	script := devClusterScript(newDevCluster(dir, assets, devcluster), devcluster, crawler)
	down := false
	t.Cleanup(func() {
		if !down {
			_, _ = script("down")
		}
	})
	if out, err := script("up"); err != nil {
		t.Fatalf("devcluster up: %v\n%s", err, out)
	}
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
	site := startSite(t, "127.0.0.6", 10, 0)
	ctx := context.Background()
	for i, node := range []string{"egress-1", "egress-2"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("long-crawl-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName:      node,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "crawler", Image: "crawler", Command: []string{"crawler"},
					// A minute between requests: still crawling when the cluster goes down.
					Args: []string{"crawl", "--allow-private", "--delay=60s", site.url + "/"},
				}},
			},
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 60*time.Second, "two crawler processes", func() error {
		if n := len(processesOf(crawler)); n != 2 {
			return fmt.Errorf("%d crawler processes", n)
		}
		return nil
	})
	start := time.Now()
	down = true
	if out, err := script("down"); err != nil {
		t.Fatalf("devcluster down: %v\n%s", err, out)
	}
	t.Logf("down in %s", time.Since(start).Round(100*time.Millisecond))
	if left := processesOf(crawler); len(left) != 0 {
		t.Errorf("crawler processes left after make dev-cluster-down: %v", left)
	}
}

// processesOf lists the live processes running binary.
func processesOf(binary string) []string {
	var out []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if args[0] != binary {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue // exited, not yet reaped
		}
		out = append(out, strings.Join(args, " "))
	}
	return out
}
