package controllers_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

// crawlPolicy OnRequest: nothing at creation and nothing on the schedule,
// one crawl per new requested-at value.
func TestOnRequestCrawlsOnlyWhenAsked(t *testing.T) {
	createEgressNode(t, "egress-onreq", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "onreq", "https://onreq.example.com/",
		withCrawlPolicy(crawlv1.CrawlPolicyOnRequest), withInterval(time.Hour))
	waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonAwaitingRequest)
	podCountStays(t, ct, 0, time.Second, "no crawl before one is requested")

	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "1")
	finishCrawl(t, op, waitPod(t, ct, 1), "https://onreq.example.com", 1)
	got := waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	if got.Status.NextCrawlTime != nil {
		t.Errorf("nextCrawlTime %v, want none: the schedule is off", got.Status.NextCrawlTime)
	}
	op.clock.Step(2 * time.Hour)
	poke(t, ct)
	podCountStays(t, ct, 1, time.Second, "no crawl on the schedule")

	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "2")
	waitPod(t, ct, 2)
}
