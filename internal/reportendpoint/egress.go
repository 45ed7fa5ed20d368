package reportendpoint

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// verifiedEgress is the address a report says its crawl was verified to
// leave from, kept only when it is the one the operator told the run to
// expect (the Pod's egress IP, which the manager set): a crawler crawls
// only after verifying exactly that, so any other value verifies nothing,
// and a crawler Pod is not trusted to name addresses.
func verifiedEgress(rep runreport.Report, pod *corev1.Pod) string {
	ip := rep.Result.EgressIP
	if ip == "" || ip != pod.Annotations[crawlpod.AnnotationEgressIP] {
		return ""
	}
	return ip
}
