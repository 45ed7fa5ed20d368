package conversion

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"
	"time"
)

// Names of the files in the certificate directory.
const (
	currentFile = "ca"
	nextFile    = "next-ca"
)

// authority holds this replica's CAs: current signs the certificate it
// serves; next, made when current has lived two thirds of its life, is
// published in the caBundles first and served only once every CRD has
// trusted it for a while, so no API server ever meets a certificate it
// does not trust yet. current stays in the caBundles, like any CA, until
// it expires.
type authority struct {
	dir      string
	hosts    []string
	name     string
	lifetime time.Duration
	// settle is how long every CRD must have trusted next before it is
	// served: the API server rebuilds its webhook client from the CRD, and
	// each of its instances does so on its own.
	settle time.Duration

	mu          sync.Mutex
	current     *ca
	next        *ca
	nextTrusted time.Time // since when every CRD trusts next
}

func newAuthority(dir string, hosts []string, name string, lifetime, settle time.Duration, now time.Time) (*authority, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("the serving certificate names no host")
	}
	a := &authority{dir: dir, hosts: hosts, name: name, lifetime: lifetime, settle: settle}
	var err error
	if a.current, err = loadCA(dir, currentFile, now, hosts); err != nil || !a.current.usable(now) {
		// An unreadable file is replaced: the CA only has to outlive the
		// Pod, and a new one costs one more caBundle entry.
		if a.current, err = newCA(now, lifetime, hosts, name); err != nil {
			return nil, err
		}
		if err := a.current.save(dir, currentFile); err != nil {
			return nil, fmt.Errorf("keep the webhook CA in %s: %w", dir, err)
		}
	}
	if a.next, err = loadCA(dir, nextFile, now, hosts); err != nil || !a.next.usable(now) {
		a.next = nil
	}
	return a, nil
}

// usable says whether c can still be served: it expires later than a
// tenth of a lifetime from now. Nil is not usable.
func (c *ca) usable(now time.Time) bool {
	if c == nil {
		return false
	}
	life := c.cert.NotAfter.Sub(c.cert.NotBefore.Add(clockSkew))
	return now.Add(life / 10).Before(c.cert.NotAfter)
}

// renewAt is when a CA's successor is made: two thirds into its life.
func (c *ca) renewAt() time.Time {
	born := c.cert.NotBefore.Add(clockSkew)
	return born.Add(c.cert.NotAfter.Sub(born) * 2 / 3)
}

// GetCertificate serves the current certificate (tls.Config).
func (a *authority) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.current.serving, nil
}

// serving is the certificate served now.
func (a *authority) serving() *x509.Certificate {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.current.serving.Leaf
}

// published returns the CAs this replica needs in every caBundle, making
// next first when current is due for renewal.
func (a *authority) published(now time.Time) ([]*x509.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == nil && !now.Before(a.current.renewAt()) {
		next, err := newCA(now, a.lifetime, a.hosts, a.name)
		if err != nil {
			return nil, err
		}
		if err := next.save(a.dir, nextFile); err != nil {
			return nil, err
		}
		a.next, a.nextTrusted = next, time.Time{}
	}
	out := []*x509.Certificate{a.current.cert}
	if a.next != nil {
		out = append(out, a.next.cert)
	}
	return out, nil
}

// observed records which of this replica's CAs every CRD trusts now, and
// switches to next once it has been trusted for settle. It reports
// whether the certificate served now is trusted everywhere, and whether
// it switched.
func (a *authority) observed(now time.Time, trusted func(*x509.Certificate) bool) (ready, switched bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next != nil {
		switch {
		case !trusted(a.next.cert):
			a.nextTrusted = time.Time{}
		case a.nextTrusted.IsZero():
			a.nextTrusted = now
		case now.Sub(a.nextTrusted) >= a.settle:
			if err := a.next.save(a.dir, currentFile); err != nil {
				return trusted(a.current.cert), false, err
			}
			a.current, a.next, a.nextTrusted = a.next, nil, time.Time{}
			switched = true
			if err := removeCA(a.dir, nextFile); err != nil {
				return true, switched, err
			}
		}
	}
	return trusted(a.current.cert), switched, nil
}
