package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExclusionSpec names a domain LohiSoftBot must never crawl, typically after
// a site owner asked for it by email.
type ExclusionSpec struct {
	// Domain is excluded together with all its subdomains: example.com
	// covers example.com and www.example.com, not notexample.com.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$')",message="spec.domain must be a lower-case DNS name or IPv4 address without scheme, port or trailing dot, such as example.com"
	Domain string `json:"domain"`

	// Reason records why the domain is excluded.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`

	// RequestedBy records who asked for the exclusion, e.g. an email address.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
}

// Reasons of an Exclusion's Ready condition.
const (
	ReasonEnforced = "Enforced"
	// ReasonBackendUnavailable: crawls are stopped and SiteIndexes emptied;
	// the index backend's rows are purged once it is reachable again.
	ReasonBackendUnavailable = "BackendUnavailable"
	// ReasonEnforcementFailed: the last reconcile failed (an API error) and
	// is retried.
	ReasonEnforcementFailed = "EnforcementFailed"
)

// ExclusionStatus reports what the exclusion matched and removed.
type ExclusionStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (True/Enforced once matching crawls are stopped and
	// their pages purged; False/BackendUnavailable while the index backend
	// cannot be reached, False/EnforcementFailed while a reconcile fails)
	// and Reconciling while it is not Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// MatchedTargets is the number of CrawlTargets the domain covers now.
	// +optional
	MatchedTargets int32 `json:"matchedTargets,omitempty"`

	// PurgedPages counts the indexed pages removed because of this exclusion.
	// +optional
	PurgedPages int64 `json:"purgedPages,omitempty"`
}

// Exclusion is a domain LohiSoftBot never crawls; its pages are purged.
// +kubebuilder:object:root=true
// +kubebuilder:deprecatedversion:warning="crawl.lohisoft.com/v1alpha1 is deprecated: use crawl.lohisoft.com/v1beta1 (docs/api.md)"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ex,categories=crawl
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.spec.domain`
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matchedTargets`
// +kubebuilder:printcolumn:name="Purged",type=integer,JSONPath=`.status.purgedPages`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Exclusion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ExclusionSpec `json:"spec"`

	// Status defaults to observedGeneration 0 when the API server reads
	// an object the operator has not written yet, so kstatus (Flux's health
	// checks, kubectl wait) sees it InProgress rather than Current.

	// +kubebuilder:default={observedGeneration: 0}
	Status ExclusionStatus `json:"status,omitempty"`
}

// ExclusionList is a list of Exclusions.
// +kubebuilder:object:root=true
type ExclusionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Exclusion `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Exclusion{}, &ExclusionList{})
}
