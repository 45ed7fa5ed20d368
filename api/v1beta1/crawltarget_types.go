package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RequestedAtAnnotation asks for one crawl now: any new value triggers a crawl
// and is echoed in status.lastHandledRequestedAt. It lives in metadata, not
// spec, so GitOps tools never see drift.
const RequestedAtAnnotation = "crawl.lohisoft.com/requested-at"

// CrawlPolicy says which crawls of a target may start.
// +kubebuilder:validation:Enum=Scheduled;OnRequest;Suspended
type CrawlPolicy string

const (
	// CrawlPolicyScheduled crawls every spec.interval, and whenever the
	// requested-at annotation asks.
	CrawlPolicyScheduled CrawlPolicy = "Scheduled"
	// CrawlPolicyOnRequest crawls only when the requested-at annotation
	// asks (a failed requested crawl is still retried).
	CrawlPolicyOnRequest CrawlPolicy = "OnRequest"
	// CrawlPolicySuspended starts no crawl; one already running finishes.
	CrawlPolicySuspended CrawlPolicy = "Suspended"
)

// CrawlTargetSpec declares one site to crawl.
//
// The URL rules are CEL so that `kubectl apply` rejects a bad manifest with a
// message naming spec.url instead of the operator failing later.
type CrawlTargetSpec struct {
	// URL is where the crawl starts. Its scheme, host and port name the site;
	// the crawl never leaves that site, except for one move: a plain-HTTP
	// URL on port 80 that redirects to https on the same host (port 443)
	// is crawled there, under that site's robots.txt (status.site shows
	// it). http or https only; the host must be
	// a DNS name or an IPv4 address (the bot never uses IPv6); a port, if
	// given, is 1 to 65535.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self)",message="spec.url must be an absolute URL such as https://example.com/"
	// +kubebuilder:validation:XValidation:rule="!isURL(self) || url(self).getScheme() in ['http', 'https']",message="spec.url must use the http or https scheme"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z][-+.A-Za-z0-9]*://[^/?#]*\\\\[')",message="spec.url must not be an IPv6 address: LohiSoftBot crawls over IPv4 only"
	// +kubebuilder:validation:XValidation:rule="!isURL(self) || self.matches('^[A-Za-z][-+.A-Za-z0-9]*://[^/?#]*\\\\[') || self.matches('^[A-Za-z][-+.A-Za-z0-9]*://([^/?#@]*@)?[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\\\\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\\\\.?(:[0-9]{1,5})?([/?#].*)?$')",message="spec.url host must be a DNS name or an IPv4 address"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z][-+.A-Za-z0-9]*://[^/?#]*@')",message="spec.url must not contain credentials: LohiSoftBot never logs in"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[A-Za-z][-+.A-Za-z0-9]*://[^/?#\\\\[]*:[0-9]*([/?#].*)?$') || self.matches('^[A-Za-z][-+.A-Za-z0-9]*://[^/?#\\\\[]*:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|0*[1-9][0-9]{0,3})([/?#].*)?$')",message="spec.url port must be a number from 1 to 65535"
	URL string `json:"url"`

	// MaxPages is the page budget of one crawl. The bot promises site owners
	// at most 20 pages per site.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +kubebuilder:default=20
	// +optional
	MaxPages *int32 `json:"maxPages,omitempty"`

	// Interval is the time from the end of one successful crawl to the start
	// of the next, as a duration such as 168h or 36h30m (units h, m, s, ms).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h')",message="spec.interval must be at least 1h"
	// +kubebuilder:default="168h"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Delay is the gap between the starts of two requests to the site, as a
	// duration such as 2s or 500ms. The operator raises it to its
	// --min-crawl-delay floor, and the crawler to the site's robots.txt
	// Crawl-delay.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('60s')",message="spec.delay must be at most 60s"
	// +kubebuilder:default="1s"
	// +optional
	Delay *metav1.Duration `json:"delay,omitempty"`

	// CrawlPolicy says which crawls may start: Scheduled (every interval,
	// and on request), OnRequest (only when the
	// crawl.lohisoft.com/requested-at annotation asks) or Suspended (none;
	// a crawl already running finishes).
	// +kubebuilder:default=Scheduled
	// +optional
	CrawlPolicy CrawlPolicy `json:"crawlPolicy,omitempty"`
}

// CrawlPhase is a one-word summary of where a CrawlTarget is.
// +kubebuilder:validation:Enum=Pending;Waiting;Running;Succeeded;Failed;Excluded;Duplicate
type CrawlPhase string

const (
	PhasePending   CrawlPhase = "Pending"
	PhaseWaiting   CrawlPhase = "Waiting"
	PhaseRunning   CrawlPhase = "Running"
	PhaseSucceeded CrawlPhase = "Succeeded"
	PhaseFailed    CrawlPhase = "Failed"
	PhaseExcluded  CrawlPhase = "Excluded"
	PhaseDuplicate CrawlPhase = "Duplicate"
)

// Condition types and reasons of a CrawlTarget, beyond Ready/Reconciling/Stalled.
const (
	// ConditionCrawling is True while a crawler Pod runs for the target.
	ConditionCrawling = "Crawling"

	ReasonCrawled            = "Crawled"
	ReasonCrawling           = "Crawling"
	ReasonCrawlFailed        = "CrawlFailed"
	ReasonExcluded           = "Excluded"
	ReasonDuplicateSite      = "DuplicateSite"
	ReasonWaitingForCapacity = "WaitingForCapacity"
	ReasonNoEgressNode       = "NoEgressNode"
	ReasonSuspended          = "Suspended"
	// ReasonAwaitingRequest: spec.crawlPolicy is OnRequest and no crawl
	// has been requested yet.
	ReasonAwaitingRequest = "AwaitingRequest"
	ReasonIdle            = "Idle"
	// ReasonPending: created, not crawled yet, nothing in the way.
	ReasonPending = "Pending"
	// ReasonInvalidURL: spec.url names no crawlable site (CRD validation
	// was bypassed). Stalled until spec changes.
	ReasonInvalidURL = "InvalidURL"
	// ReasonSiteIndexConflict: a SiteIndex of the target's name exists and
	// is not the target's. Stalled until a person removes it.
	ReasonSiteIndexConflict = "SiteIndexConflict"
	// ReasonReconcileError: the last reconcile failed part-way (an API
	// error); Ready is Unknown and Reconciling True until a retry succeeds.
	// The rest of the status is what was last observed.
	ReasonReconcileError = "ReconcileError"
	// ReasonInvalidInput: the crawler refused its input (exit code 2, e.g.
	// a URL it cannot crawl). Stalled until spec changes or a crawl is
	// requested; never retried on a timer.
	ReasonInvalidInput = "InvalidInput"
	// ReasonAddressRefused: the crawl refused the site's address (IPv6
	// only, no A record, not public). Stalled like ReasonInvalidInput.
	ReasonAddressRefused = "AddressRefused"
)

// CrawlTargetStatus is what the operator observed and did.
type CrawlTargetStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled and Crawling.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Phase is a one-word summary of the conditions for kubectl and
	// dashboards. Decide on the conditions, not on it: new phases may be
	// added. Deprecated: it goes away in v1.
	// +optional
	Phase CrawlPhase `json:"phase,omitempty"`

	// Site is the scheme://host:port the target crawls: spec.url's site,
	// or its https site (port 443, same host) once a crawl found the
	// plain-HTTP start URL redirecting there.
	// +kubebuilder:validation:MaxLength=300
	// +optional
	Site string `json:"site,omitempty"`

	// Host is the site's host name, shown by kubectl.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Host string `json:"host,omitempty"`

	// PagesIndexed is the number of pages the last successful crawl indexed.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	// +optional
	PagesIndexed int32 `json:"pagesIndexed,omitempty"`

	// EgressNodeName is the Node the site is pinned to for its egress; the
	// site keeps it while it is healthy so the site always sees the same
	// source IP.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	EgressNodeName string `json:"egressNodeName,omitempty"`

	// EgressIP is the public IPv4 address of the egress node.
	// +kubebuilder:validation:MaxLength=15
	// +optional
	EgressIP string `json:"egressIP,omitempty"`

	// LastCrawlTime is when the last successful crawl finished.
	// +optional
	LastCrawlTime *metav1.Time `json:"lastCrawlTime,omitempty"`

	// NextCrawlTime is the earliest time of the next crawl.
	// +optional
	NextCrawlTime *metav1.Time `json:"nextCrawlTime,omitempty"`

	// LastHandledRequestedAt echoes the crawl.lohisoft.com/requested-at
	// annotation value whose crawl was started.
	// +optional
	LastHandledRequestedAt string `json:"lastHandledRequestedAt,omitempty"`

	// Runs counts the crawls started; the crawler Pod of run N is named
	// <target>-crawl-N, which keeps Pod creation idempotent.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Runs int64 `json:"runs,omitempty"`

	// LastFinishedRun is the last run whose outcome this status records.
	// +kubebuilder:validation:Minimum=0
	// +optional
	LastFinishedRun int64 `json:"lastFinishedRun,omitempty"`

	// ConsecutiveFailures drives the exponential retry backoff.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`

	// LastFailureTime is when the last failed crawl ended.
	// +optional
	LastFailureTime *metav1.Time `json:"lastFailureTime,omitempty"`

	// RetryAfterTime is the time before which the site asked not to be
	// crawled again (HTTP 429/503 Retry-After, reported by the crawler).
	// +optional
	RetryAfterTime *metav1.Time `json:"retryAfterTime,omitempty"`
}

// CrawlTarget is a site LohiSoftBot crawls, at most 20 pages at a time.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ct,categories=crawl
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.status.host`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Pages",type=integer,JSONPath=`.status.pagesIndexed`
// +kubebuilder:printcolumn:name="Egress IP",type=string,JSONPath=`.status.egressIP`
// +kubebuilder:printcolumn:name="Last Crawl",type=date,JSONPath=`.status.lastCrawlTime`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.crawlPolicy`,priority=1
// +kubebuilder:printcolumn:name="Egress Node",type=string,JSONPath=`.status.egressNodeName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CrawlTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CrawlTargetSpec `json:"spec"`

	// Status defaults to observedGeneration 0 when the API server reads
	// an object the operator has not written yet, so kstatus (Flux's health
	// checks, kubectl wait) sees it InProgress rather than Current.

	// +kubebuilder:default={observedGeneration: 0}
	Status CrawlTargetStatus `json:"status,omitempty"`
}

// CrawlTargetList is a list of CrawlTargets.
// +kubebuilder:object:root=true
type CrawlTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CrawlTarget `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CrawlTarget{}, &CrawlTargetList{})
}
