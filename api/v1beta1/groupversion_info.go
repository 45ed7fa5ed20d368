// Package v1beta1 contains the API types of the crawl.lohisoft.com group:
// CrawlTarget (a site to crawl), Exclusion (a domain never to crawl) and
// SiteIndex (what a crawl of a site found). It is the storage version and
// the hub every other version converts through; docs/api.md says what
// changed from v1alpha1 and why.
// +kubebuilder:object:generate=true
// +groupName=crawl.lohisoft.com
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "crawl.lohisoft.com", Version: "v1beta1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Condition types shared by the kinds. Ready, Reconciling and Stalled follow
// the kstatus conventions so `kubectl wait --for=condition=Ready`, Flux and
// Argo CD health checks understand them.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)
