// Package uninstall removes what the manager made and nothing the users
// made: crawler Pods and the operator-managed crawler NetworkPolicies. Each
// Pod's token Secret is owned by its Pod, so the garbage collector removes
// it with the Pod: the cleanup needs no right on Secrets at all, and above
// all none to list them, which would let it read every Secret in its
// scope. The chart runs it (`manager cleanup`) as a post-delete hook of
// `helm uninstall`, once the manager is gone and so can start no more
// crawls. CrawlTargets, Exclusions and SiteIndexes stay, as do their CRDs
// (crds.keep); a reinstall picks the targets up again and crawls those
// whose run was cut short.
package uninstall

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// Selector matches every object the manager makes for crawls: crawler
// Pods, their Secrets and the crawler NetworkPolicy all carry it (Cleanup
// lists only the Pods and NetworkPolicies by it).
var Selector = client.MatchingLabels{crawlpod.LabelName: crawlpod.NameValue, crawlpod.LabelManagedBy: crawlpod.ManagedByValue}

// Removed counts what Cleanup deleted.
type Removed struct{ Pods, NetworkPolicies int }

// Cleanup deletes the manager's crawl objects in the namespaces given, or
// in every namespace when none are; each Pod gets its grace period, and
// its token Secret goes once the Pod is gone.
func Cleanup(ctx context.Context, c client.Client, namespaces []string) (Removed, error) {
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var r Removed
	for _, kind := range []struct {
		list  client.ObjectList
		count *int
		name  string
	}{
		{&corev1.PodList{}, &r.Pods, "crawler Pods"},
		{&networkingv1.NetworkPolicyList{}, &r.NetworkPolicies, "crawler NetworkPolicies"},
	} {
		for _, ns := range namespaces {
			n, err := deleteAll(ctx, c, kind.list, ns)
			*kind.count += n
			if err != nil {
				return r, fmt.Errorf("delete %s in %q: %w", kind.name, ns, err)
			}
		}
	}
	return r, nil
}

// deleteAll lists and deletes one by one rather than DeleteAllOf: the
// count says what went, and deletecollection would be one more right.
func deleteAll(ctx context.Context, c client.Client, list client.ObjectList, ns string) (int, error) {
	if err := c.List(ctx, list, Selector, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range objs {
		if err := c.Delete(ctx, o.(client.Object)); client.IgnoreNotFound(err) != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
