package conversion

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ca is a certificate authority of this replica's own, and the serving
// certificate it signed. Each replica has its own: they share no key, so
// no replica needs to read another's Secret (the manager may read no
// Secret at all), and the CRDs' caBundle trusts all of them.
type ca struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	serving *tls.Certificate
}

// clockSkew backdates certificates, so an API server whose clock is a
// little behind the manager's accepts a new one at once.
const clockSkew = time.Hour

// newCA makes a CA valid from now for lifetime, and a serving certificate
// for hosts valid as long.
func newCA(now time.Time, lifetime time.Duration, hosts []string, name string) (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		// The replica and the time tell a CA in a caBundle apart when
		// someone reads it.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("crawl-operator conversion webhook CA %s %s", name, now.UTC().Format(time.RFC3339))},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &ca{cert: cert, key: key}
	return c, c.issue(now, hosts)
}

// issue signs a serving certificate for hosts that expires with the CA.
func (c *ca) issue(now time.Time, hosts []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     c.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	c.serving = &tls.Certificate{Certificate: [][]byte{der, c.cert.Raw}, PrivateKey: key, Leaf: leaf}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// certPEM is the CA's certificate, as it goes into a caBundle.
func (c *ca) certPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})
}

// save writes the CA's certificate and key under dir as name.crt and
// name.key, so a restarted container (same Pod, same emptyDir) keeps its
// CA instead of adding one more to the caBundle.
func (c *ca) save(dir, name string) error {
	keyDER, err := x509.MarshalECPrivateKey(c.key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, name+".crt"), c.certPEM())
}

// writeFile replaces path atomically: a crash mid-write leaves the old
// file or the new one, never half of either.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// removeCA removes what save wrote.
func removeCA(dir, name string) error {
	err := os.Remove(filepath.Join(dir, name+".crt"))
	if err2 := os.Remove(filepath.Join(dir, name+".key")); err == nil || errors.Is(err, os.ErrNotExist) {
		err = err2
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// loadCA reads what save wrote and issues a fresh serving certificate
// from it. It returns nil, nil when there is nothing to read.
func loadCA(dir, name string, now time.Time, hosts []string) (*ca, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, name+".key"))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("%s: not PEM", filepath.Join(dir, name))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s: the key is not the certificate's", filepath.Join(dir, name))
	}
	c := &ca{cert: cert, key: key}
	return c, c.issue(now, hosts)
}

// parseBundle returns the certificates of a caBundle, dropping what does
// not parse.
func parseBundle(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}
