package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// lastApplied is the annotation kubectl apply keeps a copy of the whole
// manifest in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// CacheOptions limits the manager's cache to what the reconcilers read:
// crawler Pods and egress Nodes, not every Pod and Node of the cluster; and
// keeps cached objects small, because at 100,000 sites the cache holds
// 100,000 CrawlTargets and SiteIndexes: no managedFields on any object, no
// page records in SiteIndexes (status.stats.pages counts them; the
// results endpoint reads a SiteIndex from the API server) and no copy of
// the manifest in CrawlTargets. Cached objects are therefore written back
// with patches only, never with Update, which would send the stripped
// fields as removed (an Update of a SiteIndex's spec leaves its status
// alone).
func CacheOptions(sel egress.Selector) cache.Options {
	strip := cache.TransformStripManagedFields()
	return cache.Options{
		DefaultTransform: strip,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:          {Label: labels.SelectorFromSet(labels.Set{crawlpod.LabelName: crawlpod.NameValue}), Transform: strip},
			&corev1.Node{}:         {Label: labels.SelectorFromSet(sel.Labels()), Transform: strip},
			&crawlv1.SiteIndex{}:   {Transform: compactSiteIndex},
			&crawlv1.CrawlTarget{}: {Transform: compactCrawlTarget},
		},
	}
}

// compactSiteIndex is the cache's copy of a SiteIndex: everything but the
// page records and managedFields.
func compactSiteIndex(in any) (any, error) {
	if si, ok := in.(*crawlv1.SiteIndex); ok {
		si.ManagedFields = nil
		si.Status.Pages = nil
	}
	return in, nil
}

// compactCrawlTarget is the cache's copy of a CrawlTarget: everything but
// managedFields and kubectl's copy of the manifest.
func compactCrawlTarget(in any) (any, error) {
	if ct, ok := in.(*crawlv1.CrawlTarget); ok {
		ct.ManagedFields = nil
		delete(ct.Annotations, lastApplied)
	}
	return in, nil
}
