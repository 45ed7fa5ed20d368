package conversion

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1alpha1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/conversion"
	"github.com/lohisoft/crawl-operator/internal/testenv"
)

// Objects the API server stored as v1alpha1, before v1beta1 was the
// storage version, are written again as v1beta1 by the leader, and every
// CRD's status.storedVersions ends up v1beta1 alone. The manager starts on
// them: the first lists of its caches need the webhook, which it makes
// trusted before it waits for them.
func TestObjectsStoredAsV1alpha1MoveToV1beta1(t *testing.T) {
	w := webhookOptions(t, conversion.Timing{})
	setUp(t, "https://"+w.Addr+"/convert")
	setStorage(t, "v1alpha1")
	ns := newNamespace(t)
	objs := []struct {
		obj      client.Object
		resource string
	}{
		{&crawlv1alpha1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stored-old"},
			Spec: crawlv1alpha1.CrawlTargetSpec{URL: "https://stored-old.example/", Suspend: true}}, "crawltargets"},
		{&crawlv1alpha1.Exclusion{ObjectMeta: metav1.ObjectMeta{Name: "stored-old-example"},
			Spec: crawlv1alpha1.ExclusionSpec{Domain: "stored-old.example", Reason: "asked"}}, "exclusions"},
		{&crawlv1alpha1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stored-old-index"},
			Spec: crawlv1alpha1.SiteIndexSpec{Site: "https://stored-old-index.example:443"}}, "siteindexes"},
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o.obj); err != nil {
			t.Fatal(err)
		}
		if o.resource == "exclusions" {
			t.Cleanup(func() { _ = k8s.Delete(ctx, o.obj) })
		}
	}
	setStorage(t, "v1beta1")
	for _, o := range objs {
		if v := storedAs(t, o.resource, o.obj); v != crawlv1alpha1.GroupVersion.String() {
			t.Fatalf("%s %s is stored as %s before the manager starts, want v1alpha1", o.resource, o.obj.GetName(), v)
		}
	}
	for name, versions := range storedVersions(t) {
		if !slices.Contains(versions, "v1alpha1") {
			t.Fatalf("%s: storedVersions %v before the migration", name, versions)
		}
	}

	startManager(t, w)
	eventually(t, "status.storedVersions is v1beta1 alone", func() error {
		for name, versions := range storedVersions(t) {
			if !slices.Equal(versions, []string{"v1beta1"}) {
				return fmt.Errorf("%s: %v", name, versions)
			}
		}
		return nil
	})
	for _, o := range objs {
		if v := storedAs(t, o.resource, o.obj); v != crawlv1.GroupVersion.String() {
			t.Errorf("%s %s is stored as %s after the migration", o.resource, o.obj.GetName(), v)
		}
	}
	eventually(t, "the manager reconciles the migrated CrawlTarget", func() error {
		ct := &crawlv1.CrawlTarget{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(objs[0].obj), ct); err != nil {
			return err
		}
		if ct.Status.ObservedGeneration != ct.Generation || ct.Spec.CrawlPolicy != crawlv1.CrawlPolicySuspended {
			return fmt.Errorf("observedGeneration %d of %d, crawlPolicy %q", ct.Status.ObservedGeneration, ct.Generation, ct.Spec.CrawlPolicy)
		}
		return nil
	})
}

// setStorage makes version the CRDs' storage version.
func setStorage(t *testing.T, version string) {
	t.Helper()
	for _, name := range conversion.CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
		}
		if err := k8s.Update(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
}

func storedVersions(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, name := range conversion.CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		out[name] = crd.Status.StoredVersions
	}
	return out
}

// storedAs reads obj's apiVersion as etcd holds it, through etcd's JSON
// gateway: what the API server answers is always converted.
func storedAs(t *testing.T, resource string, obj client.Object) string {
	t.Helper()
	key := "/registry/crawl.lohisoft.com/" + resource + "/"
	if obj.GetNamespace() != "" {
		key += obj.GetNamespace() + "/"
	}
	key += obj.GetName()
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	resp, err := http.Post(testenv.Current().EtcdURL()+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		KVs []struct{ Value []byte } `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.KVs) != 1 {
		t.Fatalf("etcd key %s: %d values, %v", key, len(out.KVs), err)
	}
	var meta metav1.TypeMeta
	if err := json.Unmarshal(out.KVs[0].Value, &meta); err != nil {
		t.Fatalf("etcd key %s: %v", key, err)
	}
	return meta.APIVersion
}
