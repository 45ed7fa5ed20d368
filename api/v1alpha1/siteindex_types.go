package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// Size caps of a SiteIndex: the crawl document's limits, defined once in
// package runreport (the crawler/manager contract). The kubebuilder markers
// below must repeat them as literals; TestMarkersMatchLimits checks the
// generated CRD against these constants.
const (
	MaxIndexedPages = runreport.MaxPages
	MaxURLLength    = runreport.MaxURLLength
	MaxTitleLength  = runreport.MaxTitleLength
)

// SiteIndexSpec names the site the index belongs to. The operator creates
// SiteIndexes; users read them.
type SiteIndexSpec struct {
	// Site is scheme://host:port.
	// +kubebuilder:validation:MaxLength=300
	Site string `json:"site"`
}

// IndexedPage is the compact record of one indexed page: which page, its
// title, how it answered and when. The page's other kept fields (meta
// description, h1–h3 headings, inbound link texts) and the run's off-site
// links live in the index backend only, where search reads them
// (/api/v1/sites/{host}/pages shows them): at 100,000 sites, etcd and the
// manager's cache cannot hold them. There is no field for body text
// anywhere.
type IndexedPage struct {
	// URL of the page, after redirects, relative to spec.site: its path
	// and query ("/breads/sourdough.html?lang=en"). The site is named once,
	// in spec.site.
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// StatusCode is the HTTP status the page was served with.
	// +optional
	StatusCode int32 `json:"statusCode,omitempty"`
	// Title is the page's <title> text.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Title string `json:"title,omitempty"`
	// FetchedAt is when the page was fetched.
	// +optional
	FetchedAt *metav1.Time `json:"fetchedAt,omitempty"`
}

// RobotsStatus records how the site answered for robots.txt.
type RobotsStatus struct {
	// StatusCode of robots.txt; 0 when it could not be fetched.
	// +optional
	StatusCode int32 `json:"statusCode,omitempty"`
	// FetchedAt is when robots.txt was fetched.
	// +optional
	FetchedAt *metav1.Time `json:"fetchedAt,omitempty"`
}

// IndexStats summarises a crawl.
type IndexStats struct {
	// Pages is how many pages the crawl indexed.
	// +optional
	Pages int32 `json:"pages,omitempty"`
	// Skipped counts URLs found but not indexed (robots.txt, noindex, budget, errors).
	// +optional
	Skipped int32 `json:"skipped,omitempty"`
	// BytesReceived is what the crawl received from the site over the
	// wire: status lines, headers and bodies of robots.txt and every page.
	// +kubebuilder:validation:Minimum=0
	// +optional
	BytesReceived int64 `json:"bytesReceived,omitempty"`
	// PagesUnchanged counts the pages the site answered 304 Not Modified
	// to the crawl's conditional requests: the index kept what it had of
	// them and refreshed their fetch time.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PagesUnchanged int32 `json:"pagesUnchanged,omitempty"`
}

// CrawlProgress follows a recrawl while it runs, leaving the pages of the
// last complete crawl in place until the new one delivers its result.
type CrawlProgress struct {
	// Run is the crawler Pod of the recrawl.
	// +kubebuilder:validation:MaxLength=253
	Run string `json:"run"`
	// Pages is how many pages the run has indexed so far.
	Pages int32 `json:"pages"`
	// UpdatedAt is when the run last reported progress.
	// +optional
	UpdatedAt *metav1.Time `json:"updatedAt,omitempty"`
}

// SiteIndexStatus is what the latest crawl of the site found.
type SiteIndexStatus struct {
	// Pages are the compact records of the pages of the last complete
	// crawl (of the running one during a first crawl): at most 20. Their
	// full fields are in the index backend.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Pages []IndexedPage `json:"pages,omitempty"`
	// Robots is how the site answered for robots.txt.
	// +optional
	Robots *RobotsStatus `json:"robots,omitempty"`
	// CrawledAt is when the crawl that produced Pages finished.
	// +optional
	CrawledAt *metav1.Time `json:"crawledAt,omitempty"`
	// Stats counts the pages indexed and the URLs skipped.
	// +optional
	Stats IndexStats `json:"stats,omitempty"`
	// Run is the crawler Pod that wrote this status. The index backend
	// records the run of the rows it holds, so a manager start can tell
	// which SiteIndexes it already has.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Run string `json:"run,omitempty"`
	// Complete is true once Run delivered its final result; false while
	// progress is still arriving.
	// +optional
	Complete bool `json:"complete,omitempty"`
	// RetryAfter is the earliest time the site may be crawled again, when the
	// site asked the bot to back off.
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
	// Refused is why the run's crawl refused the site's address before it
	// could index anything (an IPv6-only host, no A record, a non-public
	// address): input that will not change by itself. The CrawlTarget
	// then shows Stalled instead of retrying on a timer.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Refused string `json:"refused,omitempty"`
	// Progress follows a recrawl in progress; Pages keep the last complete
	// crawl until it ends.
	// +optional
	Progress *CrawlProgress `json:"progress,omitempty"`
	// EgressIP is the source address Run was verified to leave from: an
	// echo service outside the cluster saw it before the run's first
	// request to the site, and it is the egress node's published address.
	// Empty when the manager runs without --egress-echo-url.
	// +kubebuilder:validation:MaxLength=15
	// +optional
	EgressIP string `json:"egressIP,omitempty"`
	// Site is the site Pages are on when it is not spec.site: the https
	// site (port 443) of a plain-HTTP spec.site (port 80) whose start URL
	// redirected there, on the same host. Empty: Pages are on spec.site.
	// +kubebuilder:validation:MaxLength=300
	// +optional
	Site string `json:"site,omitempty"`
}

// SiteIndex holds the pages found by the latest crawl of one site. It has
// the name of its CrawlTarget and is owned by it.
// +kubebuilder:object:root=true
// +kubebuilder:deprecatedversion:warning="crawl.lohisoft.com/v1alpha1 is deprecated: use crawl.lohisoft.com/v1beta1 (docs/api.md)"
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=siteindexes,shortName=si,categories=crawl
// +kubebuilder:printcolumn:name="Site",type=string,JSONPath=`.spec.site`
// +kubebuilder:printcolumn:name="Pages",type=integer,JSONPath=`.status.stats.pages`
// +kubebuilder:printcolumn:name="Crawled",type=date,JSONPath=`.status.crawledAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SiteIndex struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SiteIndexSpec   `json:"spec"`
	Status SiteIndexStatus `json:"status,omitempty"`
}

// SiteIndexList is a list of SiteIndexes.
// +kubebuilder:object:root=true
type SiteIndexList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SiteIndex `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SiteIndex{}, &SiteIndexList{})
}
