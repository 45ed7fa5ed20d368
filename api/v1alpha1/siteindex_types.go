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
	MaxIndexedPages      = runreport.MaxPages
	MaxURLLength         = runreport.MaxURLLength
	MaxTitleLength       = runreport.MaxTitleLength
	MaxDescriptionLength = runreport.MaxDescriptionLength
	MaxHeadingsPerLevel  = runreport.MaxHeadingsPerLevel
	MaxHeadingLength     = runreport.MaxHeadingLength
	MaxInboundAnchors    = runreport.MaxInboundAnchors
	MaxAnchorLength      = runreport.MaxAnchorLength
	MaxOffSiteLinks      = runreport.MaxOffSiteLinks
	MaxOffSiteAnchors    = runreport.MaxOffSiteAnchors
	MaxLangLength        = runreport.MaxLangLength
)

// SiteIndexSpec names the site the index belongs to. The operator creates
// SiteIndexes; users read them.
type SiteIndexSpec struct {
	// Site is scheme://host:port.
	// +kubebuilder:validation:MaxLength=300
	Site string `json:"site"`
}

// IndexedPage is everything LohiSoftBot keeps of one page. There is no field
// for body text on purpose.
type IndexedPage struct {
	// URL of the page, after redirects.
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// StatusCode is the HTTP status the page was served with.
	// +optional
	StatusCode int32 `json:"statusCode,omitempty"`
	// Title is the page's <title> text.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Title string `json:"title,omitempty"`
	// Description is the page's <meta name="description"> content.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`
	// Headings are the page's h1, h2 and h3 texts.
	// +optional
	Headings Headings `json:"headings,omitempty"`
	// InboundAnchors are texts of links pointing to this page.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	InboundAnchors []string `json:"inboundAnchors,omitempty"`
	// FetchedAt is when the page was fetched.
	// +optional
	FetchedAt *metav1.Time `json:"fetchedAt,omitempty"`
	// Lang is the page's language tag from <html lang> or
	// Content-Language, lower-case; it picks the stemmer of the index.
	// +kubebuilder:validation:MaxLength=35
	// +kubebuilder:validation:Pattern=`^[a-z]{2,3}(-[a-z0-9]{1,8})*$`
	// +optional
	Lang string `json:"lang,omitempty"`
}

// Headings are a page's h1–h3 texts in document order.
type Headings struct {
	// H1 are the texts of the page's <h1> elements.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	H1 []string `json:"h1,omitempty"`
	// H2 are the texts of the page's <h2> elements.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	H2 []string `json:"h2,omitempty"`
	// H3 are the texts of the page's <h3> elements.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	H3 []string `json:"h3,omitempty"`
}

// OffSiteLink is a link from this site to a page elsewhere, with the texts
// used for it. The search index adds those texts to the linked page, which
// is how a site's pages learn what other sites call them.
type OffSiteLink struct {
	// URL is the linked page on the other site.
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// Anchors are the texts of the links to URL on this site.
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	Anchors []string `json:"anchors,omitempty"`
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
	// Pages are the pages of the last complete crawl (of the running one
	// during a first crawl): at most 20, never their body text.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Pages []IndexedPage `json:"pages,omitempty"`
	// OffSiteLinks are links from the crawled pages to other sites.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	OffSiteLinks []OffSiteLink `json:"offSiteLinks,omitempty"`
	// Robots is how the site answered for robots.txt.
	// +optional
	Robots *RobotsStatus `json:"robots,omitempty"`
	// CrawledAt is when the crawl that produced Pages finished.
	// +optional
	CrawledAt *metav1.Time `json:"crawledAt,omitempty"`
	// Stats counts the pages indexed and the URLs skipped.
	// +optional
	Stats IndexStats `json:"stats,omitempty"`
	// Run is the crawler Pod that wrote this status.
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
}

// SiteIndex holds the pages found by the latest crawl of one site. It has
// the name of its CrawlTarget and is owned by it.
// +kubebuilder:object:root=true
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
