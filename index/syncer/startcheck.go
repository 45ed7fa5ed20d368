package syncer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// startRetry is the pause between attempts of the start-up check while the
// backend is unreachable; a Backend fails fast meanwhile, so this costs
// nothing.
const startRetry = 2 * time.Second

// ReindexRequestPrefix starts the requested-at value the start-up check
// sets on a CrawlTarget whose indexed run the backend lost; the rest is
// the time of the request.
const ReindexRequestPrefix = "reindex "

// startPlan is what a starting manager does to bring the backend in line
// with the SiteIndexes.
type startPlan struct {
	// remove are SiteIndexes whose rows in the backend must go: the
	// SiteIndex is gone, names another site now, or its site is excluded.
	// The work queue removes them, checking again.
	remove []types.NamespacedName
	// recrawl are SiteIndexes that record a complete crawl with pages
	// whose run the backend does not hold (it was emptied, or restored
	// from an older backup). Their page texts are in the backend only, so
	// the only way to get them back is to crawl the site again.
	recrawl []types.NamespacedName
}

// planStart compares what the backend holds (one row per source) with the
// SiteIndexes. Where they agree it plans nothing: a restart with nothing
// changed writes nothing. Rows without a run come from before the backend
// recorded runs and are taken as held.
func planStart(held []store.SourceRun, sis []crawlv1.SiteIndex, excluded func(host string) bool) startPlan {
	var plan startPlan
	bySource := make(map[string]*crawlv1.SiteIndex, len(sis))
	for i := range sis {
		bySource[SourceOf(sis[i].Namespace, sis[i].Name)] = &sis[i]
	}
	holds := make(map[string]store.SourceRun, len(held))
	for _, h := range held {
		key, ok := parseSource(h.Source)
		if !ok {
			continue
		}
		si := bySource[h.Source]
		st, err := site.Parse(siteOf(si))
		switch {
		case si == nil, err != nil, !slices.Contains(st.Covered(), h.Site), excluded(st.Host):
			plan.remove = append(plan.remove, key)
		default:
			holds[h.Source] = h
		}
	}
	for i := range sis {
		si := &sis[i]
		if !si.Status.Complete || si.Status.Stats.Pages == 0 || si.Status.Run == "" {
			// Nothing indexed to lose, or a first crawl still reporting:
			// its next report or its retry writes the backend.
			continue
		}
		if st, err := site.Parse(si.Spec.Site); err != nil || excluded(st.Host) {
			continue
		}
		h, ok := holds[SourceOf(si.Namespace, si.Name)]
		if ok && (h.Run == si.Status.Run || h.Run == "") {
			continue
		}
		plan.recrawl = append(plan.recrawl, client.ObjectKeyFromObject(si))
	}
	return plan
}

func siteOf(si *crawlv1.SiteIndex) string {
	if si == nil {
		return ""
	}
	return si.Spec.Site
}

// startCheck runs once per leadership, after the cache has synced: it
// reads what the backend holds in one query, compares it with the
// SiteIndexes in the cache, queues the removals and asks for the crawls
// planStart finds.
type startCheck struct {
	syncer *Syncer
	cache  cache.Cache
}

func (c *startCheck) Start(ctx context.Context) error {
	if !c.cache.WaitForCacheSync(ctx) {
		return nil // stopping
	}
	logger := log.FromContext(ctx).WithName("index-start-check")
	waiting := false
	for {
		plan, err := c.plan(ctx)
		if err == nil {
			for _, key := range plan.remove {
				si := &crawlv1.SiteIndex{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
				select {
				case c.syncer.sweep <- event.TypedGenericEvent[client.Object]{Object: si}:
				case <-ctx.Done():
					return nil
				}
			}
			requested := 0
			for _, key := range plan.recrawl {
				ok, err := c.syncer.requestCrawl(ctx, key)
				if err != nil {
					logger.Error(err, "ask for a crawl to rebuild the index", "target", key)
				}
				if ok {
					requested++
				}
			}
			logger.Info("index checked against the SiteIndexes", "removals", len(plan.remove),
				"notHeld", len(plan.recrawl), "crawlsRequested", requested)
			c.syncer.markChecked()
			return nil
		}
		switch {
		case !errors.Is(err, store.ErrUnavailable):
			logger.Error(err, "index start-up check failed; retrying", "in", startRetry)
		case !waiting:
			logger.Info("index start-up check waits for the index backend", "reason", err.Error())
			waiting = true
		}
		select {
		case <-time.After(startRetry):
		case <-ctx.Done():
			return nil
		}
	}
}

// plan reads the backend first: a SiteIndex created after that is not in
// its list whatever the cache says, so its rows cannot be removed by
// mistake.
func (c *startCheck) plan(ctx context.Context) (startPlan, error) {
	held, err := c.syncer.Store.Sources(ctx)
	if err != nil {
		return startPlan{}, fmt.Errorf("list indexed sources: %w", err)
	}
	// planStart only reads them: no copy of every SiteIndex in the cache.
	var sis crawlv1.SiteIndexList
	if err := c.syncer.Client.List(ctx, &sis, client.UnsafeDisableDeepCopy); err != nil {
		return startPlan{}, fmt.Errorf("list SiteIndexes: %w", err)
	}
	domains, err := c.syncer.excludedDomains(ctx, c.syncer.Client)
	if err != nil {
		return startPlan{}, err
	}
	watched := sis.Items[:0]
	for _, si := range sis.Items {
		if c.syncer.Namespaces.Has(si.Namespace) {
			watched = append(watched, si)
		}
	}
	return planStart(held, watched, func(host string) bool { return inAny(host, domains) }), nil
}

// requestCrawl asks for one crawl of the SiteIndex's CrawlTarget (same
// name) the way a person would, with the requested-at annotation: the
// target's schedule, suspend and the site's Retry-After still apply, and
// status.lastHandledRequestedAt shows it was handled. A target with a
// request not yet handled is left alone. It reports whether it asked.
func (s *Syncer) requestCrawl(ctx context.Context, key types.NamespacedName) (bool, error) {
	ct := &crawlv1.CrawlTarget{}
	if err := s.Client.Get(ctx, key, ct); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if v := ct.Annotations[crawlv1.RequestedAtAnnotation]; v != "" && v != ct.Status.LastHandledRequestedAt {
		return false, nil
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	value := ReindexRequestPrefix + now().UTC().Format(time.RFC3339)
	before := ct.DeepCopy()
	if ct.Annotations == nil {
		ct.Annotations = map[string]string{}
	}
	ct.Annotations[crawlv1.RequestedAtAnnotation] = value
	// No optimistic lock: the patch sets one annotation, and the
	// reconciler's status patches, frequent at a start, would make a lock
	// lose the request.
	if err := s.Client.Patch(ctx, ct, client.MergeFrom(before)); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	reindexRequests.Inc()
	if s.Recorder != nil {
		s.Recorder.Eventf(ct, nil, corev1.EventTypeWarning, "IndexMissing", "RequestCrawl",
			"the index backend does not hold the last crawl of %s (emptied, or restored from an older backup); asked for a crawl to rebuild it",
			ct.Spec.URL)
	}
	return true, nil
}
