package conversion

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconversion "sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/yaml"

	crawlv1alpha1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/conversion"
	"github.com/lohisoft/crawl-operator/internal/yamldoc"
)

func certificates(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return out
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// The API server converts through the manager's webhook, which it trusts
// through the caBundle the manager wrote: an object written in either
// version reads the same in both, and what v1alpha1 cannot say survives
// a v1alpha1 client's read-modify-write.
func TestTheAPIServerConvertsThroughTheManager(t *testing.T) {
	w := webhookOptions(t, conversion.Timing{})
	setUp(t, "https://"+w.Addr+"/convert")
	startManager(t, w)
	waitTrusted(t, w.Addr)
	ns := newNamespace(t)

	// A v1alpha1 CrawlTarget, as an old manifest writes it.
	alpha := &crawlv1alpha1.CrawlTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alpha", Labels: map[string]string{"team": "search"}},
		Spec: crawlv1alpha1.CrawlTargetSpec{URL: "https://alpha.example/", MaxPages: 7,
			Interval: &metav1.Duration{Duration: 36 * time.Hour}, Delay: &metav1.Duration{Duration: 2 * time.Second}, Suspend: true},
	}
	if err := k8s.Create(ctx, alpha); err != nil {
		t.Fatal(err)
	}
	beta := &crawlv1.CrawlTarget{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(alpha), beta); err != nil {
		t.Fatal(err)
	}
	want := crawlv1.CrawlTargetSpec{URL: "https://alpha.example/", MaxPages: ptr.To[int32](7),
		Interval: &metav1.Duration{Duration: 36 * time.Hour}, Delay: &metav1.Duration{Duration: 2 * time.Second}, CrawlPolicy: crawlv1.CrawlPolicySuspended}
	if !apiequality.Semantic.DeepEqual(beta.Spec, want) {
		t.Errorf("read as v1beta1: %+v, want %+v", beta.Spec, want)
	}
	sameInBothVersions(t, client.ObjectKeyFromObject(alpha), &crawlv1alpha1.CrawlTarget{}, &crawlv1.CrawlTarget{}, &crawlv1.CrawlTarget{})

	// A v1beta1 CrawlTarget with what v1alpha1 cannot say: a v1alpha1
	// client reads it, changes the delay and writes it back.
	onRequest := &crawlv1.CrawlTarget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "on-request"},
		Spec:       crawlv1.CrawlTargetSpec{URL: "https://on-request.example/", CrawlPolicy: crawlv1.CrawlPolicyOnRequest},
	}
	if err := k8s.Create(ctx, onRequest); err != nil {
		t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old := &crawlv1alpha1.CrawlTarget{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(onRequest), old); err != nil {
			return err
		}
		if !old.Spec.Suspend || old.Annotations[crawlv1alpha1.LostAnnotationPrefix+"spec"] == "" {
			t.Errorf("OnRequest read as v1alpha1: suspend %t, annotations %v", old.Spec.Suspend, old.Annotations)
		}
		old.Spec.Delay = &metav1.Duration{Duration: 5 * time.Second}
		return k8s.Update(ctx, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(onRequest), onRequest); err != nil {
		t.Fatal(err)
	}
	if onRequest.Spec.CrawlPolicy != crawlv1.CrawlPolicyOnRequest || onRequest.Spec.DelayOrDefault() != 5*time.Second || len(onRequest.Annotations) != 0 {
		t.Errorf("after a v1alpha1 update: crawlPolicy %q, delay %s, annotations %v; want OnRequest, 5s, none",
			onRequest.Spec.CrawlPolicy, onRequest.Spec.DelayOrDefault(), onRequest.Annotations)
	}

	// An Exclusion's reason is its description.
	ex := &crawlv1alpha1.Exclusion{ObjectMeta: metav1.ObjectMeta{Name: "conv-excluded-example"},
		Spec: crawlv1alpha1.ExclusionSpec{Domain: "excluded.example", Reason: "asked by email", RequestedBy: "owner@excluded.example"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ex) })
	exBeta := &crawlv1.Exclusion{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex), exBeta); err != nil {
		t.Fatal(err)
	}
	if exBeta.Spec.Description != "asked by email" || exBeta.Spec.RequestedBy != "owner@excluded.example" {
		t.Errorf("Exclusion read as v1beta1: %+v", exBeta.Spec)
	}
	sameInBothVersions(t, client.ObjectKeyFromObject(ex), &crawlv1alpha1.Exclusion{}, &crawlv1.Exclusion{}, &crawlv1.Exclusion{})

	// A SiteIndex's status, written in v1beta1, read in v1alpha1.
	at := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	si := &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "index"}, Spec: crawlv1.SiteIndexSpec{Site: "https://index.example:443"}}
	if err := k8s.Create(ctx, si); err != nil {
		t.Fatal(err)
	}
	si.Status = crawlv1.SiteIndexStatus{CrawlTime: &at, RetryAfterTime: &at, Run: "index-crawl-1", Complete: true,
		Pages:  []crawlv1.IndexedPage{{URL: "/", StatusCode: 200, Title: "Home", FetchTime: &at}},
		Robots: &crawlv1.RobotsStatus{StatusCode: 404, FetchTime: &at}, Stats: crawlv1.IndexStats{Pages: 1}}
	if err := k8s.Status().Update(ctx, si); err != nil {
		t.Fatal(err)
	}
	siAlpha := &crawlv1alpha1.SiteIndex{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(si), siAlpha); err != nil {
		t.Fatal(err)
	}
	if st := siAlpha.Status; st.CrawledAt == nil || !st.CrawledAt.Equal(&at) || st.RetryAfter == nil || len(st.Pages) != 1 ||
		st.Pages[0].FetchedAt == nil || st.Robots == nil || st.Robots.FetchedAt == nil || st.Stats.Pages != 1 {
		t.Errorf("SiteIndex read as v1alpha1: %+v", st)
	}
	sameInBothVersions(t, client.ObjectKeyFromObject(si), &crawlv1alpha1.SiteIndex{}, &crawlv1.SiteIndex{}, &crawlv1.SiteIndex{})

	// Lists convert too.
	var list crawlv1alpha1.CrawlTargetList
	if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 2 {
		t.Fatalf("list in v1alpha1: %d items, %v", len(list.Items), err)
	}
}

// sameInBothVersions reads key in v1alpha1 and in v1beta1 at one
// resourceVersion and checks that converting the first gives the second.
func sameInBothVersions[A interface {
	client.Object
	ConvertTo(ctrlconversion.Hub) error
}, B interface {
	client.Object
	ctrlconversion.Hub
}](t *testing.T, key client.ObjectKey, alpha A, beta, converted B) {
	t.Helper()
	eventually(t, "one resourceVersion read in both versions", func() error {
		if err := k8s.Get(ctx, key, beta); err != nil {
			return err
		}
		if err := k8s.Get(ctx, key, alpha); err != nil {
			return err
		}
		if alpha.GetResourceVersion() != beta.GetResourceVersion() {
			return fmt.Errorf("written between the reads (%s, %s)", beta.GetResourceVersion(), alpha.GetResourceVersion())
		}
		return nil
	})
	if err := alpha.ConvertTo(converted); err != nil {
		t.Fatal(err)
	}
	converted.GetObjectKind().SetGroupVersionKind(beta.GetObjectKind().GroupVersionKind())
	if !apiequality.Semantic.DeepEqual(converted, beta) {
		a, _ := yaml.Marshal(converted)
		b, _ := yaml.Marshal(beta)
		t.Errorf("%s read in v1alpha1 and converted:\n%s\nread in v1beta1:\n%s", key, a, b)
	}
}

// The manifests written for v1alpha1 (the samples as they were) are
// still accepted, and read in v1beta1 as they meant.
func TestV1alpha1ManifestsAreAccepted(t *testing.T) {
	w := webhookOptions(t, conversion.Timing{})
	setUp(t, "https://"+w.Addr+"/convert")
	startManager(t, w)
	waitTrusted(t, w.Addr)
	ns := newNamespace(t)

	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "samples", "v1alpha1", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no v1alpha1 samples (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := yamldoc.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, u := range objs {
			if u.GetAPIVersion() != crawlv1alpha1.GroupVersion.String() {
				t.Fatalf("%s is %s, not a v1alpha1 manifest", f, u.GetAPIVersion())
			}
			if u.GetKind() == "CrawlTarget" {
				u.SetNamespace(ns)
			}
			if err := k8s.Patch(ctx, u, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
				t.Fatalf("apply %s: %v", f, err)
			}
			if u.GetKind() == "Exclusion" {
				t.Cleanup(func() { _ = k8s.Delete(ctx, u) })
			}
		}
	}
	ct := &crawlv1.CrawlTarget{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "example-com"}, ct); err != nil {
		t.Fatal(err)
	}
	if ct.Spec.URL != "https://example.com/" || ct.Spec.MaxPagesOrDefault() != 20 || ct.Spec.DelayOrDefault() != 2*time.Second ||
		ct.Spec.IntervalOrDefault() != 168*time.Hour || ct.Spec.CrawlPolicyOrDefault() != crawlv1.CrawlPolicyScheduled {
		t.Errorf("the v1alpha1 sample CrawlTarget reads as %+v", ct.Spec)
	}
	ex := &crawlv1.Exclusion{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "example-org"}, ex); err != nil {
		t.Fatal(err)
	}
	if ex.Spec.Domain != "example.org" || ex.Spec.Description == "" {
		t.Errorf("the v1alpha1 sample Exclusion reads as %+v", ex.Spec)
	}
}

// Two replicas: each puts its own CA into the caBundles and keeps the
// other's, so the API server trusts whichever the Service sends it to.
func TestBothReplicasServe(t *testing.T) {
	a, b := webhookOptions(t, conversion.Timing{}), webhookOptions(t, conversion.Timing{})
	setUp(t, "https://"+a.Addr+"/convert")
	startManager(t, a)
	startManager(t, b)
	waitTrusted(t, a.Addr)
	waitTrusted(t, b.Addr)
	ns := newNamespace(t)
	for i, addr := range []string{a.Addr, b.Addr, a.Addr} {
		pointAt(t, "https://"+addr+"/convert")
		name := fmt.Sprintf("replica-%d", i)
		eventually(t, "a conversion through "+addr, func() error {
			ct := &crawlv1alpha1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: crawlv1alpha1.CrawlTargetSpec{URL: "https://" + name + ".example/"}}
			if err := k8s.Create(ctx, ct); client.IgnoreAlreadyExists(err) != nil {
				return err
			}
			return k8s.Get(ctx, client.ObjectKeyFromObject(ct), &crawlv1alpha1.CrawlTarget{})
		})
	}
	for name, certs := range bundles(t) {
		if len(certs) != 2 {
			t.Errorf("%s trusts %d CAs, want the two replicas'", name, len(certs))
		}
	}
}

// A CA is renewed before it expires, without one failed conversion: the
// new CA is trusted before it is served, and the old one leaves the
// caBundle once expired.
func TestTheCARotatesWithoutAFailedConversion(t *testing.T) {
	const lifetime = 24 * time.Second
	w := webhookOptions(t, conversion.Timing{CALifetime: lifetime, Interval: 300 * time.Millisecond, Settle: time.Second})
	setUp(t, "https://"+w.Addr+"/convert")
	startManager(t, w)
	waitTrusted(t, w.Addr)
	first := mustServe(t, w.Addr)
	ns := newNamespace(t)
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rotating"},
		Spec: crawlv1.CrawlTargetSpec{URL: "https://rotating.example/"}}
	if err := k8s.Create(ctx, ct); err != nil {
		t.Fatal(err)
	}
	end := first.NotAfter.Add(3 * time.Second)
	reads := 0
	for time.Now().Before(end) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ct), &crawlv1alpha1.CrawlTarget{}); err != nil {
			t.Fatalf("read as v1alpha1 %s after the first certificate was served: %v", time.Since(first.NotBefore.Add(time.Hour)).Round(time.Second), err)
		}
		reads++
		time.Sleep(100 * time.Millisecond)
	}
	now := mustServe(t, w.Addr)
	if now.Equal(first) || !now.NotAfter.After(first.NotAfter) {
		t.Fatalf("the webhook still serves a certificate expiring at %s", now.NotAfter)
	}
	eventually(t, "the expired CA leaves the caBundles", func() error {
		for name, certs := range bundles(t) {
			for _, c := range certs {
				if !c.NotAfter.After(time.Now()) {
					return fmt.Errorf("%s still holds a CA that expired at %s", name, c.NotAfter)
				}
			}
		}
		return nil
	})
	t.Logf("%d conversions across the rotation", reads)
}
