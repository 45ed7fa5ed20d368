package reportendpoint

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// A crawler Pod cannot put an address of its choosing into the SiteIndex:
// only the one its run was told to verify.
func TestVerifiedEgress(t *testing.T) {
	for _, tc := range []struct {
		name, reported, podIP, want string
	}{
		{"another address", "203.0.113.7", "79.139.58.98", ""},
		{"a Pod without an egress IP", "79.139.58.98", "", ""},
		{"not an address at all", "79.139.58.98 or so", "79.139.58.98", ""},
		{"not verified", "", "79.139.58.98", ""},
		{"verified", "79.139.58.98", "79.139.58.98", "79.139.58.98"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if tc.podIP != "" {
			pod.Annotations[crawlpod.AnnotationEgressIP] = tc.podIP
		}
		rep := runreport.Report{Final: true, Result: runreport.Crawl{EgressIP: tc.reported}}
		if got := verifiedEgress(rep, pod); got != tc.want {
			t.Errorf("%s: verifiedEgress = %q, want %q", tc.name, got, tc.want)
		}
	}
}
