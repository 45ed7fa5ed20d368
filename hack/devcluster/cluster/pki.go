package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// servePods makes envtest's API server one that Pods can use: it listens
// on every address (Pods reach it at the bridge's gateway, where the
// `kubernetes` Service's endpoint points), its serving certificate names
// the gateway, the Service's ClusterIP and the kubernetes.default names,
// and the ServiceAccount admission plugin (which envtest turns off) gives
// Pods their tokens. envtest's own certificate names only localhost, so
// the certificates are made here, in dir, before envtest would make them;
// it returns the CA's file, which the controller manager publishes.
func servePods(api *envtest.APIServer, dir string, n Network) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IP(n.Gateway().AsSlice()), net.IP(n.APIServiceIP().AsSlice())}
	names := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("localhost", ips, names)
	if err != nil {
		return "", fmt.Errorf("API server certificate: %w", err)
	}
	// The serving certificate comes first, then the CA that signed it.
	_, rest := pem.Decode(certPEM)
	ca, _ := pem.Decode(rest)
	if ca == nil {
		return "", fmt.Errorf("API server certificate: no CA after the serving certificate")
	}
	caPEM := pem.EncodeToMemory(ca)
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return "", err
	}
	// The names envtest gives these files; it skips making its own when
	// apiserver.crt exists.
	files := map[string][]byte{
		"apiserver.crt": certPEM,
		"apiserver.key": keyPEM,
		"ca.crt":        caPEM,
		"sa-signer.key": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		"sa-signer.crt": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return "", err
		}
	}
	api.CertDir = dir
	api.SecureServing.CA = caPEM
	api.Configure().
		Set("bind-address", "0.0.0.0").
		Set("advertise-address", n.Gateway().String()).
		Set("service-cluster-ip-range", n.ServiceCIDR.String()).
		Disable("disable-admission-plugins")
	return filepath.Join(dir, "ca.crt"), nil
}
