// Package testenv starts the envtest control plane (kube-apiserver and etcd
// from bin/k8s) for the test suites, with config/rbac applied and the
// managers' requests in an audit log, so every suite's manager runs with
// exactly the RBAC that ships. Without the binaries it fails loudly and says
// how to build them: tests never download anything.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

// Scheme knows the built-in kinds and the crawl.lohisoft.com ones.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(crawlv1.AddToScheme(Scheme))
}

// Assets returns the absolute directory of the control-plane binaries:
// $KUBEBUILDER_ASSETS, or bin/k8s of the repository at root.
func Assets(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for _, bin := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("control-plane binaries missing in %s: run `make k8s-bin` (or `make test`, which does)", dir)
		}
	}
	return dir, nil
}

// MustAssets is Assets for a test: it fails the test when they are missing.
func MustAssets(t testing.TB, root string) string {
	t.Helper()
	dir, err := Assets(root)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// SetLogger logs errors only, or everything when TEST_VERBOSE_LOGS is set.
func SetLogger() {
	level := zapcore.ErrorLevel
	if os.Getenv("TEST_VERBOSE_LOGS") != "" {
		level = zapcore.DebugLevel
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(level)))
}

// Env is a running control plane: the one of a test package (Run), or
// one a benchmark starts and stops itself (Start).
type Env struct {
	env *envtest.Environment
	// Admin is a client config with every permission (system:masters).
	Admin *rest.Config
	// Client has every permission and knows Scheme.
	Client   client.Client
	dir      string
	auditLog string
}

var current *Env

// Current is the control plane Run started for this test package.
func Current() *Env { return current }

// Run starts the control plane with the CRDs of the repository at root and
// config/rbac applied, stores in *managerCfg the config of the manager's
// ServiceAccount (bound by config/rbac only, see ManagerServiceAccount) and
// in *c a client with every permission, runs the tests and stops it. Every
// manager a suite starts with *managerCfg runs with exactly the RBAC that
// ships; when the tests are done, any manager request RBAC refused fails
// the suite. It returns the exit code for os.Exit.
func Run(m *testing.M, root string, managerCfg **rest.Config, c *client.Client) int {
	SetLogger()
	e, err := Start(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	current = e
	code := 1
	if *managerCfg, err = e.ServiceAccountConfig(ManagerNamespace, ManagerServiceAccount); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		*c = e.Client
		code = m.Run()
		if err := e.checkRefused(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			code = 1
		}
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	return code
}

// Start starts a control plane as Run does (the CRDs of the repository at
// root, config/rbac applied, the managers' requests in an audit log) for a
// caller that decides when it stops: the scale benchmark starts a fresh
// one for each size. Stop stops it and removes its files.
func Start(root string) (*Env, error) {
	assets, err := Assets(root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "crawl-operator-envtest-")
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	e := &Env{env: env, dir: dir}
	if e.auditLog, err = configureAudit(env, dir); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if e.Admin, err = env.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	if err := e.setUp(root); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

// Stop stops the control plane (etcd's data directory goes with it) and
// removes the audit log.
func (e *Env) Stop() error {
	err := e.env.Stop()
	return errors.Join(err, os.RemoveAll(e.dir))
}

func (e *Env) setUp(root string) error {
	var err error
	if e.Client, err = client.New(e.Admin, client.Options{Scheme: Scheme}); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := bindConfigRBAC(context.Background(), e.Client, root); err != nil {
		return fmt.Errorf("apply config/rbac: %w", err)
	}
	return nil
}

// EtcdURL is the client URL of the control plane's etcd, which also serves
// etcd's /metrics (etcd_mvcc_db_total_size_in_bytes, ...).
func (e *Env) EtcdURL() string { return e.env.ControlPlane.Etcd.URL.String() }

// EtcdDataDir is etcd's data directory; its database is member/snap/db.
func (e *Env) EtcdDataDir() string { return e.env.ControlPlane.Etcd.DataDir }
