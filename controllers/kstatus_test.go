package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	"github.com/lohisoft/crawl-operator/controllers"
)

// kstatusOf computes the health Flux and Argo CD's kstatus-based checks see
// for obj as the API server has it now.
func kstatusOf(t *testing.T, obj client.Object) status.Status {
	t.Helper()
	fresh := obj.DeepCopyObject().(client.Object)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), fresh); err != nil {
		t.Fatal(err)
	}
	return controllers.Kstatus(t, fresh)
}

func waitKstatus(t *testing.T, obj client.Object, want status.Status) {
	t.Helper()
	eventually(t, fmt.Sprintf("kstatus %s of %s", want, obj.GetName()), func() error {
		if got := kstatusOf(t, obj); got != want {
			return fmt.Errorf("kstatus = %s", got)
		}
		return nil
	})
}

func TestKstatusHealth(t *testing.T) {
	createEgressNode(t, "egress-kstatus", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "health", "https://health.example.com/")

	pod := waitPod(t, ct, 1)
	waitKstatus(t, ct, status.InProgressStatus)
	finishCrawl(t, op, pod, "https://health.example.com", 2)
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	waitKstatus(t, ct, status.CurrentStatus)

	// A recrawl does not flap the health of a healthy target.
	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "recrawl")
	waitPod(t, ct, 2)
	consistently(t, "healthy during the recrawl", time.Second, func() error {
		if got := kstatusOf(t, ct); got != status.CurrentStatus {
			return fmt.Errorf("kstatus = %s, status %+v", got, getTarget(t, ct).Status)
		}
		return nil
	})

	// A duplicate needs a person: Stalled, which kstatus reports as Failed.
	dup := createTarget(t, ns, "health-dup", "https://health.example.com/other")
	waitReady(t, dup, metav1.ConditionFalse, crawlv1.ReasonDuplicateSite)
	waitKstatus(t, dup, status.FailedStatus)

	// An enforced Exclusion is healthy.
	ex := createExclusion(t, "health", "unrelated-health.example")
	waitKstatus(t, ex, status.CurrentStatus)
}
