package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/site"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

func TestTargetGetsSiteIndexAndPinnedPod(t *testing.T) {
	createEgressNode(t, "egress-pin-a", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "example", "https://pin.example.com/start", withMaxPages(7))

	pod := waitPod(t, ct, 1)
	got := waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonCrawling)

	// SiteIndex: same name, owned by the target, names the site.
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), si); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(si, got) || si.Spec.Site != "https://pin.example.com:443" {
		t.Errorf("SiteIndex = %+v", si.ObjectMeta.OwnerReferences)
	}

	// Pod: pinned to the egress node with the restricted profile.
	if !metav1.IsControlledBy(pod, got) || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod owner/restart policy wrong")
	}
	if *pod.Spec.AutomountServiceAccountToken {
		t.Error("crawler Pod mounts a service account token")
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if terms[0].MatchFields[0].Values[0] != "egress-pin-a" {
		t.Errorf("pod not pinned to egress-pin-a: %+v", terms)
	}
	if got.Status.EgressNodeName != "egress-pin-a" || got.Status.EgressIP != "79.139.58.98" || got.Status.Phase != crawlv1.PhaseRunning {
		t.Errorf("status = %+v", got.Status)
	}
	if !strings.Contains(strings.Join(pod.Spec.Containers[0].Args, " "), "--max-pages=7") {
		t.Errorf("args = %v", pod.Spec.Containers[0].Args)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, crawlv1.ConditionReconciling); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Reconciling = %+v, want True during the first crawl", c)
	}

	// The run's token is in a Secret and its hash on the Pod.
	token := runToken(t, pod)
	if len(token) < 32 || !crawlpod.TokenMatches(pod, token) {
		t.Errorf("token %q does not match the Pod annotation", token)
	}
	// The Secret is owned by the Pod alone, so the garbage collector
	// removes it with the Pod: no one cleaning up needs to list Secrets.
	secret := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: crawlpod.SecretName(pod.Name)}, secret); err != nil {
		t.Fatal(err)
	}
	if owners := secret.OwnerReferences; len(owners) != 1 || owners[0].Kind != "Pod" || owners[0].UID != pod.UID ||
		owners[0].Controller != nil || owners[0].BlockOwnerDeletion != nil {
		t.Errorf("token Secret owners %+v, want the Pod %s (%s) only", owners, pod.Name, pod.UID)
	}
	_ = op
}

func TestSuccessfulCrawlUpdatesStatusAndIndex(t *testing.T) {
	createEgressNode(t, "egress-ok", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "site", "http://ok.example.com/", withInterval(2*time.Hour))
	pod := waitPod(t, ct, 1)
	token := runToken(t, pod)
	base := "http://ok.example.com"

	// Progress after a page, then the final result.
	setPodPhase(t, pod, corev1.PodRunning, 0)
	if code, body := postReport(t, op, pod, token, runreport.Report{Result: runreport.Crawl{Pages: pages(base, 1)}}); code != http.StatusOK {
		t.Fatalf("progress: %d %s", code, body)
	}
	eventually(t, "progress in SiteIndex", func() error {
		si := &crawlv1.SiteIndex{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), si); err != nil {
			return err
		}
		if len(si.Status.Pages) != 1 || si.Status.Complete {
			return fmt.Errorf("pages=%d complete=%v", len(si.Status.Pages), si.Status.Complete)
		}
		return nil
	})
	finishCrawl(t, op, pod, base, 5)

	got := waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	st := got.Status
	if st.Phase != crawlv1.PhaseSucceeded || st.PagesIndexed != 5 || st.LastCrawlTime == nil || st.NextCrawlTime == nil {
		t.Fatalf("status = %+v", st)
	}
	if d := st.NextCrawlTime.Sub(st.LastCrawlTime.Time); d != 2*time.Hour {
		t.Errorf("next crawl %s after the last, want 2h", d)
	}
	for _, typ := range []string{crawlv1.ConditionReconciling, crawlv1.ConditionStalled} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil {
			t.Errorf("%s condition present after success: %+v", typ, c)
		}
	}
	// Transitions are recorded as Events on the target.
	eventually(t, "CrawlStarted and CrawlSucceeded events", func() error {
		var evs eventsv1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		seen := map[string]int{}
		for _, e := range evs.Items {
			if e.Regarding.Name == ct.Name && e.Regarding.Kind == "CrawlTarget" {
				seen[e.Reason]++
			}
		}
		if seen["CrawlStarted"] != 1 || seen["CrawlSucceeded"] != 1 {
			return fmt.Errorf("events by reason: %v", seen)
		}
		return nil
	})
	// The token dies with the run: the Secret is gone and the endpoint
	// refuses the finished run.
	eventually(t, "token Secret deleted", func() error {
		return isNotFound(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: crawlpod.SecretName(pod.Name)}, &corev1.Secret{}))
	})
	if code, _ := postReport(t, op, pod, token, runreport.Report{Final: true}); code != http.StatusConflict {
		t.Errorf("report after the run ended: %d, want 409", code)
	}
	// Nothing else starts before the interval.
	podCountStays(t, ct, 1, time.Second, "no second crawl before the interval")
	// Recrawl once the interval has passed.
	op.passNextCrawlTime(t, ct)
	pod2 := waitPod(t, ct, 2)
	got = getTarget(t, ct)
	if c := readyCondition(got); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready flapped during the recrawl: %+v", c)
	}
	// The recrawl's progress does not replace the complete index.
	setPodPhase(t, pod2, corev1.PodRunning, 0)
	if code, body := postReport(t, op, pod2, runToken(t, pod2), runreport.Report{Result: runreport.Crawl{Pages: pages(base, 1)}}); code != http.StatusOK {
		t.Fatalf("recrawl progress: %d %s", code, body)
	}
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), si); err != nil {
		t.Fatal(err)
	}
	if len(si.Status.Pages) != 5 || si.Status.Progress == nil || si.Status.Progress.Pages != 1 {
		t.Errorf("recrawl progress replaced the index: %d pages, progress %+v", len(si.Status.Pages), si.Status.Progress)
	}
	if got.Status.EgressNodeName != "egress-ok" {
		t.Errorf("site moved nodes: %s", got.Status.EgressNodeName)
	}
}

// passNextCrawlTime moves the operator's clock just past the target's
// nextCrawlTime and pokes it.
func (o *harness) passNextCrawlTime(t *testing.T, ct *crawlv1.CrawlTarget) {
	t.Helper()
	next := getTarget(t, ct).Status.NextCrawlTime
	if next == nil {
		t.Fatal("no nextCrawlTime in status")
	}
	o.clock.SetTime(next.Add(time.Second))
	poke(t, ct)
}

// poke touches an annotation so the target is reconciled now, the way any
// unrelated edit would.
func poke(t *testing.T, ct *crawlv1.CrawlTarget) {
	t.Helper()
	patchAnnotation(t, ct, "test/poke", fmt.Sprint(time.Now().UnixNano()))
}

func TestResultsEndpointRefusesBadReports(t *testing.T) {
	createEgressNode(t, "egress-res", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "res", "https://res.example.com/", withMaxPages(3))
	other := createTarget(t, ns, "other", "https://other-res.example.com/")
	pod := waitPod(t, ct, 1)
	otherPod := waitPod(t, other, 1)
	token := runToken(t, pod)
	setPodPhase(t, pod, corev1.PodRunning, 0)

	tests := []struct {
		name  string
		pod   *corev1.Pod
		token string
		body  any
		want  int
	}{
		{"no token", pod, "", runreport.Report{}, http.StatusUnauthorized},
		{"wrong token", pod, "0123456789abcdef", runreport.Report{}, http.StatusForbidden},
		{"token of another run", otherPod, token, runreport.Report{}, http.StatusForbidden},
		{"bad JSON", pod, token, "{not json", http.StatusBadRequest},
		{"too large", pod, token, `{"result":{"pages":[{"title":"` + strings.Repeat("x", 3<<20) + `"}]}}`, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := postReport(t, op, tt.pod, tt.token, tt.body)
			if code != tt.want || !strings.Contains(body, `"error"`) {
				t.Errorf("status %d body %s, want %d with a JSON error", code, body, tt.want)
			}
		})
	}

	// A Pod that only looks like a crawler run (same labels, owner and a
	// token hash of its maker's choosing) is not the target's current run.
	fakeToken, fakeSum, _ := crawlpod.NewToken()
	fake := pod.DeepCopy()
	fake.ObjectMeta = metav1.ObjectMeta{Name: "res-impostor", Namespace: ns, Labels: pod.Labels,
		Annotations:     map[string]string{crawlpod.AnnotationSite: pod.Annotations[crawlpod.AnnotationSite], crawlpod.AnnotationTokenSHA256: fakeSum},
		OwnerReferences: pod.OwnerReferences}
	fake.Status = corev1.PodStatus{}
	if err := k8s.Create(context.Background(), fake); err != nil {
		t.Fatal(err)
	}
	eventually(t, "impostor in the cache", func() error {
		code, body := postReport(t, op, fake, fakeToken, runreport.Report{Final: true, Result: runreport.Crawl{Pages: pages("https://res.example.com", 1)}})
		if code != http.StatusForbidden || !strings.Contains(body, "not the current run") {
			return fmt.Errorf("impostor report: %d %s", code, body)
		}
		return nil
	})

	// Off-site pages are dropped and the budget holds, whatever the Pod says.
	rep := runreport.Report{Final: true, Result: runreport.Crawl{Pages: append(
		pages("https://evil.example.net", 2), pages("https://res.example.com", 10)...)}}
	if code, body := postReport(t, op, pod, token, rep); code != http.StatusOK {
		t.Fatalf("report: %d %s", code, body)
	}
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), si); err != nil {
		t.Fatal(err)
	}
	if len(si.Status.Pages) != 3 {
		t.Fatalf("stored %d pages, want the budget of 3", len(si.Status.Pages))
	}
	// The manager's cache holds the count, not the records, and no
	// managedFields (CacheOptions); the API server has both.
	if len(si.ManagedFields) == 0 {
		t.Error("the API server returned no managedFields: the cache check below proves nothing")
	}
	eventually(t, "the cached SiteIndex without page records", func() error {
		cached := &crawlv1.SiteIndex{}
		if err := op.cache.Get(context.Background(), client.ObjectKeyFromObject(ct), cached); err != nil {
			return err
		}
		if cached.Status.Stats.Pages != 3 || len(cached.Status.Pages) != 0 || cached.ManagedFields != nil {
			return fmt.Errorf("cached: stats %d, %d page records, %d managedFields", cached.Status.Stats.Pages, len(cached.Status.Pages), len(cached.ManagedFields))
		}
		return nil
	})
	if got := indexedPages(t, op, "res.example.com"); len(got) != 3 {
		t.Errorf("index backend holds %d pages of the site, want the budget of 3: %v", len(got), got)
	}
	if got := indexedPages(t, op, "evil.example.net"); len(got) != 0 {
		t.Errorf("off-site pages stored: %v", got)
	}
	if code, _ := postReport(t, op, pod, token, runreport.Report{}); code != http.StatusConflict {
		t.Errorf("progress after the final result: %d, want 409", code)
	}
}

func TestDuplicateSiteWaitsForItsOwner(t *testing.T) {
	createEgressNode(t, "egress-dup", "79.139.58.98")
	startOperator(t, operatorOptions{})
	ns1, ns2 := newNamespace(t), newNamespace(t)
	owner := createTarget(t, ns1, "owner", "https://dup.example.com/")
	waitPod(t, owner, 1)
	// Same site (default port spelled out, different path and case).
	dup := createTarget(t, ns2, "second", "https://DUP.example.com:443/other")

	got := waitReady(t, dup, metav1.ConditionFalse, crawlv1.ReasonDuplicateSite)
	if msg := readyCondition(got).Message; !strings.Contains(msg, ns1+"/owner") {
		t.Errorf("message %q does not name the owner", msg)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, crawlv1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Stalled = %+v", c)
	}
	if got.Status.Phase != crawlv1.PhaseDuplicate || len(crawlerPods(t, dup)) != 0 {
		t.Errorf("duplicate phase %s, pods %d", got.Status.Phase, len(crawlerPods(t, dup)))
	}

	ownerPods := crawlerPods(t, owner)
	if err := k8s.Delete(context.Background(), owner); err != nil {
		t.Fatal(err)
	}
	// envtest runs no garbage collector: the owner's Pod stays and holds
	// the host, so play the GC for it.
	for _, p := range ownerPods {
		_ = k8s.Delete(context.Background(), &p)
	}
	waitPod(t, dup, 1)
}

func TestOneCrawlPerHostAcrossSites(t *testing.T) {
	createEgressNode(t, "egress-host", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	first := createTarget(t, ns, "https", "https://host.example.com/")
	pod := waitPod(t, first, 1)
	second := createTarget(t, ns, "http", "http://host.example.com/")

	got := waitReady(t, second, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	if !strings.Contains(readyCondition(got).Message, "host.example.com") || got.Status.Phase != crawlv1.PhaseWaiting {
		t.Errorf("waiting status = %+v", got.Status)
	}
	podCountStays(t, second, 0, time.Second, "no second crawl of the host")
	finishCrawl(t, op, pod, "https://host.example.com", 2)
	waitPodAfterPokes(t, second, "second site crawled after the first")
}

func TestMaxCrawlsPerNode(t *testing.T) {
	createEgressNode(t, "egress-cap", "79.139.58.98")
	startOperator(t, operatorOptions{maxPerNode: 2})
	ns := newNamespace(t)
	a := createTarget(t, ns, "a", "https://a.cap.example.com/")
	b := createTarget(t, ns, "b", "https://b.cap.example.com/")
	waitPod(t, a, 1)
	pb := waitPod(t, b, 1)
	c := createTarget(t, ns, "c", "https://c.cap.example.com/")
	got := waitReady(t, c, metav1.ConditionFalse, crawlv1.ReasonWaitingForCapacity)
	if !strings.Contains(readyCondition(got).Message, "2 crawls") {
		t.Errorf("message = %q", readyCondition(got).Message)
	}
	// A slot frees up when a crawl ends, even a failed one.
	setPodPhase(t, pb, corev1.PodFailed, 1)
	waitPodAfterPokes(t, c, "third target crawled once a slot is free")
}

func TestNoEgressNodeIsReported(t *testing.T) {
	startOperator(t, operatorOptions{requireFCrDNS: true})
	ns := newNamespace(t)
	createEgressNode(t, "egress-unhealthy", "79.139.58.98")
	ct := createTarget(t, ns, "lonely", "https://lonely.example.com/")
	got := waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonNoEgressNode)
	if len(crawlerPods(t, got)) != 0 {
		t.Error("crawl started without a usable egress node")
	}
}

func TestFailedCrawlIsRetriedWithBackoff(t *testing.T) {
	createEgressNode(t, "egress-fail", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "flaky", "https://flaky.example.com/")
	pod := waitPod(t, ct, 1)
	setPodPhase(t, pod, corev1.PodFailed, 1)

	got := waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonCrawlFailed)
	if got.Status.ConsecutiveFailures != 1 || got.Status.Phase != crawlv1.PhaseFailed {
		t.Fatalf("status = %+v", got.Status)
	}
	if msg := readyCondition(got).Message; !strings.Contains(msg, "exit code 1") {
		t.Errorf("failure message %q lacks the exit code", msg)
	}
	if d := got.Status.NextCrawlTime.Sub(got.Status.LastFailureTime.Time); d != time.Minute {
		t.Errorf("first retry after %s, want 1m", d)
	}
	podCountStays(t, ct, 1, time.Second, "no retry before the backoff")
	op.passNextCrawlTime(t, ct)
	pod2 := waitPod(t, ct, 2)
	setPodPhase(t, pod2, corev1.PodFailed, 1)
	eventually(t, "second failure recorded", func() error {
		st := getTarget(t, ct).Status
		if st.ConsecutiveFailures != 2 || st.NextCrawlTime.Sub(st.LastFailureTime.Time) != 2*time.Minute {
			return fmt.Errorf("failures=%d", st.ConsecutiveFailures)
		}
		return nil
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	createEgressNode(t, "egress-ra", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "busy", "https://busy.example.com/")
	pod := waitPod(t, ct, 1)
	setPodPhase(t, pod, corev1.PodRunning, 0)
	retryAfter := op.clock.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	if code, body := postReport(t, op, pod, runToken(t, pod), runreport.Report{Final: true, Result: runreport.Crawl{
		RetryAfter: retryAfter.Format(time.RFC3339)}}); code != http.StatusOK {
		t.Fatalf("report: %d %s", code, body)
	}
	setPodPhase(t, pod, corev1.PodSucceeded, 0)
	got := waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonCrawlFailed)
	if got.Status.NextCrawlTime == nil || !got.Status.NextCrawlTime.Time.Equal(retryAfter) {
		t.Errorf("next crawl %v, want the site's Retry-After %v", got.Status.NextCrawlTime, retryAfter)
	}
	// Not even a "crawl now" request goes before it.
	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "now-please")
	op.clock.Step(2 * time.Hour)
	poke(t, ct)
	podCountStays(t, ct, 1, time.Second, "no crawl before Retry-After")
	op.passNextCrawlTime(t, ct)
	waitPod(t, ct, 2)
}

func patchAnnotation(t *testing.T, ct *crawlv1.CrawlTarget, key, value string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value))
	if err := k8s.Patch(context.Background(), ct, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

func TestRequestedAtAnnotationTriggersOneCrawl(t *testing.T) {
	createEgressNode(t, "egress-req", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "req", "https://req.example.com/")
	finishCrawl(t, op, waitPod(t, ct, 1), "https://req.example.com", 1)
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	specBefore := getTarget(t, ct).Spec

	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "2026-11-29T12:00:00Z")
	pod := waitPod(t, ct, 2)
	if pod.Annotations[crawlpod.AnnotationRequestedAt] != "2026-11-29T12:00:00Z" {
		t.Errorf("pod does not record the request: %v", pod.Annotations)
	}
	eventually(t, "request echoed in status", func() error {
		if v := getTarget(t, ct).Status.LastHandledRequestedAt; v != "2026-11-29T12:00:00Z" {
			return fmt.Errorf("lastHandledRequestedAt = %q", v)
		}
		return nil
	})
	finishCrawl(t, op, pod, "https://req.example.com", 1)
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	poke(t, ct)
	podCountStays(t, ct, 2, time.Second, "the same request value does not crawl again")
	got := getTarget(t, ct)
	if !equality.Semantic.DeepEqual(got.Spec, specBefore) || got.Generation != 1 {
		t.Errorf("spec mutated: generation %d, %+v", got.Generation, got.Spec)
	}
}

func TestSuspendStopsNewCrawls(t *testing.T) {
	createEgressNode(t, "egress-sus", "79.139.58.98")
	startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "sus", "https://sus.example.com/", suspended())
	waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonSuspended)
	patchAnnotation(t, ct, crawlv1.RequestedAtAnnotation, "x")
	podCountStays(t, ct, 0, time.Second, "no crawl while suspended")
	got := getTarget(t, ct)
	got.Spec.CrawlPolicy = crawlv1.CrawlPolicyScheduled
	if err := k8s.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ct, 1)
}

func TestOperatorRestartMidCrawlKeepsOneCrawl(t *testing.T) {
	createEgressNode(t, "egress-restart", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "restart", "https://restart.example.com/")
	pod := waitPod(t, ct, 1)
	setPodPhase(t, pod, corev1.PodRunning, 0)
	waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonCrawling)
	op.Stop()

	op2 := startOperator(t, operatorOptions{})
	poke(t, ct)
	podCountStays(t, ct, 1, 2*time.Second, "one crawler Pod after the restart")
	finishCrawl(t, op2, pod, "https://restart.example.com", 4)
	got := waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	if got.Status.Runs != 1 || got.Status.PagesIndexed != 4 {
		t.Errorf("status after restart = %+v", got.Status)
	}
}

func TestDeletedCrawlerPodIsRetried(t *testing.T) {
	createEgressNode(t, "egress-del", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "del", "https://del.example.com/")
	pod := waitPod(t, ct, 1)
	setPodPhase(t, pod, corev1.PodRunning, 0)
	if err := k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	got := waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonCrawlFailed)
	if !strings.Contains(readyCondition(got).Message, "deleted") {
		t.Errorf("message = %q", readyCondition(got).Message)
	}
	op.passNextCrawlTime(t, ct)
	waitPod(t, ct, 2)
}

// Clusters that mark their egress nodes differently configure the label
// and taint; crawler Pods follow them.
func TestCustomEgressLabelAndTaint(t *testing.T) {
	sel := egress.Selector{LabelKey: "pool", LabelValue: "public-egress", TaintKey: "dedicated", TaintValue: "crawler", TaintEffect: corev1.TaintEffectNoExecute}
	// A node with the default label must not be used.
	createEgressNode(t, "egress-default-label", "79.139.58.121")
	testutil.CreateNodeSelectedBy(t, k8s, sel, "egress-custom", "79.139.58.98")
	startOperator(t, operatorOptions{egress: sel})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "custom", "https://custom-egress.example.com/")
	pod := waitPod(t, ct, 1)
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if terms[0].MatchFields[0].Values[0] != "egress-custom" || pod.Spec.NodeSelector["pool"] != "public-egress" {
		t.Errorf("pod not on the custom egress node: %v %v", terms, pod.Spec.NodeSelector)
	}
	if tol := pod.Spec.Tolerations; len(tol) == 0 || tol[0].Key != "dedicated" || tol[0].Effect != corev1.TaintEffectNoExecute {
		t.Errorf("tolerations = %+v", tol)
	}
}

// A Pod that never starts (its node gone, its image unpullable) must not
// hold its host for ever: after its deadline plus a grace period the
// operator deletes it and counts a failure.
func TestStuckCrawlerPodIsGivenUp(t *testing.T) {
	createEgressNode(t, "egress-stuck", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "stuck", "https://stuck.example.com/")
	pod := waitPod(t, ct, 1)
	podCountStays(t, ct, 1, time.Second, "a Pending Pod is left alone before its deadline")
	op.clock.SetTime(pod.CreationTimestamp.Add(testDeadline + 11*time.Minute))
	poke(t, ct)
	got := waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonCrawlFailed)
	if !strings.Contains(readyCondition(got).Message, "did not finish within") {
		t.Errorf("message = %q", readyCondition(got).Message)
	}
	eventually(t, "stuck Pod deleted", func() error {
		return isNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{}))
	})
}

// The crawler may end badly after its final result was stored (its last
// request got no answer); the stored result still counts, and the site is
// not crawled again.
func TestStoredResultCountsWhenThePodFails(t *testing.T) {
	createEgressNode(t, "egress-stored", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "stored", "https://stored.example.com/")
	pod, token := runningPod(t, ct)
	final := runreport.Report{Final: true, Result: runreport.Crawl{Pages: pages("https://stored.example.com", 3)}}
	if code, body := postReport(t, op, pod, token, final); code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	// The same final report again (the first answer was lost) is fine.
	if code, body := postReport(t, op, pod, token, final); code != http.StatusOK {
		t.Errorf("repeated final report: %d %s", code, body)
	}
	setPodPhase(t, pod, corev1.PodFailed, 1)
	got := waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	if got.Status.PagesIndexed != 3 || got.Status.ConsecutiveFailures != 0 {
		t.Errorf("status = %+v", got.Status)
	}
	podCountStays(t, ct, 1, time.Second, "no second crawl")
}

// A crash between creating the Pod and recording it leaves the status a run
// behind; the operator adopts the running Pod instead of starting another.
func TestLostStatusAdoptsTheRunningPod(t *testing.T) {
	createEgressNode(t, "egress-adopt", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "adopt", "https://adopt.example.com/")
	pod := waitPod(t, ct, 1)
	op.Stop()
	// Forget the run, as if the status patch had never landed.
	lost := getTarget(t, ct)
	lost.Status.Runs, lost.Status.EgressNodeName, lost.Status.EgressIP = 0, "", ""
	if err := k8s.Status().Update(context.Background(), lost); err != nil {
		t.Fatal(err)
	}
	op2 := startOperator(t, operatorOptions{})
	eventually(t, "run adopted", func() error {
		if st := getTarget(t, ct).Status; st.Runs != 1 || st.EgressNodeName != "egress-adopt" {
			return fmt.Errorf("runs = %d, node = %q", st.Runs, st.EgressNodeName)
		}
		return nil
	})
	podCountStays(t, ct, 1, time.Second, "no second Pod")
	finishCrawl(t, op2, pod, "https://adopt.example.com", 2)
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
}

// Moving spec.url to another site stops the old site's crawl and crawls the
// new site at once: nothing known about the old site applies.
func TestURLChangeStartsOver(t *testing.T) {
	createEgressNode(t, "egress-move", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "move", "https://old-site.example.com/")
	finishCrawl(t, op, waitPod(t, ct, 1), "https://old-site.example.com", 4)
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)

	moved := getTarget(t, ct)
	moved.Spec.URL = "https://new-site.example.com/"
	if err := k8s.Update(context.Background(), moved); err != nil {
		t.Fatal(err)
	}
	pod := waitPod(t, ct, 2)
	if site := pod.Annotations[crawlpod.AnnotationSite]; site != "https://new-site.example.com:443" {
		t.Errorf("new crawl is of %s", site)
	}
	got := waitReady(t, ct, metav1.ConditionFalse, crawlv1.ReasonCrawling)
	if got.Status.PagesIndexed != 0 || got.Status.LastCrawlTime != nil || siteIndexPages(t, ct) != 0 {
		t.Errorf("old site's results kept: %+v", got.Status)
	}
}

// A Secret of a run's name may be there before the run: a namesake's
// (a deleted target's run of the same name, whose Secret the garbage
// collector has not removed yet; envtest runs no collector, so here it
// stays) or one that is not the operator's. The manager cannot read
// Secrets, so it does not reuse the token: it deletes the stale Secret and
// creates the run's own, and the stale token opens nothing.
func TestStaleTokenSecretIsReplaced(t *testing.T) {
	createEgressNode(t, "egress-stale", "79.139.58.98")
	ns := newNamespace(t)
	ct := createTarget(t, ns, "stale", "https://stale-token.example.com/")
	ct = getTarget(t, ct)
	podName := crawlpod.PodName(ct.Name, 1)
	const staleToken = "stale-token-of-a-namesake"
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName, UID: "uid-of-a-deleted-namesake"}}
	stale := crawlpod.TokenSecret(crawlpod.Run{Target: ct, Number: 1}, gone, staleToken)
	if err := k8s.Create(context.Background(), stale); err != nil {
		t.Fatal(err)
	}

	op := startOperator(t, operatorOptions{})
	pod := waitPod(t, ct, 1)
	if crawlpod.TokenMatches(pod, staleToken) {
		t.Fatal("the run took the stale Secret's token")
	}
	secret := &corev1.Secret{}
	eventually(t, "the run's own token Secret", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: crawlpod.SecretName(podName)}, secret); err != nil {
			return err
		}
		if secret.UID == stale.UID {
			return fmt.Errorf("the stale Secret is still there")
		}
		return nil
	})
	if token := string(secret.Data[crawlpod.TokenKey]); !crawlpod.TokenMatches(pod, token) {
		t.Errorf("the Pod's token hash does not match its Secret's token %q", token)
	}
	if owners := secret.OwnerReferences; len(owners) != 1 || owners[0].UID != pod.UID {
		t.Errorf("the new Secret's owners %+v, want the run's Pod %s", owners, pod.UID)
	}
	setPodPhase(t, pod, corev1.PodRunning, 0)
	if code, _ := postReport(t, op, pod, staleToken, runreport.Report{Result: runreport.Crawl{Pages: pages("https://stale-token.example.com", 1)}}); code != http.StatusForbidden {
		t.Errorf("report with the stale token: HTTP %d, want 403", code)
	}
	finishCrawl(t, op, pod, "https://stale-token.example.com", 2)
	waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	podCountStays(t, ct, 1, time.Second, "one crawler Pod")
}

// A run whose token Secret cannot be made (here a stale Secret of its
// name that a finalizer keeps) does not start: each attempt's Pod, which
// could never get its token, is deleted at once, the run is not recorded,
// and the error shows on the target. Once the Secret can be made, the run
// starts afresh, with a Pod that has it.
func TestPodIsDeletedWhenItsTokenSecretCannotBeMade(t *testing.T) {
	createEgressNode(t, "egress-held-token", "79.139.58.98")
	ns := newNamespace(t)
	ct := createTarget(t, ns, "held", "https://held-token.example.com/")
	ct = getTarget(t, ct)
	podName := crawlpod.PodName(ct.Name, 1)
	held := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: crawlpod.SecretName(podName),
		Finalizers: []string{"test.lohisoft.com/hold"}}}
	if err := k8s.Create(context.Background(), held); err != nil {
		t.Fatal(err)
	}

	op := startOperator(t, operatorOptions{})
	eventually(t, "the failed start on the target", func() error {
		got := getTarget(t, ct)
		c := readyCondition(got)
		if c.Status != metav1.ConditionUnknown || c.Reason != crawlv1.ReasonReconcileError || !strings.Contains(c.Message, "token Secret") {
			return fmt.Errorf("Ready = %+v", c)
		}
		return nil
	})
	// The manager retries with back-off; a Pod lives from its creation to
	// its Secret's refusal only. One that stayed would have been adopted,
	// its token unknown, by the next attempt (the stale Secret's name
	// being taken), and recorded as run 1.
	eventually(t, "no crawler Pod left by the failed starts", func() error {
		if pods := crawlerPods(t, ct); len(pods) != 0 {
			return fmt.Errorf("crawler Pod %s", pods[0].Name)
		}
		return nil
	})
	if got := getTarget(t, ct); got.Status.Runs != 0 {
		t.Errorf("runs %d, want the failed starts unrecorded", got.Status.Runs)
	}

	// The finalizer goes: the manager's delete of the stale Secret
	// completes, and the next attempt makes the run's own.
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(held), held); err != nil {
		t.Fatal(err)
	}
	if held.DeletionTimestamp == nil {
		t.Fatal("the manager did not delete the stale Secret")
	}
	held.Finalizers = nil
	if err := k8s.Update(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	poke(t, ct)
	pod := &corev1.Pod{}
	var token string
	eventually(t, "run 1 in a Pod with its token Secret", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: podName}, pod); err != nil {
			return err
		}
		secret := &corev1.Secret{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: crawlpod.SecretName(podName)}, secret); err != nil {
			return err
		}
		if token = string(secret.Data[crawlpod.TokenKey]); !crawlpod.TokenMatches(pod, token) {
			return fmt.Errorf("the Pod's token hash does not match its Secret's token (yet)")
		}
		return nil
	})
	setPodPhase(t, pod, corev1.PodRunning, 0)
	finishCrawl(t, op, pod, "https://held-token.example.com", 2)
	if got := waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled); got.Status.Runs != 1 {
		t.Errorf("runs %d, want 1", got.Status.Runs)
	}
}

// A start that stopped between creating its Pod and the Pod's token Secret
// (a crash) leaves a Pod whose token no one knows: its crawler could never
// start, let alone report. The next start deletes it and starts the run
// afresh, whether the crawl queue shows the Pod as the target's running
// crawl or the Pod is only met when the run's Pod is created again (a
// cache that has not shown it yet; here a Pod without the managed-by
// label, which the queue does not follow).
func TestTokenlessPodOfAnInterruptedStartIsReplaced(t *testing.T) {
	for i, c := range []struct {
		name    string
		inQueue bool
	}{{"seen by the crawl queue", true}, {"met by its name", false}} {
		t.Run(c.name, func(t *testing.T) {
			node := fmt.Sprintf("egress-tokenless-%d", i)
			createEgressNode(t, node, "79.139.58.98")
			ns := newNamespace(t)
			url := fmt.Sprintf("https://tokenless-%d.example.com/", i)
			ct := getTarget(t, createTarget(t, ns, "tokenless", url))
			st, err := site.Parse(url)
			if err != nil {
				t.Fatal(err)
			}
			const lostToken = "token-of-an-interrupted-start"
			orphan := crawlpod.Pod(crawlpod.Run{Target: ct, Site: st, Number: 1, Node: node, NodeIP: "79.139.58.98",
				TokenSHA256: crawlpod.TokenSHA256(lostToken)}, crawlpod.DefaultConfig())
			if !c.inQueue {
				delete(orphan.Labels, crawlpod.LabelManagedBy)
			}
			if err := k8s.Create(context.Background(), orphan); err != nil {
				t.Fatal(err)
			}

			op := startOperator(t, operatorOptions{})
			pod := &corev1.Pod{}
			eventually(t, "run 1 started again in a new Pod", func() error {
				if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(orphan), pod); err != nil {
					return err
				}
				if pod.UID == orphan.UID {
					return fmt.Errorf("the Pod of the interrupted start is still there")
				}
				return nil
			})
			token := runToken(t, pod)
			if !crawlpod.TokenMatches(pod, token) || crawlpod.TokenMatches(pod, lostToken) {
				t.Errorf("the new Pod's token hash does not match its Secret's token")
			}
			setPodPhase(t, pod, corev1.PodRunning, 0)
			finishCrawl(t, op, pod, strings.TrimSuffix(url, "/"), 2)
			if got := waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled); got.Status.Runs != 1 || got.Status.ConsecutiveFailures != 0 {
				t.Errorf("runs %d, failures %d; want run 1, no failure", got.Status.Runs, got.Status.ConsecutiveFailures)
			}
			podCountStays(t, ct, 1, time.Second, "one crawler Pod")
		})
	}
}

// A crash after creating a run's Pod and Secret, with the status patch
// lost, while the Pod has already finished: the next start finds the Pod
// and adopts the finished run (it needs no token any more) instead of
// starting another; its delivered result counts.
func TestFinishedRunWithLostStatusIsAdopted(t *testing.T) {
	createEgressNode(t, "egress-finished-adopt", "79.139.58.98")
	op := startOperator(t, operatorOptions{})
	ns := newNamespace(t)
	ct := createTarget(t, ns, "finished-adopt", "https://finished-adopt.example.com/")
	pod, token := runningPod(t, ct)
	final := runreport.Report{Final: true, Result: runreport.Crawl{Pages: pages("https://finished-adopt.example.com", 3)}}
	if code, body := postReport(t, op, pod, token, final); code != http.StatusOK {
		t.Fatalf("final report: %d %s", code, body)
	}
	op.Stop()
	// The Pod finished while no manager ran, and the run was never
	// recorded: as if the status patch after creating it had not landed.
	setPodPhase(t, pod, corev1.PodSucceeded, 0)
	lost := getTarget(t, ct)
	lost.Status.Runs, lost.Status.EgressNodeName, lost.Status.EgressIP = 0, "", ""
	if err := k8s.Status().Update(context.Background(), lost); err != nil {
		t.Fatal(err)
	}

	startOperator(t, operatorOptions{})
	got := waitReady(t, ct, metav1.ConditionTrue, crawlv1.ReasonCrawled)
	if got.Status.Runs != 1 || got.Status.PagesIndexed != 3 {
		t.Errorf("status = runs %d, pages %d; want the adopted run 1 with 3 pages", got.Status.Runs, got.Status.PagesIndexed)
	}
	podCountStays(t, ct, 1, time.Second, "no second crawl")
	eventually(t, "token Secret deleted with the run", func() error {
		return isNotFound(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: crawlpod.SecretName(pod.Name)}, &corev1.Secret{}))
	})
}

// indexedPages lists the URLs the index backend holds of host, through the
// index's own API.
func indexedPages(t *testing.T, op *harness, host string) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	op.Index.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/sites/"+host+"/pages", nil))
	if rec.Code == http.StatusNotFound {
		return nil
	}
	var res struct {
		Pages []struct{ URL string } `json:"pages"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("pages of %s: %d %s", host, rec.Code, rec.Body)
	}
	var out []string
	for _, p := range res.Pages {
		out = append(out, p.URL)
	}
	return out
}
