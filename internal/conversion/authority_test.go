package conversion

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestAuthority(t *testing.T, dir string, now time.Time) *authority {
	t.Helper()
	a, err := newAuthority(dir, []string{"webhook.crawl-system.svc", "127.0.0.1"}, "test", 9*time.Hour, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// verifies says whether an API server trusting bundle accepts what a
// serves for host.
func verifies(a *authority, bundle []*x509.Certificate, host string, now time.Time) error {
	cert, _ := a.GetCertificate(&tls.ClientHelloInfo{})
	pool := x509.NewCertPool()
	for _, c := range bundle {
		pool.AddCert(c)
	}
	_, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: now})
	return err
}

// A CA is renewed at two thirds of its life: the new one is published
// while the old one is still served, served only once every CRD has
// trusted it for the settle time, and the old one leaves the caBundle
// when it expires. At every step what is served verifies against what is
// published.
func TestRotation(t *testing.T) {
	a := newTestAuthority(t, t.TempDir(), t0)
	var caBundle []*x509.Certificate
	trustedAll := func(c *x509.Certificate) bool {
		for _, b := range caBundle {
			if b.Equal(c) {
				return true
			}
		}
		return false
	}
	first := a.serving()
	// step publishes, "injects" into the one CRD, observes.
	step := func(now time.Time) (ready, switched bool) {
		t.Helper()
		ours, err := a.published(now)
		if err != nil {
			t.Fatal(err)
		}
		caBundle = bundle(caBundle, ours, now)
		ready, switched, err = a.observed(now, trustedAll)
		if err != nil {
			t.Fatal(err)
		}
		if err := verifies(a, caBundle, "webhook.crawl-system.svc", now); err != nil {
			t.Fatalf("at %s the served certificate does not verify against the caBundle: %v", now.Sub(t0), err)
		}
		return ready, switched
	}
	if ready, _ := step(t0); !ready || len(caBundle) != 1 {
		t.Fatalf("after the first round: ready %t, %d CAs", ready, len(caBundle))
	}
	step(t0.Add(5 * time.Hour))
	if len(caBundle) != 1 {
		t.Fatalf("a CA was added before two thirds of the lifetime: %d", len(caBundle))
	}
	at := t0.Add(6 * time.Hour)
	if _, sw := step(at); sw || len(caBundle) != 2 || !a.serving().Equal(first) {
		t.Fatalf("at two thirds: switched %t, %d CAs; want the next CA published, not served", sw, len(caBundle))
	}
	if _, sw := step(at.Add(30 * time.Second)); sw {
		t.Fatal("switched before the settle time")
	}
	if _, sw := step(at.Add(time.Minute)); !sw || a.serving().Equal(first) {
		t.Fatal("not switched after the settle time")
	}
	step(at.Add(2 * time.Hour))
	if len(caBundle) != 2 {
		t.Fatalf("%d CAs before the old one expired, want 2", len(caBundle))
	}
	step(t0.Add(9*time.Hour + time.Second))
	if len(caBundle) != 1 {
		t.Fatalf("%d CAs once the old one expired, want 1", len(caBundle))
	}
}

// A CA not trusted everywhere (a CRD could not be patched) is not served,
// however long it waits.
func TestNextCAIsServedOnlyOnceTrusted(t *testing.T) {
	a := newTestAuthority(t, t.TempDir(), t0)
	first := a.serving()
	at := t0.Add(6 * time.Hour)
	ours, err := a.published(at)
	if err != nil || len(ours) != 2 {
		t.Fatalf("published %d, %v", len(ours), err)
	}
	onlyFirst := func(c *x509.Certificate) bool { return c.Equal(ours[0]) }
	for _, d := range []time.Duration{0, time.Minute, time.Hour} {
		if ready, sw, err := a.observed(at.Add(d), onlyFirst); err != nil || sw || !ready {
			t.Fatalf("+%s: ready %t, switched %t, %v", d, ready, sw, err)
		}
	}
	if !a.serving().Equal(first) {
		t.Fatal("served a CA the CRDs do not trust")
	}
	if ready, _, _ := a.observed(at, func(*x509.Certificate) bool { return false }); ready {
		t.Fatal("ready while no CRD trusts the served certificate")
	}
}

// A restarted container keeps its CA, and a rotation under way; an
// expired file is replaced.
func TestCAOutlivesTheContainer(t *testing.T) {
	dir := t.TempDir()
	a := newTestAuthority(t, dir, t0)
	if _, err := a.published(t0.Add(6 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	b := newTestAuthority(t, dir, t0.Add(6*time.Hour+time.Minute))
	if !b.current.cert.Equal(a.current.cert) || b.next == nil || !b.next.cert.Equal(a.next.cert) {
		t.Fatal("the restarted authority lost its CAs")
	}
	if err := verifies(b, []*x509.Certificate{a.current.cert}, "127.0.0.1", t0.Add(6*time.Hour)); err != nil {
		t.Fatalf("the reissued serving certificate: %v", err)
	}
	c := newTestAuthority(t, dir, t0.Add(10*time.Hour))
	if c.current.cert.Equal(a.current.cert) || c.current.cert.Equal(a.next.cert) {
		t.Fatal("an expired CA was kept")
	}
}

// Two replicas' CAs in one caBundle: each replica keeps the other's,
// and both write the same bytes.
func TestBundleIsTheSameWhoeverWritesIt(t *testing.T) {
	a := newTestAuthority(t, t.TempDir(), t0)
	b := newTestAuthority(t, t.TempDir(), t0.Add(time.Second))
	oursA, _ := a.published(t0)
	oursB, _ := b.published(t0)
	ab := bundle(bundle(nil, oursA, t0), oursB, t0)
	ba := bundle(bundle(nil, oursB, t0), oursA, t0)
	if string(encode(ab)) != string(encode(ba)) || len(ab) != 2 {
		t.Fatalf("the replicas disagree: %d and %d CAs", len(ab), len(ba))
	}
	for _, r := range []*authority{a, b} {
		if err := verifies(r, ab, "webhook.crawl-system.svc", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if got := parseBundle(append([]byte("junk\n-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n"), encode(ab)...)); len(got) != 2 {
		t.Fatalf("parseBundle: %d certificates, want 2", len(got))
	}
}
