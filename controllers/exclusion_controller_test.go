package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

func createExclusion(t *testing.T, name, domain string) *crawlv1.Exclusion {
	t.Helper()
	ex := &crawlv1.Exclusion{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       crawlv1.ExclusionSpec{Domain: domain, Description: "site owner asked by email", RequestedBy: "owner@" + domain},
	}
	if err := k8s.Create(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ex) })
	return ex
}

func siteIndexPages(t *testing.T, ct *crawlv1.CrawlTarget) int {
	t.Helper()
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), si); err != nil {
		t.Fatal(err)
	}
	return len(si.Status.Pages)
}

// An Exclusion arriving mid-crawl stops the crawl within seconds, purges
// what was indexed, outranks every other state, and lifting it resumes
// crawling.
func TestExclusionMidCrawl(t *testing.T) {
	createEgressNode(t, "egress-ex", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	done := createTarget(t, ns, "done", "https://www.excluded.example/")
	finishCrawl(t, op, waitPod(t, done, 1), "https://www.excluded.example", 6)
	waitReady(t, done, metav1.ConditionTrue, crawlv1.ReasonCrawled)

	running := createTarget(t, ns, "running", "http://excluded.example:8080/")
	pod, token := runningPod(t, running)
	if code, body := postReport(t, op, pod, token, runreport.Report{Result: runreport.Crawl{Pages: pages("http://excluded.example:8080", 2)}}); code != http.StatusOK {
		t.Fatalf("progress: %d %s", code, body)
	}
	bystander := createTarget(t, ns, "bystander", "https://notexcluded.example/")
	waitPod(t, bystander, 1)

	start := time.Now()
	ex := createExclusion(t, "excluded-example", "excluded.example")
	eventually(t, "running crawler Pod deleted", func() error {
		return isNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("crawler Pod deleted after %s, the promise is 10s", d)
	}
	for _, ct := range []*crawlv1.CrawlTarget{done, running} {
		got := waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonExcluded)
		if got.Status.Phase != crawlv1.PhaseExcluded || !strings.Contains(readyCondition(got).Message, "excluded-example") {
			t.Errorf("%s status = %+v", ct.Name, got.Status)
		}
		eventually(t, "pages purged from "+ct.Name, func() error {
			if n := siteIndexPages(t, ct); n != 0 {
				return fmt.Errorf("%d pages left", n)
			}
			return nil
		})
	}
	eventually(t, "Exclusion status", func() error {
		got := &crawlv1.Exclusion{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ex), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, crawlv1.ConditionReady)
		if got.Status.MatchedTargets != 2 || got.Status.PurgedPages != 8 || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("status = %+v", got.Status)
		}
		return nil
	})
	// The stopped run can no longer write anything back.
	if code, _ := postReport(t, op, pod, token, runreport.Report{Final: true, Result: runreport.Crawl{Pages: pages("http://excluded.example:8080", 2)}}); code == http.StatusOK {
		t.Error("the excluded run's report was accepted")
	}
	// Excluded outranks a crawl request, and no Pods start.
	patchAnnotation(t, done, crawlv1.RequestedAtAnnotation, "please")
	consistently(t, "no crawl of an excluded site", time.Second, func() error {
		if n := len(activePods(t, done)) + len(activePods(t, running)); n != 0 {
			return fmt.Errorf("%d active pods", n)
		}
		return nil
	})
	if readyCondition(getTarget(t, bystander)).Reason == crawlv1.ReasonExcluded {
		t.Error("notexcluded.example is not a subdomain of excluded.example")
	}

	// Lifting the exclusion resumes crawling.
	if err := k8s.Delete(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	waitPod(t, done, 2)
	waitPod(t, running, 2)
}

// A target created after its Exclusion never starts a crawl.
func TestExclusionBeforeTarget(t *testing.T) {
	createEgressNode(t, "egress-ex2", "79.139.58.98")
	startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ex := createExclusion(t, "early", "early.example")
	ct := createTarget(t, ns, "late", "https://deep.sub.early.example/")
	waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonExcluded)
	if n := len(crawlerPods(t, ct)); n != 0 {
		t.Errorf("%d crawler Pods for an excluded site", n)
	}
	eventually(t, "match counted", func() error {
		got := &crawlv1.Exclusion{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ex), got); err != nil {
			return err
		}
		if got.Status.MatchedTargets != 1 {
			return fmt.Errorf("matched = %d", got.Status.MatchedTargets)
		}
		return nil
	})
}
