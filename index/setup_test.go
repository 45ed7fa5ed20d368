package index_test

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/index/identity"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/internal/testenv"
)

func TestOpenStore(t *testing.T) {
	dir := t.TempDir()
	good := []string{
		"sqlite://" + filepath.Join(dir, "abs", "index.db"), // sqlite:///tmp/...
		"sqlite://" + strings.TrimPrefix(filepath.Join(dir, "rel.db"), "/"),
	}
	t.Chdir("/") // the relative path above is relative to /
	for _, dsn := range good {
		s, err := index.OpenStore(ctx, dsn)
		if err != nil {
			t.Errorf("index.OpenStore(%q): %v", dsn, err)
			continue
		}
		if _, err := s.Sites(ctx); err != nil {
			t.Errorf("%s: %v", dsn, err)
		}
		s.Close()
	}
	for _, dsn := range []string{"", "sqlite://", "sqlite:///x.db?mode=ro", "mysql://user:secret@db/x", "/data/index.db", "SQLITE:///x"} {
		if s, err := index.OpenStore(ctx, dsn); err == nil {
			s.Close()
			t.Errorf("index.OpenStore(%q) accepted it", dsn)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("index.OpenStore(%q) error shows the password: %v", dsn, err)
		}
	}
	pg := pgtest.Schema(t)
	s, err := index.OpenStore(ctx, pg)
	if err != nil {
		t.Fatalf("index.OpenStore(postgres): %v", err)
	}
	defer s.Close()
	if _, err := s.Sites(ctx); err != nil {
		t.Error(err)
	}
}

func TestSetupRefusesBadOptions(t *testing.T) {
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: testenv.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	bad := identity.Default()
	bad.HostnameSuffix = ".com"
	if _, err := index.Setup(mgr, index.Options{Identity: bad, Storage: "sqlite://" + filepath.Join(t.TempDir(), "x.db")}); err == nil {
		t.Error("index.Setup accepted a hostname suffix anyone can have")
	}
	if _, err := index.Setup(mgr, index.Options{Identity: identity.Default(), Storage: "redis://x"}); err == nil {
		t.Error("index.Setup accepted an unknown storage")
	}
}
