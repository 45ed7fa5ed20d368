package controllers

import (
	"context"
	"fmt"
	"maps"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;create;update

// ensureNetworkPolicy makes the namespace's crawler NetworkPolicy say what
// the flags say, before a crawler Pod is created there: a Pod that starts
// first could reach the cluster until the policy lands. It runs once per
// crawl start, so it reads the API server directly instead of caching (and
// watching) every NetworkPolicy of the cluster; a policy someone edited or
// deleted is put back before the next crawl in its namespace.
//
// The policy has no owner. It selects crawler Pods only, so without them it
// does nothing; owned by the namespace's CrawlTargets, the garbage
// collector would delete it together with the last target while that
// target's Pods are still terminating, and every new target would rewrite
// its owner list.
func (r *CrawlTargetReconciler) ensureNetworkPolicy(ctx context.Context, namespace string) error {
	if !r.NetworkPolicy.Enabled {
		return nil
	}
	want := crawlpod.NetworkPolicy(namespace, r.NetworkPolicy)
	got := &networkingv1.NetworkPolicy{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), got)
	if apierrors.IsNotFound(err) {
		err = r.Create(ctx, want)
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create crawler NetworkPolicy %s/%s: %w", namespace, want.Name, err)
		}
		// Created since the read: check what it says.
		err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), got)
	}
	if err != nil {
		return fmt.Errorf("get crawler NetworkPolicy %s/%s: %w", namespace, want.Name, err)
	}
	if equality.Semantic.DeepEqual(got.Spec, want.Spec) && labels.SelectorFromSet(want.Labels).Matches(labels.Set(got.Labels)) {
		return nil
	}
	got.Spec = want.Spec
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	maps.Copy(got.Labels, want.Labels)
	if err := r.Update(ctx, got); err != nil {
		return fmt.Errorf("update crawler NetworkPolicy %s/%s: %w", namespace, want.Name, err)
	}
	return nil
}
