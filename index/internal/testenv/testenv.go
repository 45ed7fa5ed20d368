// Package testenv starts the envtest control plane (kube-apiserver and
// etcd from bin/k8s) for the index packages' test suites, the way
// controllers/suite_test.go does. Without the binaries it fails loudly.
package testenv

import (
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

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
)

// Scheme knows the built-in kinds and the crawl.lohisoft.com ones.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(crawlv1.AddToScheme(Scheme))
}

// Run starts the control plane with the CRDs of the repository at root,
// stores its config in *cfg and a client in *c, runs the tests and stops
// it. It returns the exit code for os.Exit.
func Run(m *testing.M, root string, cfg **rest.Config, c *client.Client) int {
	level := zapcore.ErrorLevel
	if os.Getenv("TEST_VERBOSE_LOGS") != "" {
		level = zapcore.DebugLevel
	}
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(level)))

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		fmt.Fprintf(os.Stderr, "envtest needs kube-apiserver and etcd in %s: run `make k8s-bin` (or `make test`, which does)\n", assets)
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	var err error
	if *cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		return 1
	}
	code := 1
	if *c, err = client.New(*cfg, client.Options{Scheme: Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	return code
}
