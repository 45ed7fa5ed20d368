package controllers

import (
	"time"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

const (
	firstRetryDelay = time.Minute
	maxretryBackoff = 6 * time.Hour
)

// retryBackoff is the wait after the nth consecutive failed crawl: 1m, 2m,
// 4m, ... capped at 6h and never longer than the recrawl interval.
func retryBackoff(failures int32, interval time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	limit := min(maxretryBackoff, interval)
	d := firstRetryDelay
	for i := int32(1); i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// nextCrawlTime is the earliest time the next scheduled crawl may start. The
// zero time means "now": the target has never been crawled. A site's
// Retry-After always wins, whatever asked for the crawl.
func nextCrawlTime(st *crawlv1.CrawlTargetStatus, interval time.Duration) time.Time {
	var next time.Time
	switch {
	case st.ConsecutiveFailures > 0 && st.LastFailureTime != nil:
		next = st.LastFailureTime.Add(retryBackoff(st.ConsecutiveFailures, interval))
	case st.LastCrawlTime != nil:
		next = st.LastCrawlTime.Add(interval)
	}
	return laterRetryAfter(next, st)
}

// crawlRequested returns the requested-at annotation value when it asks for a
// crawl not yet handled.
func crawlRequested(ct *crawlv1.CrawlTarget) (string, bool) {
	v := ct.Annotations[crawlv1.RequestedAtAnnotation]
	return v, v != "" && v != ct.Status.LastHandledRequestedAt
}

// crawlDue decides whether a crawl should start now and, if not, when to
// look again (zero when only an outside change can make it due). With
// crawlPolicy OnRequest the schedule is off, but a failed crawl is still
// retried after its backoff: what was asked for has not been done.
func crawlDue(ct *crawlv1.CrawlTarget, now time.Time) (due bool, next time.Time) {
	policy := ct.Spec.CrawlPolicyOrDefault()
	st := &ct.Status
	_, requested := crawlRequested(ct)
	switch {
	case policy == crawlv1.CrawlPolicySuspended:
		return false, time.Time{}
	case requested:
		next = laterRetryAfter(time.Time{}, st)
	case policy == crawlv1.CrawlPolicyScheduled:
		next = nextCrawlTime(st, ct.Spec.IntervalOrDefault())
	case st.ConsecutiveFailures > 0 && st.LastFailureTime != nil:
		next = laterRetryAfter(st.LastFailureTime.Add(retryBackoff(st.ConsecutiveFailures, ct.Spec.IntervalOrDefault())), st)
	default:
		return false, time.Time{}
	}
	return !now.Before(next), next
}

func laterRetryAfter(t time.Time, st *crawlv1.CrawlTargetStatus) time.Time {
	if st.RetryAfterTime != nil && st.RetryAfterTime.After(t) {
		return st.RetryAfterTime.Time
	}
	return t
}
