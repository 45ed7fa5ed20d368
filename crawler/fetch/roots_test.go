package fetch

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	// As cmd/crawler does: the roots used where the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/lohisoft/crawl-operator/crawler/testutil/testca"
)

func TestParseCACerts(t *testing.T) {
	a, b := testca.New(t), testca.New(t)
	corrupt := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")}))
	key := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1, 2, 3}}))
	// Valid certificates past the limit: the size alone refuses them.
	huge := strings.Repeat(a.PEM, MaxExtraCACerts/len(a.PEM)+1)
	tests := []struct {
		name  string
		pem   string
		certs int
		err   string // "" when accepted
	}{
		{"one", a.PEM, 1, ""},
		{"a bundle with comments", "# Issuer: A\n" + a.PEM + "\n# Issuer: B\n" + b.PEM, 2, ""},
		{"empty", "", 0, "no PEM CERTIFICATE block"},
		{"garbage", "-----BEGIN GARBAGE\n\x00\xff", 0, "no PEM CERTIFICATE block"},
		{"a certificate that does not parse", a.PEM + corrupt, 0, "certificate 2:"},
		{"a private key beside the certificate", a.PEM + key, 0, "a EC PRIVATE KEY block"},
		{"over the limit", huge, 0, "over the limit of 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certs, err := ParseCACerts([]byte(tt.pem))
			if tt.err == "" {
				if err != nil || len(certs) != tt.certs {
					t.Fatalf("%d certificates, %v; want %d", len(certs), err, tt.certs)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want one with %q", err, tt.err)
			}
			if _, err := TLSWithExtraCAs([]byte(tt.pem)); err == nil {
				t.Error("TLSWithExtraCAs accepted what ParseCACerts refuses")
			}
		})
	}
}

// A site whose certificate a private CA signed fails verification, having
// been sent nothing but the TLS handshake, until the client trusts that CA.
func TestTLSWithExtraCAsTrustsThePrivateCA(t *testing.T) {
	ca := testca.New(t)
	srv := ca.StartServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("private")) }))
	u := mustURL(t, srv.URL+"/")

	_, err := New(Config{Dialer: Dialer{AllowPrivate: true}}).Get(context.Background(), u, all)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) || srv.Requests.Load() != 0 {
		t.Fatalf("without the CA: %v and %d requests; want an unknown authority and none", err, srv.Requests.Load())
	}

	tlsCfg, err := TLSWithExtraCAs([]byte(ca.PEM))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := New(Config{Dialer: Dialer{AllowPrivate: true}, TLS: tlsCfg}).Get(context.Background(), u, all)
	if err != nil || string(resp.Body) != "private" {
		t.Fatalf("with the CA: %v", err)
	}
}

// rootsChildEnv makes the test binary run the public roots check itself,
// in a process whose environment decides where system roots come from:
// crypto/x509 loads them once per process.
const rootsChildEnv = "FETCH_TEST_ROOTS_CHILD"

// Trusting an extra CA must not drop the public roots: every public root
// (the fallback bundle cmd/crawler embeds) that the default verifier
// trusts, the extended config trusts too, on a machine with system roots
// and in an image without any, where the fallback bundle stands in.
func TestTLSWithExtraCAsKeepsThePublicRoots(t *testing.T) {
	if os.Getenv(rootsChildEnv) == "1" {
		checkPublicRootsKept(t)
		return
	}
	none := t.TempDir()
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"the system's roots", nil},
		{"no system roots, as in the image", []string{"SSL_CERT_FILE=" + filepath.Join(none, "absent.pem"), "SSL_CERT_DIR=" + none}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestTLSWithExtraCAsKeepsThePublicRoots$", "-test.v", "-test.count=1")
			cmd.Env = append(append(os.Environ(), rootsChildEnv+"=1"), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "public roots kept") {
				t.Fatalf("%v:\n%s", err, out)
			}
			kept, _, _ := strings.Cut(string(out[strings.Index(string(out), "public roots kept"):]), "\n")
			t.Log(kept)
		})
	}
}

func checkPublicRootsKept(t *testing.T) {
	ca := testca.New(t)
	tlsCfg, err := TLSWithExtraCAs([]byte(ca.PEM))
	if err != nil {
		t.Fatal(err)
	}
	extended := x509.VerifyOptions{Roots: tlsCfg.RootCAs}
	if _, err := ca.Cert.Verify(extended); err != nil {
		t.Errorf("the extra CA itself is not trusted: %v", err)
	}
	trusted, kept := 0, 0
	for r := range bundle.Roots() {
		cert, err := x509.ParseCertificate(r.Certificate)
		if err != nil || r.Constraint != nil {
			continue
		}
		if _, err := cert.Verify(x509.VerifyOptions{}); err != nil {
			continue // not a root of this machine's default verifier
		}
		trusted++
		if _, err := cert.Verify(extended); err == nil {
			kept++
		} else {
			t.Errorf("%s: trusted by default, not with the extra CA: %v", cert.Subject, err)
		}
	}
	if trusted == 0 {
		t.Fatal("the default verifier trusts no public root: nothing was checked")
	}
	t.Logf("public roots kept: %d of %d", kept, trusted)
}
