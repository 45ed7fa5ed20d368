package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// The agent's shutdown (make dev-cluster-down) stops every process it
// started: a well-behaved one on SIGTERM, a stubborn one with SIGKILL after
// the grace period, children included, and reports both Pods Failed.
func TestShutdownStopsEveryProcess(t *testing.T) {
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.MustAssets(t, filepath.Join("..", "..", ".."))}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	mgr, a, err := newManager(cfg, Options{
		NodeNames:     []string{"node-a"},
		Commands:      map[string]string{"crawler": "/bin/sh"},
		LogDir:        t.TempDir(),
		ShutdownGrace: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(cancel)

	scripts := map[string]string{
		"polite":   "sleep 300 & wait",                                 // ends on SIGTERM, child too (process group)
		"stubborn": "trap '' TERM; sleep 300 & while :; do wait; done", // needs SIGKILL
	}
	for name, script := range scripts {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName:      "node-a",
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "crawler", Image: "crawler", Command: []string{"crawler", "-c"}, Args: []string{script}}},
			},
		}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	var pids map[string]int
	testutil.Eventually(t, 30*time.Second, "both processes running", func() error {
		if pids = a.Running(); len(pids) != 2 {
			return errors.New("not yet")
		}
		for name := range scripts {
			p := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning {
				return errors.New(name + " is " + string(p.Status.Phase))
			}
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // let the shells set their traps

	start := time.Now()
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("agent did not shut down in 20s")
	}
	took := time.Since(start)
	if took < 2*time.Second || took > 10*time.Second {
		t.Errorf("shutdown took %v, want the 2s grace for the stubborn process and little more", took)
	}
	for key, pid := range pids {
		// Setpgid: the group id is the pid; no member may be left (a killed
		// child is reaped by init a moment later).
		testutil.Eventually(t, 5*time.Second, key+" process group gone", func() error {
			if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("process group %d still has processes (kill -0: %v)", pid, err)
			}
			return nil
		})
	}
	if left := a.Running(); len(left) != 0 {
		t.Errorf("agent still tracks %v", left)
	}
	for name := range scripts {
		p := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "Terminated" {
			t.Errorf("%s: phase %s reason %q, want Failed/Terminated", name, p.Status.Phase, p.Status.Reason)
		}
	}
}
