package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// CacheOptions limits the manager's cache to what the reconcilers read:
// crawler Pods and egress Nodes, not every Pod and Node of the cluster.
func CacheOptions(sel egress.Selector) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:  {Label: labels.SelectorFromSet(labels.Set{crawlpod.LabelName: crawlpod.NameValue})},
		&corev1.Node{}: {Label: labels.SelectorFromSet(sel.Labels())},
	}}
}
