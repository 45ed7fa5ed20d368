package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/lohisoft/crawl-operator/api/v1beta1"
)

// crawlTargetLostAnnotation carries the v1beta1 spec fields that
// v1alpha1 cannot express.
const crawlTargetLostAnnotation = LostAnnotationPrefix + "spec"

// crawlTargetLost is what a v1beta1 CrawlTarget says that its v1alpha1
// form cannot: a crawlPolicy other than Scheduled and Suspended (the two
// that suspend, a bool, names), and a maxPages explicitly 0 (v1alpha1's 0
// means unset). Each is restored only while the v1alpha1 object still
// says what it was converted to, so a v1alpha1 client that changes
// suspend or maxPages gets what it wrote.
type crawlTargetLost struct {
	CrawlPolicy *v1beta1.CrawlPolicy `json:"crawlPolicy,omitempty"`
	MaxPages    *int32               `json:"maxPages,omitempty"`
}

var _ conversion.Convertible = &CrawlTarget{}

// ConvertTo converts this CrawlTarget to the hub version, v1beta1.
func (src *CrawlTarget) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*v1beta1.CrawlTarget)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	var lost crawlTargetLost
	takeLost(&dst.ObjectMeta, crawlTargetLostAnnotation, &lost)

	s := &src.Spec
	dst.Spec = v1beta1.CrawlTargetSpec{
		URL:         s.URL,
		Interval:    copyDuration(s.Interval),
		Delay:       copyDuration(s.Delay),
		CrawlPolicy: v1beta1.CrawlPolicyScheduled,
	}
	if s.MaxPages != 0 {
		n := s.MaxPages
		dst.Spec.MaxPages = &n
	} else if lost.MaxPages != nil && *lost.MaxPages == 0 {
		dst.Spec.MaxPages = new(int32)
	}
	if s.Suspend {
		dst.Spec.CrawlPolicy = v1beta1.CrawlPolicySuspended
	}
	if lost.CrawlPolicy != nil && suspends(*lost.CrawlPolicy) == s.Suspend {
		dst.Spec.CrawlPolicy = *lost.CrawlPolicy
	}

	st := &src.Status
	dst.Status = v1beta1.CrawlTargetStatus{
		ObservedGeneration:     st.ObservedGeneration,
		Conditions:             copyConditions(st.Conditions),
		Phase:                  v1beta1.CrawlPhase(st.Phase),
		Site:                   st.Site,
		Host:                   st.Host,
		PagesIndexed:           st.PagesIndexed,
		EgressNodeName:         st.EgressNode,
		EgressIP:               st.EgressIP,
		LastCrawlTime:          st.LastCrawlTime.DeepCopy(),
		NextCrawlTime:          st.NextCrawlTime.DeepCopy(),
		LastHandledRequestedAt: st.LastHandledRequestedAt,
		Runs:                   st.Runs,
		LastFinishedRun:        st.LastFinishedRun,
		ConsecutiveFailures:    st.ConsecutiveFailures,
		LastFailureTime:        st.LastFailureTime.DeepCopy(),
		RetryAfterTime:         st.RetryAfter.DeepCopy(),
	}
	return nil
}

// ConvertFrom converts the hub version, v1beta1, to this CrawlTarget.
func (dst *CrawlTarget) ConvertFrom(hub conversion.Hub) error {
	src := hub.(*v1beta1.CrawlTarget)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()

	s := &src.Spec
	dst.Spec = CrawlTargetSpec{
		URL:      s.URL,
		Interval: copyDuration(s.Interval),
		Delay:    copyDuration(s.Delay),
		Suspend:  suspends(s.CrawlPolicy),
	}
	var lost crawlTargetLost
	if s.MaxPages != nil {
		dst.Spec.MaxPages = *s.MaxPages
		if *s.MaxPages == 0 {
			lost.MaxPages = new(int32)
		}
	}
	if p := s.CrawlPolicy; p != v1beta1.CrawlPolicyScheduled && p != v1beta1.CrawlPolicySuspended {
		lost.CrawlPolicy = &p
	}
	putLost(&dst.ObjectMeta, crawlTargetLostAnnotation, lost, lost == crawlTargetLost{})

	st := &src.Status
	dst.Status = CrawlTargetStatus{
		ObservedGeneration:     st.ObservedGeneration,
		Conditions:             copyConditions(st.Conditions),
		Phase:                  CrawlPhase(st.Phase),
		Site:                   st.Site,
		Host:                   st.Host,
		PagesIndexed:           st.PagesIndexed,
		EgressNode:             st.EgressNodeName,
		EgressIP:               st.EgressIP,
		LastCrawlTime:          st.LastCrawlTime.DeepCopy(),
		NextCrawlTime:          st.NextCrawlTime.DeepCopy(),
		LastHandledRequestedAt: st.LastHandledRequestedAt,
		Runs:                   st.Runs,
		LastFinishedRun:        st.LastFinishedRun,
		ConsecutiveFailures:    st.ConsecutiveFailures,
		LastFailureTime:        st.LastFailureTime.DeepCopy(),
		RetryAfter:             st.RetryAfterTime.DeepCopy(),
	}
	return nil
}

// suspends is the v1alpha1 spec.suspend of a v1beta1 crawl policy: true
// for every policy that starts no scheduled crawl. OnRequest is suspend
// for a v1alpha1 client because, of the two, "no crawls" is the one that
// never crawls a site more than its v1beta1 author allowed; a policy this
// version does not know counts as Suspended for the same reason.
func suspends(p v1beta1.CrawlPolicy) bool {
	return (v1beta1.CrawlTargetSpec{CrawlPolicy: p}).CrawlPolicyOrDefault() != v1beta1.CrawlPolicyScheduled
}

func copyDuration(d *metav1.Duration) *metav1.Duration {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

func copyConditions(in []metav1.Condition) []metav1.Condition {
	if in == nil {
		return nil
	}
	out := make([]metav1.Condition, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
