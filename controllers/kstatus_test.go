package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

// kstatusOf computes the health Flux and Argo CD's kstatus-based checks see
// for obj as the API server has it now, read as they read it: unstructured
// (a typed read would drop fields at their zero value).
func kstatusOf(t *testing.T, obj client.Object) status.Status {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), u); err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
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

// A CrawlTarget or Exclusion the operator has not written a status to yet
// is InProgress, not Current (kstatus's verdict for an object with no
// status at all): otherwise Flux's health check of a Kustomization that
// has just applied a CrawlTarget, or a kubectl wait, passes before the
// first crawl. The CRDs default status.observedGeneration to 0, which the
// API server adds when it reads the object; no operator runs here.
func TestKstatusBeforeTheOperatorWrites(t *testing.T) {
	ns := newNamespace(t)
	ct := createTarget(t, ns, "unseen", "https://unseen.example.com/")
	if got := kstatusOf(t, ct); got != status.InProgressStatus {
		t.Errorf("a CrawlTarget the operator has not seen: kstatus %s, want InProgress", got)
	}
	ex := createExclusion(t, "unseen", "unseen.example")
	if got := kstatusOf(t, ex); got != status.InProgressStatus {
		t.Errorf("an Exclusion the operator has not seen: kstatus %s, want InProgress", got)
	}
}
