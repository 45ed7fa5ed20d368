package testenv

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Warnings collects the API server's warnings (unknown fields, Pod
// Security, deprecations), which a dry run reports beside its answer.
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (w *Warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// Take returns the warnings received since the last Take.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// StartServer starts a control plane of its own for one test, with the
// CRDs of the repository at root and of crdPaths, stopped when the test
// ends. Its client has every permission, knows Scheme and collects the
// warnings.
func StartServer(t testing.TB, root string, crdPaths ...string) (client.Client, *Warnings) {
	t.Helper()
	SetLogger()
	env := &envtest.Environment{
		BinaryAssetsDirectory: MustAssets(t, root),
		CRDDirectoryPaths:     append([]string{filepath.Join(root, "config", "crd", "bases")}, crdPaths...),
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	w := &Warnings{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}
