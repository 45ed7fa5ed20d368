package controllers

import (
	"context"
	"fmt"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// deleteActiveCrawls deletes a target's unfinished crawler Pods and their
// token Secrets, so a stolen token dies with its run. The garbage
// collector would remove each Secret with its Pod; deleting it by name
// (the delete right, no read) does not wait for the collector. It returns
// how many Pods it deleted.
func deleteActiveCrawls(ctx context.Context, c client.Client, ct *crawlv1.CrawlTarget) (int, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ct.Namespace),
		client.MatchingLabels{crawlpod.LabelTargetUID: string(ct.UID)}); err != nil {
		return 0, fmt.Errorf("list crawler Pods: %w", err)
	}
	deleted := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if crawlpod.Finished(p) {
			continue
		}
		if p.DeletionTimestamp == nil {
			if err := c.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				return deleted, fmt.Errorf("delete crawler Pod %s: %w", p.Name, err)
			}
			deleted++
		}
		secret := &corev1.Secret{}
		secret.Namespace, secret.Name = p.Namespace, crawlpod.SecretName(p.Name)
		if err := c.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
			return deleted, fmt.Errorf("delete run token Secret: %w", err)
		}
	}
	return deleted, nil
}

// clearIndex empties a SiteIndex's status: its pages and the crawl they
// came from.
func clearIndex(ctx context.Context, c client.Client, si *crawlv1.SiteIndex) error {
	if indexEmpty(si) {
		return nil
	}
	if err := c.Status().Patch(ctx, si, clearPatch("")); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("clear SiteIndex %s/%s: %w", si.Namespace, si.Name, err)
	}
	return nil
}

// clearIndexLocked empties a SiteIndex's status like clearIndex, but only
// the version given: a conflict means someone wrote meanwhile, and the
// caller must look again before it counts what it removed. It reports
// whether it emptied the SiteIndex.
func clearIndexLocked(ctx context.Context, c client.Client, si *crawlv1.SiteIndex) (bool, error) {
	if indexEmpty(si) {
		return false, nil
	}
	err := c.Status().Patch(ctx, si, clearPatch(si.ResourceVersion))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("clear SiteIndex %s/%s: %w", si.Namespace, si.Name, err)
	}
	return true, nil
}

// indexEmpty reports whether a SiteIndex records no crawl. It reads only
// what the manager's cache keeps of a SiteIndex (CacheOptions).
func indexEmpty(si *crawlv1.SiteIndex) bool {
	return si.Status.Run == "" && si.Status.CrawlTime == nil && si.Status.Stats.Pages == 0
}

// clearPatch removes the whole status, only at resourceVersion when one is
// given. It is written out rather than computed from the SiteIndex at
// hand: the cached copy holds no page records, so a patch computed from
// it would leave them in place.
func clearPatch(resourceVersion string) client.Patch {
	if resourceVersion == "" {
		return client.RawPatch(types.MergePatchType, []byte(`{"status":null}`))
	}
	return client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q},"status":null}`, resourceVersion))
}
