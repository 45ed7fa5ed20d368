package conversion

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// The storage migration rewrites every object (an empty patch) and then
// records that the CRD stores v1beta1 only.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=patch,resourceNames=crawltargets.crawl.lohisoft.com;exclusions.crawl.lohisoft.com;siteindexes.crawl.lohisoft.com
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=crawltargets;exclusions;siteindexes,verbs=list;patch

// migrator moves what the API server stored as v1alpha1 to v1beta1, once
// per leader term: for each CRD whose status.storedVersions still names
// another version than its storage version, it patches every object with
// an empty patch, which the API server writes back in the storage version
// (it stores an object again whenever the bytes differ, and the version
// is part of them), then sets storedVersions to the storage version alone.
// Only then may a later release stop serving v1alpha1: the API server
// refuses to drop a version storedVersions still names.
type migrator struct {
	reader     client.Reader
	writer     client.Client
	namespaces watchns.Namespaces
	retry      time.Duration
	log        logr.Logger
}

func (m *migrator) NeedLeaderElection() bool { return true }

// Start migrates each CRD, retrying with backoff until it succeeds or ctx
// ends, and then returns: a leader that took over after a restart checks
// again, and finds nothing to do.
func (m *migrator) Start(ctx context.Context) error {
	for _, k := range migrated {
		wait := m.retry
		for {
			err := m.migrate(ctx, k)
			if err == nil {
				break
			}
			m.log.Error(err, "storage migration to v1beta1; retrying", "crd", k.crd, "in", wait)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Minute)
		}
	}
	return nil
}

// migratedKind is a CRD and its kind.
type migratedKind struct {
	crd, kind  string
	namespaced bool
}

var migrated = []migratedKind{
	{"crawltargets.crawl.lohisoft.com", "CrawlTarget", true},
	{"exclusions.crawl.lohisoft.com", "Exclusion", false},
	{"siteindexes.crawl.lohisoft.com", "SiteIndex", true},
}

func (m *migrator) migrate(ctx context.Context, k migratedKind) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.reader.Get(ctx, client.ObjectKey{Name: k.crd}, crd); err != nil {
		return err
	}
	storage := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if storage != crawlv1.GroupVersion.Version {
		// CRDs of another release: what to store is theirs to say.
		m.log.Info("not migrating: the CRD stores another version than this manager's", "crd", k.crd, "storage", storage)
		return nil
	}
	if slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		return nil
	}
	m.log.Info("migrating stored objects", "crd", k.crd, "storedVersions", crd.Status.StoredVersions, "to", storage)
	// Confined to some namespaces, the manager cannot see every object,
	// so it may not say that none is stored in an older version.
	confined := k.namespaced && len(m.namespaces) > 0
	scopes := []string{metav1.NamespaceAll}
	if confined {
		scopes = m.namespaces
	}
	n := 0
	for _, ns := range scopes {
		done, err := m.rewrite(ctx, k, ns)
		n += done
		if err != nil {
			return err
		}
	}
	if confined {
		m.log.Info("objects rewritten in the watched namespaces; status.storedVersions is left as it is, since other namespaces may hold older objects",
			"crd", k.crd, "objects", n)
		return nil
	}
	patched := crd.DeepCopy()
	patched.Status.StoredVersions = []string{storage}
	if err := m.writer.Status().Patch(ctx, patched, client.MergeFromWithOptions(crd, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("set status.storedVersions: %w", err)
	}
	m.log.Info("migrated", "crd", k.crd, "objects", n, "storedVersions", patched.Status.StoredVersions)
	return nil
}

// rewrite patches every object of kind k in namespace ns (all: "") with
// an empty merge patch. Objects are listed by their metadata only, a page
// at a time: a fleet has tens of thousands of them.
func (m *migrator) rewrite(ctx context.Context, k migratedKind, ns string) (int, error) {
	gvk := crawlv1.GroupVersion.WithKind(k.kind)
	n := 0
	opts := []client.ListOption{client.Limit(500)}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(k.kind + "List"))
		if err := m.reader.List(ctx, list, opts...); err != nil {
			return n, fmt.Errorf("list %s: %w", k.kind, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(gvk)
			if err := m.writer.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte("{}"))); err != nil && !apierrors.IsNotFound(err) {
				return n, fmt.Errorf("rewrite %s %s: %w", k.kind, client.ObjectKeyFromObject(obj), err)
			}
			n++
		}
		if list.Continue == "" {
			return n, nil
		}
		opts = append(opts, client.Continue(list.Continue))
	}
}
