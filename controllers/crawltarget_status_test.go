package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

var (
	crawledAt = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	nextAt    = crawledAt.Add(168 * time.Hour)
)

// scope builds the state one reconcile's steps leave behind.
type scope func(*targetScope)

func succeeded(s *targetScope) {
	s.ct.Status.LastCrawlTime = &metav1.Time{Time: crawledAt}
	s.ct.Status.PagesIndexed = 7
}
func scheduled(s *targetScope) { s.ct.Status.NextCrawlTime = &metav1.Time{Time: nextAt} }
func running(s *targetScope) {
	s.ct.Status.Runs, s.ct.Status.EgressNodeName, s.ct.Status.EgressIP = 2, "egress-a", "79.139.58.98"
	s.active = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shop-crawl-2"}}
}
func suspendedSpec(s *targetScope) { s.ct.Spec.CrawlPolicy = crawlv1.CrawlPolicySuspended }
func failedNow(s *targetScope) {
	s.ct.Status.Runs, s.ct.Status.ConsecutiveFailures = 3, 2
	s.failure = "crawler Pod failed: OOMKilled"
}
func failedEarlier(s *targetScope) { s.ct.Status.Runs, s.ct.Status.ConsecutiveFailures = 3, 2 }
func waiting(why string) scope {
	return func(s *targetScope) { s.verdict.wait = reason{why, "all egress nodes run 4 crawls"} }
}
func blocked(why string) scope {
	return func(s *targetScope) { s.verdict.block = reason{why, "needs a person: " + why} }
}

// TestStatusTruthTable is the documentation of a CrawlTarget's states: what
// each situation a reconcile can find shows as Ready, Stalled, Reconciling,
// Crawling and phase, and the health kstatus (Flux, Argo CD) computes.
// Empty Stalled or Reconciling means the condition is absent.
func TestStatusTruthTable(t *testing.T) {
	tests := []struct {
		name        string
		scope       []scope
		ready       metav1.ConditionStatus
		readyReason string
		stalled     string
		reconciling string
		crawling    string // reason; status True only for Crawling
		phase       crawlv1.CrawlPhase
		kstatus     status.Status
		message     string // a part of Ready's message
	}{
		{"new", nil,
			metav1.ConditionFalse, crawlv1.ReasonPending, "", crawlv1.ReasonPending, crawlv1.ReasonIdle, crawlv1.PhasePending, status.InProgressStatus, "first crawl"},
		{"suspended before the first crawl", []scope{suspendedSpec},
			// kstatus reads Ready=False as InProgress: a GitOps tool waiting
			// for it waits until the target is resumed and crawled.
			metav1.ConditionFalse, crawlv1.ReasonSuspended, "", "", crawlv1.ReasonIdle, crawlv1.PhasePending, status.InProgressStatus, "suspended"},
		{"first crawl running", []scope{running},
			metav1.ConditionFalse, crawlv1.ReasonCrawling, "", crawlv1.ReasonCrawling, crawlv1.ReasonCrawling, crawlv1.PhaseRunning, status.InProgressStatus, "crawl 2"},
		{"first crawl waits for a slot", []scope{waiting(crawlv1.ReasonWaitingForCapacity)},
			metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity, "", crawlv1.ReasonWaitingForCapacity, crawlv1.ReasonWaitingForCapacity, crawlv1.PhaseWaiting, status.InProgressStatus, "4 crawls"},
		{"no egress node", []scope{waiting(crawlv1.ReasonNoEgressNode)},
			metav1.ConditionFalse, crawlv1.ReasonNoEgressNode, "", crawlv1.ReasonNoEgressNode, crawlv1.ReasonNoEgressNode, crawlv1.PhaseWaiting, status.InProgressStatus, ""},
		{"crawled, next crawl scheduled", []scope{succeeded, scheduled},
			metav1.ConditionTrue, crawlv1.ReasonCrawled, "", "", crawlv1.ReasonIdle, crawlv1.PhaseSucceeded, status.CurrentStatus, "next crawl at 2026-12-07T08:00:00Z"},
		{"crawled, recrawl running", []scope{succeeded, running},
			metav1.ConditionTrue, crawlv1.ReasonCrawled, "", "", crawlv1.ReasonCrawling, crawlv1.PhaseRunning, status.CurrentStatus, "recrawl running"},
		{"crawled, recrawl waits", []scope{succeeded, waiting(crawlv1.ReasonWaitingForCapacity)},
			metav1.ConditionTrue, crawlv1.ReasonCrawled, "", "", crawlv1.ReasonWaitingForCapacity, crawlv1.PhaseWaiting, status.CurrentStatus, "recrawl waiting"},
		{"crawled, suspended", []scope{succeeded, suspendedSpec},
			metav1.ConditionTrue, crawlv1.ReasonCrawled, "", "", crawlv1.ReasonIdle, crawlv1.PhaseSucceeded, status.CurrentStatus, "suspended"},
		{"crawl failed now", []scope{failedNow, scheduled},
			metav1.ConditionFalse, crawlv1.ReasonCrawlFailed, "", crawlv1.ReasonCrawlFailed, crawlv1.ReasonIdle, crawlv1.PhaseFailed, status.InProgressStatus, "crawl 3 failed: crawler Pod failed: OOMKilled"},
		{"crawl failed earlier, retry pending", []scope{failedEarlier, scheduled},
			metav1.ConditionFalse, crawlv1.ReasonCrawlFailed, "", crawlv1.ReasonCrawlFailed, crawlv1.ReasonIdle, crawlv1.PhaseFailed, status.InProgressStatus, "the message recorded before"},
		{"crawled before, recrawl failed", []scope{succeeded, failedNow},
			metav1.ConditionFalse, crawlv1.ReasonCrawlFailed, "", crawlv1.ReasonCrawlFailed, crawlv1.ReasonIdle, crawlv1.PhaseFailed, status.InProgressStatus, "OOMKilled"},
		{"excluded", []scope{blocked(crawlv1.ReasonExcluded)},
			metav1.ConditionFalse, crawlv1.ReasonExcluded, crawlv1.ReasonExcluded, "", crawlv1.ReasonIdle, crawlv1.PhaseExcluded, status.FailedStatus, ""},
		{"excluded after crawling", []scope{succeeded, blocked(crawlv1.ReasonExcluded)},
			metav1.ConditionFalse, crawlv1.ReasonExcluded, crawlv1.ReasonExcluded, "", crawlv1.ReasonIdle, crawlv1.PhaseExcluded, status.FailedStatus, ""},
		{"duplicate site", []scope{blocked(crawlv1.ReasonDuplicateSite)},
			metav1.ConditionFalse, crawlv1.ReasonDuplicateSite, crawlv1.ReasonDuplicateSite, "", crawlv1.ReasonIdle, crawlv1.PhaseDuplicate, status.FailedStatus, ""},
		{"invalid URL", []scope{blocked(crawlv1.ReasonInvalidURL)},
			metav1.ConditionFalse, crawlv1.ReasonInvalidURL, crawlv1.ReasonInvalidURL, "", crawlv1.ReasonIdle, crawlv1.PhaseFailed, status.FailedStatus, ""},
		{"SiteIndex of another owner", []scope{blocked(crawlv1.ReasonSiteIndexConflict)},
			metav1.ConditionFalse, crawlv1.ReasonSiteIndexConflict, crawlv1.ReasonSiteIndexConflict, "", crawlv1.ReasonIdle, crawlv1.PhaseFailed, status.FailedStatus, ""},
		{"crawler refused its input", []scope{failedEarlier, blocked(crawlv1.ReasonInvalidInput)},
			metav1.ConditionFalse, crawlv1.ReasonInvalidInput, crawlv1.ReasonInvalidInput, "", crawlv1.ReasonIdle, crawlv1.PhaseFailed, status.FailedStatus, ""},
		{"site's address refused", []scope{failedEarlier, blocked(crawlv1.ReasonAddressRefused)},
			metav1.ConditionFalse, crawlv1.ReasonAddressRefused, crawlv1.ReasonAddressRefused, "", crawlv1.ReasonIdle, crawlv1.PhaseFailed, status.FailedStatus, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := target()
			meta.SetStatusCondition(&before.Status.Conditions, metav1.Condition{Type: crawlv1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: crawlv1.ReasonCrawlFailed, Message: "the message recorded before"})
			s := &targetScope{ct: before.DeepCopy(), now: crawledAt.Add(time.Hour)}
			for _, f := range tt.scope {
				f(s)
			}
			(&CrawlTargetReconciler{}).renderStatus(before, s, nil)
			st := s.ct.Status
			ready := meta.FindStatusCondition(st.Conditions, crawlv1.ConditionReady)
			if ready == nil || ready.Status != tt.ready || ready.Reason != tt.readyReason || !strings.Contains(ready.Message, tt.message) {
				t.Errorf("Ready = %+v, want %s %s containing %q", ready, tt.ready, tt.readyReason, tt.message)
			}
			if got := reasonOf(st.Conditions, crawlv1.ConditionStalled); got != tt.stalled {
				t.Errorf("Stalled = %q, want %q", got, tt.stalled)
			}
			if got := reasonOf(st.Conditions, crawlv1.ConditionReconciling); got != tt.reconciling {
				t.Errorf("Reconciling = %q, want %q", got, tt.reconciling)
			}
			crawling := meta.FindStatusCondition(st.Conditions, crawlv1.ConditionCrawling)
			wantCrawling := metav1.ConditionFalse
			if tt.crawling == crawlv1.ReasonCrawling {
				wantCrawling = metav1.ConditionTrue
			}
			if crawling == nil || crawling.Reason != tt.crawling || crawling.Status != wantCrawling {
				t.Errorf("Crawling = %+v, want %s %s", crawling, wantCrawling, tt.crawling)
			}
			if st.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.phase)
			}
			for _, c := range st.Conditions {
				if c.ObservedGeneration != s.ct.Generation {
					t.Errorf("%s observedGeneration %d, want %d", c.Type, c.ObservedGeneration, s.ct.Generation)
				}
			}
			if got := Kstatus(t, s.ct); got != tt.kstatus {
				t.Errorf("kstatus = %s, want %s", got, tt.kstatus)
			}
		})
	}
}

// A reconcile whose step fails (here: the Pod List of observeRun) has not
// observed the run. It must not write Crawling=False, phase Pending or a
// new observedGeneration over a crawl that is running; it says that it
// failed, and kstatus shows InProgress until a retry succeeds.
func TestStatusOnAFailedStep(t *testing.T) {
	before := target()
	s := &targetScope{ct: before.DeepCopy(), now: crawledAt}
	succeeded(s)
	running(s)
	(&CrawlTargetReconciler{}).renderStatus(before, s, nil)
	observed := s.ct.DeepCopy()
	observed.Generation = 3 // spec changed since

	s = &targetScope{ct: observed.DeepCopy(), now: crawledAt.Add(time.Minute)}
	s.ct.Status.Site = "https://shop.example.com:443" // parseSite ran before the failure
	r := &CrawlTargetReconciler{}
	r.renderStatus(observed, s, errors.New("list crawler Pods: the server is currently unable to handle the request"))
	st := s.ct.Status

	ready := meta.FindStatusCondition(st.Conditions, crawlv1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionUnknown || ready.Reason != crawlv1.ReasonReconcileError ||
		!strings.Contains(ready.Message, "unable to handle the request") {
		t.Errorf("Ready = %+v, want Unknown ReconcileError with the error", ready)
	}
	if c := meta.FindStatusCondition(st.Conditions, crawlv1.ConditionReconciling); c == nil || c.Status != metav1.ConditionTrue || c.Reason != crawlv1.ReasonReconcileError {
		t.Errorf("Reconciling = %+v, want True ReconcileError", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, crawlv1.ConditionCrawling); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Crawling = %+v: a failed step overwrote the running crawl", c)
	}
	if st.Phase != crawlv1.PhaseRunning || st.Runs != 2 || st.EgressNodeName != "egress-a" {
		t.Errorf("phase %s, runs %d, node %q: the last observed run state is lost", st.Phase, st.Runs, st.EgressNodeName)
	}
	if st.ObservedGeneration != observed.Status.ObservedGeneration {
		t.Errorf("observedGeneration = %d, want %d: generation 3 was not reconciled", st.ObservedGeneration, observed.Status.ObservedGeneration)
	}
	if st.Site != "https://shop.example.com:443" {
		t.Error("what a step before the failure recorded was dropped")
	}
	if got := Kstatus(t, s.ct); got != status.InProgressStatus {
		t.Errorf("kstatus = %s, want InProgress", got)
	}
	if len(s.committed) != 1 {
		t.Errorf("%d events queued, want one Warning for the new ReconcileError", len(s.committed))
	}

	// The same error again changes nothing worth another Event.
	again := s.ct.DeepCopy()
	s2 := &targetScope{ct: again.DeepCopy()}
	r.renderStatus(again, s2, errors.New("list crawler Pods: the server is currently unable to handle the request"))
	if len(s2.committed) != 0 {
		t.Error("a repeated error queued another Event")
	}
}

func target() *crawlv1.CrawlTarget {
	return &crawlv1.CrawlTarget{
		TypeMeta:   metav1.TypeMeta{APIVersion: crawlv1.GroupVersion.String(), Kind: "CrawlTarget"},
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "sites", Generation: 2},
		Spec:       crawlv1.CrawlTargetSpec{URL: "https://shop.example.com/"},
		Status:     crawlv1.CrawlTargetStatus{Site: "https://shop.example.com:443"},
	}
}

func reasonOf(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return ""
	}
	if c.Status != metav1.ConditionTrue {
		return "not True: " + c.Reason
	}
	return c.Reason
}

// Kstatus computes the health Flux and Argo CD's kstatus-based checks see.
// It is exported to the envtest suites (package controllers_test).
func Kstatus(t *testing.T, obj client.Object) status.Status {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}
