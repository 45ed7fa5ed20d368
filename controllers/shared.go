package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
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
	var list crawlv1.CrawlTargetList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list CrawlTargets: %w", err)
	}
	var out []crawlv1.CrawlTarget
	for _, ct := range list.Items {
		if site.InDomain(site.HostOf(ct.Spec.URL), domain) {
			out = append(out, ct)
		}
	}
	return out, nil
}

// deleteActiveCrawls deletes a target's unfinished crawler Pods and their
// token Secrets, so a stolen token dies with its run. It returns how many
// Pods it deleted.
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
	if len(si.Status.Pages) == 0 && si.Status.CrawledAt == nil {
		return nil
	}
	before := si.DeepCopy()
	si.Status = crawlv1.SiteIndexStatus{}
	if err := c.Status().Patch(ctx, si, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("clear SiteIndex %s/%s: %w", si.Namespace, si.Name, err)
	}
	return nil
}

// clearIndexLocked empties a SiteIndex's status like clearIndex, but only
// the version given: a conflict means someone wrote meanwhile, and the
// caller must look again before it counts what it removed. It reports
// whether it emptied the SiteIndex.
func clearIndexLocked(ctx context.Context, c client.Client, si *crawlv1.SiteIndex) (bool, error) {
	if len(si.Status.Pages) == 0 && si.Status.CrawledAt == nil {
		return false, nil
	}
	before := si.DeepCopy()
	si.Status = crawlv1.SiteIndexStatus{}
	err := c.Status().Patch(ctx, si, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("clear SiteIndex %s/%s: %w", si.Namespace, si.Name, err)
	}
	return true, nil
}

func requestsFor(targets []crawlv1.CrawlTarget) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(targets))
	for _, t := range targets {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
	}
	return out
}

// podFinishedAt is when the crawler container ended, or fallback.
func podFinishedAt(pod *corev1.Pod, fallback time.Time) time.Time {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && !t.FinishedAt.IsZero() {
			return t.FinishedAt.Time
		}
	}
	return fallback
}

// podStartedAt is when the crawler container started, if it did.
func podStartedAt(pod *corev1.Pod) time.Time {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && !t.StartedAt.IsZero() {
			return t.StartedAt.Time
		}
	}
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return time.Time{}
}

// podFailure explains a failed Pod in one line.
func podFailure(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg := fmt.Sprintf("exit code %d", t.ExitCode)
			if t.Reason != "" {
				msg += " (" + t.Reason + ")"
			}
			if t.Message != "" {
				msg += ": " + lastLine(t.Message)
			}
			return msg
		}
	}
	if pod.Status.Reason != "" {
		return pod.Status.Reason + ": " + pod.Status.Message
	}
	return "unknown reason"
}

func lastLine(s string) string {
	const max = 200
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			s = s[i+1:]
			break
		}
	}
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Excluded reports whether an Exclusion covers host.
func Excluded(ctx context.Context, c client.Reader, host string) (bool, error) {
	ex, err := matchingExclusion(ctx, c, host)
	return ex != nil, err
}

// CacheOptions limits the manager's cache to what the reconcilers read:
// crawler Pods and egress Nodes, not every Pod and Node of the cluster.
func CacheOptions(egress crawlpod.Egress) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:  {Label: labels.SelectorFromSet(labels.Set{crawlpod.LabelName: crawlpod.NameValue})},
		&corev1.Node{}: {Label: labels.SelectorFromSet(egress.Labels())},
	}}
}
