package index_test

import (
	"flag"
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

// index.Setup refuses bad options before it adds anything to the manager;
// a bare manager is enough to show it (the wiring is the other suites').
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
	if _, err := index.Setup(mgr, index.Options{Identity: identity.Default(), Storage: "redis://x"}); err == nil || !strings.HasPrefix(err.Error(), "--storage: ") {
		t.Errorf("index.Setup with an unknown --storage: %v, want an error naming --storage", err)
	}
	t.Setenv(index.StorageEnv, "mysql://crawl:secret@db/x")
	if _, err := index.Setup(mgr, index.Options{Identity: identity.Default()}); err == nil || !strings.HasPrefix(err.Error(), "CRAWL_STORAGE: ") || strings.Contains(err.Error(), "secret") {
		t.Errorf("index.Setup with an unknown $CRAWL_STORAGE: %v, want an error naming CRAWL_STORAGE without the password", err)
	}
}

// --storage wins over $CRAWL_STORAGE, which wins over the default, and
// the flag parsed from an empty command line leaves the choice to the
// environment.
func TestStorageDSN(t *testing.T) {
	const pg = "postgres://crawl:secret@db:5432/crawl"
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == index.StorageEnv {
				return v
			}
			return ""
		}
	}
	for _, tt := range []struct {
		args          []string
		env           string
		want, wantSrc string
	}{
		{nil, "", index.DefaultStorage, "default"},
		{nil, pg, pg, "CRAWL_STORAGE"},
		{[]string{"--storage=sqlite:///x.db"}, pg, "sqlite:///x.db", "--storage"},
		{[]string{"--storage="}, pg, pg, "CRAWL_STORAGE"},
		{[]string{"--storage=" + pg}, "", pg, "--storage"},
	} {
		o := index.DefaultOptions()
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if dsn, src := o.StorageDSN(env(tt.env)); dsn != tt.want || src != tt.wantSrc {
			t.Errorf("%q with %s=%q: %q from %s, want %q from %s", tt.args, index.StorageEnv, tt.env, dsn, src, tt.want, tt.wantSrc)
		}
	}
	// -h must not print a DSN taken from the environment.
	t.Setenv(index.StorageEnv, pg)
	o := index.DefaultOptions()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o.BindFlags(fs)
	var help strings.Builder
	fs.SetOutput(&help)
	fs.PrintDefaults()
	if strings.Contains(help.String(), "secret") {
		t.Errorf("-h shows the DSN of $%s:\n%s", index.StorageEnv, help.String())
	}
}
