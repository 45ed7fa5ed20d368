// Package rbac runs the whole operator under exactly the RBAC it ships
// with, on a real API server (envtest) that writes an audit log of the
// manager's requests: config/rbac as kustomize installs it, and the Helm
// chart's rendered RBAC with and without watchNamespaces. A call the RBAC
// does not allow fails a test, and so does a verb the RBAC grants that no
// code path uses.
package rbac

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/operator/operatortest"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

var (
	repoRoot = filepath.Join("..", "..")
	// managerConfig is config/rbac's ServiceAccount.
	managerConfig *rest.Config
	k8s           client.Client
	ctx           = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, repoRoot, &managerConfig, &k8s))
}

const waitTimeout = 30 * time.Second

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, what, check)
}

// leaderElectionID is the Lease the manager takes (internal/operator).
const leaderElectionID = "crawl-operator.crawl.lohisoft.com"

// running is one operator, wired as cmd/manager wires it, with leader
// election on and the results endpoint on a loopback test server.
type running struct {
	results string
	// pages serves the index port (the search API, the HTML pages, /bot)
	// from the manager's cache, as its server does.
	pages http.Handler
	stop  func()
}

// operatorOptions say how a test runs the operator.
type operatorOptions struct {
	// leaseNS is where leader election takes its Lease.
	leaseNS string
	// namespaces are the watched namespaces (nil: all).
	namespaces watchns.Namespaces
	// checkInterval is the FCrDNS self-check's interval (default 1h).
	checkInterval time.Duration
}

// startOperator runs the operator as the user of cfg.
func startOperator(t *testing.T, cfg *rest.Config, opts operatorOptions) *running {
	t.Helper()
	o := operatortest.Options(t, dnstest.Zone{})
	o.Manager.LeaderElect, o.Manager.LeaderElectionNamespace = true, opts.leaseNS
	o.Manager.WatchNamespaces = opts.namespaces
	// The crawler NetworkPolicy is on, as shipped: its verbs are checked too.
	o.NetworkPolicy.ManagerNamespace = testenv.ManagerNamespace
	o.NetworkPolicy.ResultsPort = 8083
	if opts.checkInterval > 0 {
		o.Index.CheckInterval = opts.checkInterval
	}
	op := operatortest.New(t, cfg, o, func(m *ctrl.Options) {
		// The next test's manager takes the Lease at once.
		m.LeaderElectionReleaseOnCancel = true
	}).Start(t)
	return &running{results: op.ResultsURL, pages: op.Index.Handler(), stop: op.Stop}
}

// bindLikeConfigRBAC makes a ServiceAccount user of its own (so the audit
// log tells its requests apart) bound exactly as config/rbac binds its
// ServiceAccount: the generated ClusterRole and the leader-election Role
// in namespace "system".
func bindLikeConfigRBAC(t *testing.T, name string) *rest.Config {
	t.Helper()
	objs, err := testenv.ConfigRBAC(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRoleBinding", "RoleBinding":
			b := o.DeepCopy()
			b.SetName(b.GetName() + "-" + name)
			subjects := []any{map[string]any{"kind": rbacv1.ServiceAccountKind, "name": name, "namespace": testenv.ManagerNamespace}}
			if err := unstructured.SetNestedSlice(b.Object, subjects, "subjects"); err != nil {
				t.Fatal(err)
			}
			if err := testenv.Apply(ctx, k8s, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg, err := testenv.Current().ServiceAccountConfig(testenv.ManagerNamespace, name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// requestsOf returns the audit log's requests by one user.
func requestsOf(t *testing.T, user string) []testenv.Request {
	t.Helper()
	all, err := testenv.Current().Requests()
	if err != nil {
		t.Fatal(err)
	}
	var out []testenv.Request
	for _, r := range all {
		if r.User == user {
			out = append(out, r)
		}
	}
	return out
}

// noneRefused fails the test for each of user's requests RBAC refused.
func noneRefused(t *testing.T, user string) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range requestsOf(t, user) {
		if r.Code == 403 && !seen[r.String()] {
			seen[r.String()] = true
			t.Errorf("refused: %s", r)
		}
	}
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func createTarget(t *testing.T, ns, name, url string) *crawlv1.CrawlTarget {
	t.Helper()
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: crawlv1.CrawlTargetSpec{URL: url}}
	if err := k8s.Create(ctx, ct); err != nil {
		t.Fatal(err)
	}
	// envtest runs no garbage collector: the next test's manager must not
	// find this test's targets and Pods.
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, ct)
		_ = k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	})
	return ct
}

func getTarget(t *testing.T, ct *crawlv1.CrawlTarget) *crawlv1.CrawlTarget {
	t.Helper()
	got := &crawlv1.CrawlTarget{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(ct), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// waitPod waits for the Pod of run n of a target.
func waitPod(t *testing.T, ct *crawlv1.CrawlTarget, n int64) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: ct.Namespace, Name: crawlpod.PodName(ct.Name, n)}
	eventually(t, "crawler Pod "+key.String(), func() error { return k8s.Get(ctx, key, pod) })
	return pod
}

// waitReady waits until the target's Ready condition has reason.
func waitReady(t *testing.T, ct *crawlv1.CrawlTarget, reason string) *crawlv1.CrawlTarget {
	t.Helper()
	var got *crawlv1.CrawlTarget
	eventually(t, ct.Name+" Ready reason "+reason, func() error {
		got = getTarget(t, ct)
		for _, c := range got.Status.Conditions {
			if c.Type == crawlv1.ConditionReady && c.Reason == reason && c.ObservedGeneration == got.Generation {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	return got
}

// crawl runs one crawl of a target to its end: its Pod, a final report of
// n pages through the results endpoint, the Pod Succeeded, the target
// Ready.
func crawl(t *testing.T, op *running, ct *crawlv1.CrawlTarget, run int64, base string, n int) {
	t.Helper()
	pod := waitPod(t, ct, run)
	testutil.FinishCrawl(t, k8s, op.results, pod, base, n)
	eventually(t, fmt.Sprintf("run %d of %s recorded", run, ct.Name), func() error {
		got := getTarget(t, ct)
		if got.Status.LastFinishedRun < run {
			return fmt.Errorf("last finished run %d", got.Status.LastFinishedRun)
		}
		return nil
	})
	waitReady(t, ct, crawlv1.ReasonCrawled)
}

// requestCrawl asks for a crawl now, as a user does.
func requestCrawl(t *testing.T, ct *crawlv1.CrawlTarget, value string) {
	t.Helper()
	got := getTarget(t, ct)
	patch := client.MergeFrom(got.DeepCopy())
	if got.Annotations == nil {
		got.Annotations = map[string]string{}
	}
	got.Annotations[crawlv1.RequestedAtAnnotation] = value
	if err := k8s.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
}

// waitLeaderEvent waits for the core/v1 Event controller-runtime records
// when the manager becomes leader, on the Lease in namespace ns.
func waitLeaderEvent(t *testing.T, ns string) {
	t.Helper()
	eventually(t, "a core/v1 Event for the Lease "+ns+"/"+leaderElectionID, func() error {
		var evs corev1.EventList
		if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
			if e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == leaderElectionID &&
				e.Reason == "LeaderElection" && strings.Contains(e.Message, "became leader") {
				return nil
			}
		}
		sort.Strings(seen)
		return fmt.Errorf("events in %s: %q", ns, seen)
	})
}

// enforceExclusion excludes domain and waits until the Exclusion is
// enforced on exactly one CrawlTarget, with wantPurged pages purged
// (any number when negative).
func enforceExclusion(t *testing.T, namePrefix, domain string, wantPurged int64) {
	t.Helper()
	ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: namePrefix},
		Spec: crawlv1.ExclusionSpec{Domain: domain, Description: "asked by email"}}
	if err := k8s.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ex) })
	eventually(t, "Exclusion enforced", testutil.ExclusionReady(k8s, ex, 1, wantPurged))
}
