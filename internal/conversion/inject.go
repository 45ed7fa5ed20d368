package conversion

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// injector keeps this replica's CAs in the caBundle of every CRD whose
// conversion goes to the webhook, and drops expired CAs, its own and
// other replicas'. Every replica runs one: each adds its own CA and keeps
// the others', so they agree without electing anyone, and a patch that
// lost a race (optimistic locking) is simply done again.
type injector struct {
	reader client.Reader
	writer client.Client
	names  []string
	auth   *authority
	clock  clock.PassiveClock
	// interval between rounds once ready; retry, between rounds until
	// then and after an error.
	interval, retry time.Duration
	log             logr.Logger

	ready  atomic.Bool
	rounds atomic.Int64 // rounds done, for tests
}

// Start runs rounds until ctx ends, on every replica, leader or not:
// every replica serves conversions, so every replica's CA must be trusted.
func (i *injector) Start(ctx context.Context) error {
	for {
		wait := i.interval
		if err := i.round(ctx); err != nil {
			i.log.Error(err, "keeping the webhook CA in the CRDs' caBundle")
			wait = i.retry
		} else if !i.ready.Load() {
			wait = i.retry
		}
		i.rounds.Add(1)
		// Jittered, so two replicas started together do not race every time.
		wait += time.Duration(rand.Int64N(int64(wait)/5 + 1))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// round brings every CRD's caBundle up to date once.
func (i *injector) round(ctx context.Context) error {
	now := i.clock.Now()
	ours, err := i.auth.published(now)
	if err != nil {
		return err
	}
	// trustedBy counts, for each of our CAs, the CRDs that trust it.
	trustedBy := map[string]int{}
	webhooks := 0
	var errs []error
	for _, name := range i.names {
		bundle, ok, err := i.inject(ctx, name, ours, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("CRD %s: %w", name, err))
			continue
		}
		if !ok {
			continue
		}
		webhooks++
		for _, c := range bundle {
			trustedBy[string(c.Raw)]++
		}
	}
	failed := len(errs) > 0
	ready, switched, err := i.auth.observed(now, func(c *x509.Certificate) bool {
		return !failed && trustedBy[string(c.Raw)] == webhooks
	})
	if err != nil {
		errs = append(errs, err)
	}
	if switched {
		i.log.Info("serving the webhook certificate of the new CA", "notAfter", i.auth.serving().NotAfter)
	}
	if was := i.ready.Swap(ready); was != ready {
		i.log.Info("the CRDs trust the webhook's certificate", "trusted", ready, "crds", webhooks)
	}
	return errors.Join(errs...)
}

// inject makes the caBundle of the CRD name hold ours and every other CA
// that has not expired. It returns the certificates the CRD trusts, and
// false when its conversion does not go to a webhook (nothing to trust)
// or it does not exist.
func (i *injector) inject(ctx context.Context, name string, ours []*x509.Certificate, now time.Time) ([]*x509.Certificate, bool, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := i.reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil, false, nil
	}
	have := conv.Webhook.ClientConfig.CABundle
	certs := bundle(parseBundle(have), ours, now)
	want := encode(certs)
	if bytes.Equal(have, want) {
		return certs, true, nil
	}
	patched := crd.DeepCopy()
	patched.Spec.Conversion.Webhook.ClientConfig.CABundle = want
	if err := i.writer.Patch(ctx, patched, client.MergeFromWithOptions(crd, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			// Another replica patched it: the next round starts from theirs.
			return nil, false, fmt.Errorf("patch caBundle: %w (retried)", err)
		}
		return nil, false, fmt.Errorf("patch caBundle: %w", err)
	}
	i.log.Info("updated the caBundle of a CRD", "crd", name, "cas", len(certs))
	return certs, true, nil
}

// bundle is have without expired CAs, plus ours, in one order whatever
// the order of have: replicas that agree on the set write the same bytes,
// so none patches what another just wrote.
func bundle(have, ours []*x509.Certificate, now time.Time) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range append(slices.Clone(have), ours...) {
		if !now.Before(c.NotAfter) {
			continue
		}
		if slices.ContainsFunc(out, func(o *x509.Certificate) bool { return bytes.Equal(o.Raw, c.Raw) }) {
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *x509.Certificate) int {
		if c := a.NotAfter.Compare(b.NotAfter); c != 0 {
			return c
		}
		return bytes.Compare(a.Raw, b.Raw)
	})
	return out
}

func encode(certs []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// Check is a readiness check: it fails until every CRD that converts
// through the webhook trusts the certificate this replica serves, so the
// webhook Service sends the API server only to replicas it can verify.
func (i *injector) Check(*http.Request) error {
	if !i.ready.Load() {
		return errors.New("the CRDs' caBundle does not hold this replica's webhook CA yet")
	}
	return nil
}
