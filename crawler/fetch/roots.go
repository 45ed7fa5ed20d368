package fetch

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// MaxExtraCACerts caps the PEM of extra certificate authorities. The
// operator hands it to every crawler Pod in the Pod spec, which etcd stores
// with each Pod: a few CAs fit many times over, a whole bundle by mistake
// does not.
const MaxExtraCACerts = 64 << 10

// ParseCACerts parses extra certificate authorities: PEM CERTIFICATE
// blocks, with text between them (the comments of a CA bundle) ignored. It
// refuses input with no certificate, a certificate that does not parse, or
// a block of another type: a private key put there by mistake would be
// published in every crawler Pod's spec. The manager checks with it at
// start and the crawler before its first request, so both refuse the same
// input.
func ParseCACerts(pemCerts []byte) ([]*x509.Certificate, error) {
	if len(pemCerts) > MaxExtraCACerts {
		return nil, fmt.Errorf("%d bytes, over the limit of %d", len(pemCerts), MaxExtraCACerts)
	}
	var certs []*x509.Certificate
	for rest := pemCerts; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("a %s block: only CERTIFICATE blocks belong here", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return certs, nil
}

// TLSWithExtraCAs is a client TLS config that trusts the certificate
// authorities in pemCerts besides the public roots. Setting RootCAs
// replaces the roots crypto/x509 would use, so the pool starts as a copy
// of those: the system's, or, where the system has none (the project's
// image), the fallback roots a binary embeds with
// golang.org/x/crypto/x509roots/fallback, which x509.SystemCertPool
// returns then.
func TLSWithExtraCAs(pemCerts []byte) (*tls.Config, error) {
	certs, err := ParseCACerts(pemCerts)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("system roots: %w", err)
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return &tls.Config{RootCAs: pool}, nil
}
