// Package conversion runs the manager's conversion webhook against a real
// API server (envtest) as the CRDs ship it: conversion strategy Webhook,
// no caBundle until the manager puts its CA there, the manager under
// config/rbac's ServiceAccount (a request RBAC refuses fails the suite).
// The API server reaches the webhook by URL on loopback instead of through
// the Service, which envtest has no network for.
package conversion

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1alpha1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/internal/conversion"
	"github.com/lohisoft/crawl-operator/internal/operator/operatortest"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

var (
	repoRoot      = filepath.Join("..", "..")
	managerConfig *rest.Config
	admin         client.Client
	// k8s has every permission and knows both versions and CRDs.
	k8s client.Client
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, repoRoot, &managerConfig, &admin))
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, what, check)
}

// setUp gives the tests a client that knows both versions, and points the
// CRDs' conversion at url with no caBundle, as the chart installs them.
func setUp(t *testing.T, url string) {
	t.Helper()
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(crawlv1alpha1.AddToScheme(s))
	utilruntime.Must(crawlv1.AddToScheme(s))
	var err error
	if k8s, err = client.New(testenv.Current().Admin, client.Options{Scheme: s}); err != nil {
		t.Fatal(err)
	}
	for _, name := range conversion.CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url},
				ConversionReviewVersions: []string{"v1"},
			},
		}
		if err := k8s.Update(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
}

// pointAt sends the CRDs' conversions to url, keeping their caBundle.
func pointAt(t *testing.T, url string) {
	t.Helper()
	for _, name := range conversion.CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		crd.Spec.Conversion.Webhook.ClientConfig.URL = &url
		if err := k8s.Update(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
}

// webhookOptions are a manager's webhook on a loopback port of its own,
// with its own certificate directory, as each replica has.
func webhookOptions(t *testing.T, timing conversion.Timing) conversion.Flags {
	t.Helper()
	if timing.Retry == 0 {
		timing.Retry = 200 * time.Millisecond
	}
	if timing.Interval == 0 {
		timing.Interval = time.Second
	}
	if timing.Settle == 0 {
		timing.Settle = time.Second
	}
	return conversion.Flags{Addr: testutil.FreeAddr(t), Hosts: []string{"127.0.0.1"}, CertDir: t.TempDir(), Timing: timing}
}

// startManager runs the whole operator with the webhook as config/rbac's
// ServiceAccount; leader election is on, as with two replicas, and the
// webhook serves on every replica whether it leads or not.
func startManager(t *testing.T, w conversion.Flags) *operatortest.Running {
	t.Helper()
	o := operatortest.Options(t, dnstest.Zone{})
	o.Manager.LeaderElect, o.Manager.LeaderElectionNamespace = true, testenv.ManagerNamespace
	o.Manager.Webhook = w
	o.NetworkPolicy.ManagerNamespace, o.NetworkPolicy.ResultsPort = testenv.ManagerNamespace, 8083
	return operatortest.New(t, managerConfig, o).Start(t)
}

// bundles returns the caBundle of each CRD.
func bundles(t *testing.T) map[string][]*x509.Certificate {
	t.Helper()
	out := map[string][]*x509.Certificate{}
	for _, name := range conversion.CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		out[name] = certificates(crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
	}
	return out
}

// served is the certificate the webhook at addr serves.
func served(addr string) (*x509.Certificate, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads what is served
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// mustServe is served for a webhook known to be up.
func mustServe(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	c, err := served(addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitTrusted waits until every CRD's caBundle verifies what addr serves.
func waitTrusted(t *testing.T, addr string) {
	t.Helper()
	eventually(t, "the CRDs trust the webhook at "+addr, func() error {
		leaf, err := served(addr)
		if err != nil {
			return err
		}
		for name, certs := range bundles(t) {
			pool := x509.NewCertPool()
			for _, c := range certs {
				pool.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
				return fmt.Errorf("%s (%d CAs): %v", name, len(certs), err)
			}
		}
		return nil
	})
}

// newNamespace makes a namespace for a test. It stays: a manager still
// running would be refused writes in a namespace being deleted, which the
// suite counts as RBAC refusals.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "conv-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
