package v1alpha1

import (
	"encoding/json"
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/randfill"

	"github.com/lohisoft/crawl-operator/api/v1beta1"
)

// The round trips v1alpha1 → v1beta1 → v1alpha1 and v1beta1 → v1alpha1 →
// v1beta1 lose nothing, for random objects of every kind, as
// apimachinery's own API round-trip tests fill them. Each hop goes through
// JSON, as through the conversion webhook.
func TestConversionRoundTrip(t *testing.T) {
	for seed := int64(0); seed < 2000; seed++ {
		roundTrips(t, seed)
	}
}

// FuzzConversionRoundTrip is TestConversionRoundTrip for seeds the fuzzer
// picks (make fuzz).
func FuzzConversionRoundTrip(f *testing.F) {
	f.Add(int64(1))
	f.Fuzz(func(t *testing.T, seed int64) { roundTrips(t, seed) })
}

func roundTrips(t *testing.T, seed int64) {
	t.Helper()
	fill := filler(seed)
	kinds := []struct {
		name  string
		spoke func() conversion.Convertible
		hub   func() conversion.Hub
	}{
		{"CrawlTarget", func() conversion.Convertible { return &CrawlTarget{} }, func() conversion.Hub { return &v1beta1.CrawlTarget{} }},
		{"Exclusion", func() conversion.Convertible { return &Exclusion{} }, func() conversion.Hub { return &v1beta1.Exclusion{} }},
		{"SiteIndex", func() conversion.Convertible { return &SiteIndex{} }, func() conversion.Hub { return &v1beta1.SiteIndex{} }},
	}
	for _, k := range kinds {
		spoke := k.spoke()
		fill.Fill(spoke)
		before := spoke.DeepCopyObject()
		hub := k.hub()
		if err := spoke.ConvertTo(hub); err != nil {
			t.Fatalf("seed %d: %s v1alpha1 → v1beta1: %v", seed, k.name, err)
		}
		hub = viaJSON(t, hub, k.hub())
		back := k.spoke()
		if err := back.ConvertFrom(hub); err != nil {
			t.Fatalf("seed %d: %s v1beta1 → v1alpha1: %v", seed, k.name, err)
		}
		same(t, seed, k.name+" v1alpha1 → v1beta1 → v1alpha1", before, spoke, back)

		hub = k.hub()
		fill.Fill(hub)
		for key := range hub.(metav1.Object).GetAnnotations() {
			if len(key) >= len(LostAnnotationPrefix) && key[:len(LostAnnotationPrefix)] == LostAnnotationPrefix {
				t.Fatalf("seed %d: the fuzzer wrote the reserved annotation %s", seed, key)
			}
		}
		hubBefore := hub.DeepCopyObject()
		spoke = k.spoke()
		if err := spoke.ConvertFrom(hub); err != nil {
			t.Fatalf("seed %d: %s v1beta1 → v1alpha1: %v", seed, k.name, err)
		}
		spoke = viaJSON(t, spoke, k.spoke())
		hubBack := k.hub()
		if err := spoke.ConvertTo(hubBack); err != nil {
			t.Fatalf("seed %d: %s v1alpha1 → v1beta1: %v", seed, k.name, err)
		}
		same(t, seed, k.name+" v1beta1 → v1alpha1 → v1beta1", hubBefore, hub, hubBack)
	}
}

// same fails unless got equals want, and orig (what was converted) is
// unchanged: a conversion must not share memory with its input.
func same(t *testing.T, seed int64, what string, orig, in, got runtime.Object) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(orig, in) {
		t.Fatalf("seed %d: %s changed its input:\nbefore %s\nafter  %s", seed, what, dump.Pretty(orig), dump.Pretty(in))
	}
	if !apiequality.Semantic.DeepEqual(orig, got) {
		t.Fatalf("seed %d: %s lost something:\nbefore %s\nafter  %s", seed, what, dump.Pretty(orig), dump.Pretty(got))
	}
}

// viaJSON encodes obj and decodes it into into, as the webhook's request
// and answer do.
func viaJSON[T runtime.Object](t *testing.T, obj, into T) T {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
	return into
}

// filler fills objects as apimachinery's round-trip tests do (metafuzzer:
// valid ObjectMeta, blank TypeMeta), with times at whole seconds (what
// JSON keeps) and the fields whose conversion has cases drawn from those
// cases more often than random strings would hit them.
func filler(seed int64) *randfill.Filler {
	policies := []v1beta1.CrawlPolicy{"", v1beta1.CrawlPolicyScheduled, v1beta1.CrawlPolicyOnRequest, v1beta1.CrawlPolicySuspended, "Hourly"}
	custom := func(runtimeserializer.CodecFactory) []any {
		return []any{
			func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.Unix(int64(c.Uint32()), 0) },
			func(p *v1beta1.CrawlPolicy, c randfill.Continue) { *p = policies[c.Intn(len(policies))] },
			func(s *v1beta1.CrawlTargetSpec, c randfill.Continue) {
				c.FillNoCustom(s)
				if c.Intn(3) == 0 {
					s.MaxPages = ptr.To(int32(c.Intn(3)))
				}
			},
			func(s *CrawlTargetSpec, c randfill.Continue) {
				c.FillNoCustom(s)
				if c.Intn(3) == 0 {
					s.MaxPages = int32(c.Intn(3))
				}
			},
		}
	}
	scheme := runtime.NewScheme()
	codecs := runtimeserializer.NewCodecFactory(scheme)
	return fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, custom), rand.NewSource(seed), codecs)
}

// What a v1alpha1 client sees of a v1beta1 crawl policy, and that a change
// it makes wins over the annotation it read.
func TestCrawlPolicyConversion(t *testing.T) {
	cases := []struct {
		policy  v1beta1.CrawlPolicy
		suspend bool
		kept    bool // the annotation carries the policy
	}{
		{v1beta1.CrawlPolicyScheduled, false, false},
		{v1beta1.CrawlPolicySuspended, true, false},
		{v1beta1.CrawlPolicyOnRequest, true, true},
		{"", false, true},
		{"Hourly", true, true},
	}
	for _, c := range cases {
		hub := &v1beta1.CrawlTarget{Spec: v1beta1.CrawlTargetSpec{URL: "https://example.com/", CrawlPolicy: c.policy}}
		var old CrawlTarget
		if err := old.ConvertFrom(hub); err != nil {
			t.Fatal(err)
		}
		_, kept := old.Annotations[crawlTargetLostAnnotation]
		if old.Spec.Suspend != c.suspend || kept != c.kept {
			t.Errorf("crawlPolicy %q: suspend=%t, annotation kept=%t; want %t, %t", c.policy, old.Spec.Suspend, kept, c.suspend, c.kept)
		}

		// A v1alpha1 client flips suspend and writes back what it read.
		old.Spec.Suspend = !old.Spec.Suspend
		var back v1beta1.CrawlTarget
		if err := old.ConvertTo(&back); err != nil {
			t.Fatal(err)
		}
		want := v1beta1.CrawlPolicyScheduled
		if old.Spec.Suspend {
			want = v1beta1.CrawlPolicySuspended
		}
		if back.Spec.CrawlPolicy != want || back.Annotations != nil {
			t.Errorf("crawlPolicy %q, then suspend=%t in v1alpha1: crawlPolicy %q, annotations %v; want %q and none",
				c.policy, old.Spec.Suspend, back.Spec.CrawlPolicy, back.Annotations, want)
		}
	}
}
