package index

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lohisoft/crawl-operator/index/botpage"
	"github.com/lohisoft/crawl-operator/index/fcrdns"
	"github.com/lohisoft/crawl-operator/index/identity"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
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
		s, err := OpenStore(ctx, dsn)
		if err != nil {
			t.Errorf("OpenStore(%q): %v", dsn, err)
			continue
		}
		if _, err := s.Sites(ctx); err != nil {
			t.Errorf("%s: %v", dsn, err)
		}
		s.Close()
	}
	for _, dsn := range []string{"", "sqlite://", "sqlite:///x.db?mode=ro", "mysql://user:secret@db/x", "/data/index.db", "SQLITE:///x"} {
		if s, err := OpenStore(ctx, dsn); err == nil {
			s.Close()
			t.Errorf("OpenStore(%q) accepted it", dsn)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("OpenStore(%q) error shows the password: %v", dsn, err)
		}
	}
	pg := pgtest.Schema(t)
	s, err := OpenStore(ctx, pg)
	if err != nil {
		t.Fatalf("OpenStore(postgres): %v", err)
	}
	defer s.Close()
	if _, err := s.Sites(ctx); err != nil {
		t.Error(err)
	}
}

func TestPublished(t *testing.T) {
	node := func(name, ip string, mods ...func(*corev1.Node)) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{crawlpod.EgressLabel: crawlpod.EgressValue}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: ip}}}}
		for _, m := range mods {
			m(&n)
		}
		return n
	}
	nodes := []corev1.Node{
		node("ok", "79.139.58.98"),
		node("failing", "203.0.113.1"),
		node("unchecked", "203.0.113.2"),
		node("moved", "203.0.113.3"), // checked under its old address
		node("cordoned", "203.0.113.4", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		node("unlabelled", "203.0.113.5", func(n *corev1.Node) { n.Labels = nil }),
		node("deleting", "203.0.113.6", func(n *corev1.Node) { n.DeletionTimestamp = ptr.To(metav1.Now()) }),
		node("ipv6", "2001:db8::1"),
	}
	results := map[string]fcrdns.Result{
		"ok":       {Node: "ok", IP: "79.139.58.98", Hostname: "c1.bot.lohisoft.com", OK: true},
		"failing":  {Node: "failing", IP: "203.0.113.1", Reason: "no PTR"},
		"moved":    {Node: "moved", IP: "203.0.113.99", Hostname: "c3.bot.lohisoft.com", OK: true},
		"cordoned": {Node: "cordoned", IP: "203.0.113.4", Hostname: "c4.bot.lohisoft.com", OK: true},
	}
	lookup := func(n string) (fcrdns.Result, bool) { r, ok := results[n]; return r, ok }

	required := Published(nodes, crawlpod.Egress{}, lookup, true, nil)
	want := []botpage.Egress{{IP: "79.139.58.98", Hostname: "c1.bot.lohisoft.com"}, {IP: "203.0.113.4", Hostname: "c4.bot.lohisoft.com"}}
	if !reflect.DeepEqual(required, want) {
		t.Errorf("required: %+v, want %+v", required, want)
	}
	optional := Published(nodes, crawlpod.Egress{}, lookup, false, nil)
	want = []botpage.Egress{
		{IP: "79.139.58.98", Hostname: "c1.bot.lohisoft.com"}, {IP: "203.0.113.1"}, {IP: "203.0.113.2"},
		{IP: "203.0.113.3"}, {IP: "203.0.113.4", Hostname: "c4.bot.lohisoft.com"},
	}
	if !reflect.DeepEqual(optional, want) {
		t.Errorf("not required: %+v, want %+v", optional, want)
	}
	// Only expected addresses take crawls, so only they are published.
	expected := Published(nodes, crawlpod.Egress{}, lookup, false, []string{"79.139.58.98", "203.0.113.2", "192.0.2.200"})
	want = []botpage.Egress{{IP: "79.139.58.98", Hostname: "c1.bot.lohisoft.com"}, {IP: "203.0.113.2"}}
	if !reflect.DeepEqual(expected, want) {
		t.Errorf("expected IPs: %+v, want %+v", expected, want)
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
	if _, err := Setup(mgr, Options{Identity: bad, Storage: "sqlite://" + filepath.Join(t.TempDir(), "x.db")}); err == nil {
		t.Error("Setup accepted a hostname suffix anyone can have")
	}
	if _, err := Setup(mgr, Options{Identity: identity.Default(), Storage: "redis://x"}); err == nil {
		t.Error("Setup accepted an unknown storage")
	}
}
