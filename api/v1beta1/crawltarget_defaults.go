package v1beta1

import "time"

// Defaults of CrawlTargetSpec. The kubebuilder default markers on the
// fields must repeat them; TestMarkersMatchLimits checks the CRD.
const (
	DefaultInterval    = 168 * time.Hour
	DefaultDelay       = time.Second
	DefaultMaxPages    = MaxIndexedPages
	DefaultCrawlPolicy = CrawlPolicyScheduled
)

// IntervalOrDefault is spec.interval with the CRD default applied, for
// objects that bypassed defaulting (old objects, unit tests).
func (s CrawlTargetSpec) IntervalOrDefault() time.Duration {
	if s.Interval == nil || s.Interval.Duration <= 0 {
		return DefaultInterval
	}
	return s.Interval.Duration
}

// DelayOrDefault is spec.delay with the CRD default applied.
func (s CrawlTargetSpec) DelayOrDefault() time.Duration {
	if s.Delay == nil {
		return DefaultDelay
	}
	return s.Delay.Duration
}

// MaxPagesOrDefault is spec.maxPages with the CRD default applied and the
// public 20-page promise enforced even if validation was bypassed.
func (s CrawlTargetSpec) MaxPagesOrDefault() int32 {
	if s.MaxPages == nil || *s.MaxPages <= 0 || *s.MaxPages > MaxIndexedPages {
		return DefaultMaxPages
	}
	return *s.MaxPages
}

// CrawlPolicyOrDefault is spec.crawlPolicy with the CRD default applied.
// A value this operator does not know (written by a newer one) crawls
// nothing: a site is never crawled more than its owner's policy allows.
func (s CrawlTargetSpec) CrawlPolicyOrDefault() CrawlPolicy {
	switch s.CrawlPolicy {
	case "":
		return DefaultCrawlPolicy
	case CrawlPolicyScheduled, CrawlPolicyOnRequest, CrawlPolicySuspended:
		return s.CrawlPolicy
	default:
		return CrawlPolicySuspended
	}
}
