package controllers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// matchingExclusion returns an Exclusion covering host, or nil. With several,
// the one with the longest domain (the most specific) is reported.
func matchingExclusion(ctx context.Context, c client.Reader, host string) (*crawlv1.Exclusion, error) {
	var list crawlv1.ExclusionList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Exclusions: %w", err)
	}
	var best *crawlv1.Exclusion
	for i := range list.Items {
		ex := &list.Items[i]
		if !ex.DeletionTimestamp.IsZero() || !site.InDomain(host, ex.Spec.Domain) {
			continue
		}
		if best == nil || len(ex.Spec.Domain) > len(best.Spec.Domain) ||
			(len(ex.Spec.Domain) == len(best.Spec.Domain) && ex.Name < best.Name) {
			best = ex
		}
	}
	return best, nil
}

// targetsInDomain lists the CrawlTargets whose host is domain or below it.
func targetsInDomain(ctx context.Context, c client.Reader, domain string) ([]crawlv1.CrawlTarget, error) {
	// Every target is looked at, few match: only the matches are copied
	// out of the cache (a copy of 100,000 would be 150 MB of garbage).
	var list crawlv1.CrawlTargetList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list CrawlTargets: %w", err)
	}
	var out []crawlv1.CrawlTarget
	for i := range list.Items {
		if ct := &list.Items[i]; site.InDomain(site.HostOf(ct.Spec.URL), domain) {
			out = append(out, *ct.DeepCopy())
		}
	}
	return out, nil
}

// Excluded reports whether an Exclusion covers host.
func Excluded(ctx context.Context, c client.Reader, host string) (bool, error) {
	ex, err := matchingExclusion(ctx, c, host)
	return ex != nil, err
}

func requestsFor(targets []crawlv1.CrawlTarget) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(targets))
	for _, t := range targets {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
	}
	return out
}
