package internet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// The internet's own certificate authority, as a public CA is to the real
// one: its sites' HTTPS certificates chain to it, and only those who add
// it (crawler Pods, through the chart's crawler.extraCACerts) trust them.

// CAFile is the CA's certificate (PEM).
func (w Internet) CAFile() string    { return filepath.Join(w.Dir, "ca.crt") }
func (w Internet) caKeyFile() string { return filepath.Join(w.Dir, "ca.key") }

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// makeCA writes a new CA certificate and key.
func (w Internet) makeCA() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "Dev internet CA (crawl-operator)"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	return writePair(w.CAFile(), w.caKeyFile(), der, key)
}

// IssueCert gives site name a serving certificate from the CA and returns
// the certificate's and key's files.
func (w Internet) IssueCert(name string) (certFile, keyFile string, err error) {
	caPEM, err := os.ReadFile(w.CAFile())
	if err != nil {
		return "", "", err
	}
	keyPEM, err := os.ReadFile(w.caKeyFile())
	if err != nil {
		return "", "", err
	}
	cb, _ := pem.Decode(caPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return "", "", fmt.Errorf("the internet's CA in %s is unreadable", w.Dir)
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return "", "", err
	}
	caKey, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	sn, err := serial()
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(0, 3, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(w.Dir, "sites")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	return certFile, keyFile, writePair(certFile, keyFile, der, key)
}

func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}
