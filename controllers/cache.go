package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
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
// results endpoint reads a SiteIndex from the API server), no labels on
// either, no annotations on SiteIndexes, no copy of the manifest in
// CrawlTargets, and one copy of the strings every object repeats. Cached
// objects are therefore written back with patches only, never with
// Update, which would send the stripped fields as removed.
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

// compactSiteIndex is the cache's copy of a SiteIndex: what the
// reconcilers and the index syncer read (its site, owner, run, whether it
// is complete, pages counted, Retry-After, a refusal and the verified
// egress address, one of a handful shared by every site).
func compactSiteIndex(in any) (any, error) {
	if si, ok := in.(*crawlv1.SiteIndex); ok {
		si.ManagedFields = nil
		si.Labels, si.Annotations = nil, nil
		// Page records, robots.txt's answer and a recrawl's progress are
		// for the people and the results endpoint, which reads the
		// SiteIndex from the API server.
		si.Status.Pages, si.Status.Robots, si.Status.Progress = nil, nil, nil
		si.Status.EgressIP = vocabulary.share(si.Status.EgressIP)
		shareMeta(&si.ObjectMeta)
	}
	return in, nil
}

// compactCrawlTarget is the cache's copy of a CrawlTarget: everything but
// managedFields and kubectl's copy of the manifest.
func compactCrawlTarget(in any) (any, error) {
	if ct, ok := in.(*crawlv1.CrawlTarget); ok {
		ct.ManagedFields = nil
		// No reconciler reads labels, and tools put theirs on every object
		// (Helm its chart, Flux its Kustomization): a map each. Annotations
		// stay, but for kubectl's copy of the manifest: a change of any
		// wakes the reconciler, the way users nudge an operator.
		ct.Labels = nil
		delete(ct.Annotations, lastApplied)
		if len(ct.Annotations) == 0 {
			// An emptied map keeps its memory.
			ct.Annotations = nil
		}
		shareMeta(&ct.ObjectMeta)
		st := &ct.Status
		st.Phase = crawlv1.CrawlPhase(vocabulary.share(string(st.Phase)))
		st.EgressNodeName, st.EgressIP = vocabulary.share(st.EgressNodeName), vocabulary.share(st.EgressIP)
		if i := strings.Index(st.Site, st.Host); i >= 0 && st.Host != "" {
			// The host is part of the site's text.
			st.Host = st.Site[i : i+len(st.Host)]
		}
		shareConditions(st.Conditions)
	}
	return in, nil
}

// The cache's objects are decoded from JSON, which allocates every string
// anew: the namespace, the owner's kind, each condition's type, status and
// reason are a copy per object, and a waiting target's three conditions
// carry the same message three times. Pointing them at one copy saves
// about 0.45 KB a site (BenchmarkCachedSiteBytes). The cache's objects are
// never written to (reads get deep copies), so sharing is safe.

// vocabulary holds one copy of each string of the small vocabularies the
// cached objects repeat: namespaces, kinds, condition types, statuses and
// reasons, phases, egress nodes and their addresses.
var vocabulary = newInterner(4096)

var sharedTrue, sharedFalse = true, false

// shareMeta points an object's namespace and its owners' API versions,
// kinds and flags at shared copies.
func shareMeta(m *metav1.ObjectMeta) {
	m.Namespace = vocabulary.share(m.Namespace)
	for i := range m.OwnerReferences {
		ref := &m.OwnerReferences[i]
		ref.APIVersion, ref.Kind = vocabulary.share(ref.APIVersion), vocabulary.share(ref.Kind)
		if ref.Name == m.Name {
			// A SiteIndex has its CrawlTarget's name.
			ref.Name = m.Name
		}
		ref.Controller, ref.BlockOwnerDeletion = sharedBool(ref.Controller), sharedBool(ref.BlockOwnerDeletion)
	}
}

func sharedBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return &sharedTrue
	default:
		return &sharedFalse
	}
}

// shareConditions points the conditions' types, statuses and reasons at
// the vocabulary, and each message at the first condition of the object
// that has the same text (messages name sites and queue positions, so
// they are shared within an object only).
func shareConditions(conds []metav1.Condition) {
	for i := range conds {
		c := &conds[i]
		c.Type, c.Reason = vocabulary.share(c.Type), vocabulary.share(c.Reason)
		c.Status = metav1.ConditionStatus(vocabulary.share(string(c.Status)))
		for j := range i {
			if conds[j].Message == c.Message {
				c.Message = conds[j].Message
				break
			}
		}
	}
}

// interner hands out one copy of each string it was given, up to a bound:
// past it, strings are returned as they are, so a vocabulary that turns
// out not to be small costs no more than no interning.
type interner struct {
	mu    sync.RWMutex
	max   int
	known map[string]string
}

func newInterner(max int) *interner {
	return &interner{max: max, known: map[string]string{}}
}

func (in *interner) share(s string) string {
	if s == "" {
		return s
	}
	in.mu.RLock()
	c, ok := in.known[s]
	in.mu.RUnlock()
	if ok {
		return c
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.known[s]; ok {
		return c
	}
	if len(in.known) >= in.max {
		return s
	}
	in.known[s] = s
	return s
}

// indexClusterWide adds a field index that answers only lists across all
// namespaces (client.MatchingFields without client.InNamespace), the only
// kind this operator makes: a site is owned across namespaces. The
// manager's IndexField stores every value twice, under the object's
// namespace too; each value costs a set in the informer (about 0.3 KB), so
// at 100,000 sites the unused copy is 30 MB of the manager's heap. The
// keys are those controller-runtime's cache reader asks for ("field:"
// name, "__all_namespaces/" value); the duplicate-site tests fail if that
// ever changes.
func indexClusterWide(ctx context.Context, c cache.Cache, obj client.Object, field string, extract client.IndexerFunc) error {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("index %s: %w", field, err)
	}
	return inf.AddIndexers(toolscache.Indexers{"field:" + field: func(o any) ([]string, error) {
		obj, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("index %s: %T is not an object", field, o)
		}
		vals := extract(obj)
		keys := make([]string, len(vals))
		for i, v := range vals {
			keys[i] = "__all_namespaces/" + v
		}
		return keys, nil
	}})
}
