package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/internal/operator"
	"github.com/lohisoft/crawl-operator/internal/testenv"
)

// By default the metrics endpoint speaks HTTPS and answers only callers
// the API server authenticates and authorizes for GET /metrics: no token
// gets 401, a ServiceAccount without the metrics-reader ClusterRole 403,
// one bound to it (config/rbac/metrics_reader_role.yaml, as shipped) 200.
func TestMetricsNeedAuthentication(t *testing.T) {
	if !operator.Defaults().Manager.MetricsSecure {
		t.Fatal("--metrics-secure is off by default")
	}
	// A manager process with the defaults.
	m := startReplica(t, "manager")
	// The test hands out tokens with admin rights; the manager has none.
	cs := kubernetes.NewForConfigOrDie(testenv.Current().Admin)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		t.Helper()
		if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: sa}}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("prometheus"), token("stranger")

	b, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(b, role); err != nil {
		t.Fatal(err)
	}
	role.Name = ns.Name + "-metrics-reader"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: "prometheus"}},
	}
	if err := k8s.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, binding)
		_ = k8s.Delete(ctx, role)
	})

	// The certificate is self-signed (no CA is mounted); the chart's
	// ServiceMonitor skips verification the same way.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+m.metricsAddr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		r, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer r.Body.Close()
		body, err := io.ReadAll(r.Body)
		return r.StatusCode, string(body), err
	}
	for _, tt := range []struct {
		who, token string
		status     int
	}{
		{"no token", "", http.StatusUnauthorized},
		// controller-runtime's filter answers 500 "Authentication failed"
		// for a token the API server rejects; what matters is no metrics.
		{"a made-up token", "not-a-token", http.StatusInternalServerError},
		{"a ServiceAccount without the metrics-reader role", stranger, http.StatusForbidden},
		{"the metrics-reader ServiceAccount", scraper, http.StatusOK},
	} {
		eventually(t, tt.who, func() error {
			code, body, err := scrape(tt.token)
			if err != nil {
				return err
			}
			if code != tt.status {
				return fmt.Errorf("%s: %d %q, want %d", tt.who, code, firstLine(body), tt.status)
			}
			if code == http.StatusOK && !strings.Contains(body, "crawl_operator_index_backend_up") {
				return fmt.Errorf("%s: 200 without the operator's metrics", tt.who)
			}
			if code != http.StatusOK && strings.Contains(body, "crawl_operator") {
				return fmt.Errorf("%s: %d with metrics in the body", tt.who, code)
			}
			return nil
		})
	}
	if a, err := get("http://" + m.metricsAddr + "/metrics"); err == nil && a.status == http.StatusOK {
		t.Errorf("plain HTTP answered 200: %s", firstLine(a.body))
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
