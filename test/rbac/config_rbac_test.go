package rbac

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/lohisoft/crawl-operator/internal/crawlpod"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/index/fcrdns"
	"github.com/lohisoft/crawl-operator/index/syncer"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// grantedButUnseen are permissions the roles grant for a library's code
// path that no test can reach, with the reason.
var grantedButUnseen = map[testenv.Permission]string{
	{Group: "", Resource: "events", Verb: "patch"}: "client-go's core Event recorder, which controller-runtime's leader " +
		"election uses, patches an Event that repeats; a manager records \"became leader\" once per process, so it never repeats in a test",
	{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}: "the secured metrics endpoint's authentication; " +
		"this suite serves no metrics, cmd/manager's TestMetricsNeedAuthentication runs it (401 without a token, 200 with the reader role)",
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}: "the secured metrics endpoint's authorization; " +
		"this suite serves no metrics, cmd/manager's TestMetricsNeedAuthentication runs it (403 without the reader role)",
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: "get"}: "the conversion webhook's caBundle injector " +
		"(internal/conversion); this suite serves no webhook, test/conversion runs it as config/rbac's ServiceAccount, where a refused request fails the suite",
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: "patch"}: "the conversion webhook's caBundle injector " +
		"(internal/conversion); this suite serves no webhook, test/conversion runs it as config/rbac's ServiceAccount, where a refused request fails the suite",
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions/status", Verb: "patch"}: "the storage migration " +
		"(internal/conversion) setting storedVersions; this suite serves no webhook, test/conversion migrates objects stored as v1alpha1 as config/rbac's ServiceAccount",
	{Group: "crawl.lohisoft.com", Resource: "exclusions", Verb: "patch"}: "the storage migration rewriting Exclusions stored as v1alpha1; " +
		"this suite serves no webhook, test/conversion migrates them as config/rbac's ServiceAccount",
}

// configRoles are config/rbac's ClusterRole and leader-election Role.
func configRoles(t *testing.T) map[testenv.Permission]bool {
	t.Helper()
	objs, err := testenv.ConfigRBAC(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := testenv.Rules(objs)
	if err != nil {
		t.Fatal(err)
	}
	granted, err := testenv.Granted(rules)
	if err != nil {
		t.Fatal(err)
	}
	return granted
}

// The manager, under its own ServiceAccount bound exactly as config/rbac
// binds the manager's, goes through every code path that talks to the
// API server: leader election, crawls and their results, a repeated
// Event, a run stopped by a moved spec.url, an Exclusion. The audit log
// then shows that every request was allowed, and that every verb
// config/rbac grants (generated from the +kubebuilder:rbac markers, plus
// the leader-election Role) was used: a verb nothing uses fails here.
func TestConfigRBACGrantsExactlyWhatTheOperatorUses(t *testing.T) {
	const sa = "rbac-exact"
	cfg := bindLikeConfigRBAC(t, sa)
	user := testenv.ServiceAccountUser(testenv.ManagerNamespace, sa)
	node := testutil.CreateEgressNode(t, k8s, "egress-rbac-exact", "79.139.58.98")
	// The test's DNS knows no names, so the node fails the FCrDNS
	// self-check (crawls do not require it here) and gets a Warning
	// Event at every check; the recorder patches the repeats into a series.
	op := startOperator(t, cfg, operatorOptions{leaseNS: testenv.ManagerNamespace, checkInterval: 200 * time.Millisecond})
	ns := newNamespace(t, "rbac-exact-")
	eventually(t, "the node's FCrDNS Warning Event patched into a series", func() error {
		var evs eventsv1.EventList
		if err := k8s.List(ctx, &evs, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Node" && e.Regarding.Name == node.Name && e.Reason == fcrdns.ReasonFailed && e.Series != nil {
				return nil
			}
		}
		return fmt.Errorf("no %s Event with a series on Node %s", fcrdns.ReasonFailed, node.Name)
	})

	// Two crawls of a site to their end.
	ct := createTarget(t, ns, "site", "https://rbac-exact.example/")
	crawl(t, op, ct, 1, "https://rbac-exact.example", 2)
	// Someone loosens the crawler NetworkPolicy by hand: the next crawl
	// starts only after the operator has put it back.
	np := &networkingv1.NetworkPolicy{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: crawlpod.NetworkPolicyName}, np); err != nil {
		t.Fatal(err)
	}
	np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	if err := k8s.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	requestCrawl(t, ct, "second")
	crawl(t, op, ct, 2, "https://rbac-exact.example", 3)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.PolicyTypes) != 2 {
		t.Errorf("the loosened NetworkPolicy was not put back: policyTypes %v", np.Spec.PolicyTypes)
	}

	// The manager restarts on an empty index (a backend emptied, or
	// restored from an old backup): its start-up check asks for a crawl of
	// the site, whose texts only the backend kept. That third crawl is
	// stopped by moving spec.url: its Pod and token go, the SiteIndex is
	// updated to the new site, which is crawled at once.
	op.stop()
	op = startOperator(t, cfg, operatorOptions{leaseNS: testenv.ManagerNamespace, checkInterval: 200 * time.Millisecond})
	third := waitPod(t, ct, 3)
	if v := getTarget(t, ct).Annotations[crawlv1.RequestedAtAnnotation]; !strings.HasPrefix(v, syncer.ReindexRequestPrefix) {
		t.Errorf("the third crawl was not asked for by the start-up check: requested-at %q", v)
	}
	testutil.SetPodPhase(t, k8s, third, corev1.PodRunning, 0)
	moved := getTarget(t, ct)
	moved.Spec.URL = "https://rbac-exact-moved.example/"
	if err := k8s.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ct, 4)
	eventually(t, "the old site's Pod deleted", func() error {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(third), &corev1.Pod{})
		if client.IgnoreNotFound(err) != nil || err == nil {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})

	// An Exclusion of the new site stops its crawl at once.
	enforceExclusion(t, "rbac-exact-", "rbac-exact-moved.example", -1)
	waitReady(t, ct, crawlv1.ReasonExcluded)
	op.stop()

	used := map[testenv.Permission]bool{}
	for _, r := range requestsOf(t, user) {
		used[r.Permission()] = true
		if r.Verb == "watch" && strings.Contains(r.URI, "sendInitialEvents=true") {
			// An informer's initial list, streamed by a watch (WatchList).
			// An API server that does not stream initial lists (WatchList
			// is off by default in the oldest Kubernetes the chart
			// supports, 1.29) gets a list request instead: the list verb
			// is used all the same.
			l := r.Permission()
			l.Verb = "list"
			used[l] = true
		}
	}
	noneRefused(t, user)
	granted := configRoles(t)
	var unused, ungranted []string
	for p := range granted {
		if !used[p] && grantedButUnseen[p] == "" {
			unused = append(unused, p.String())
		}
	}
	for p := range used {
		if !granted[p] {
			ungranted = append(ungranted, p.String())
		}
	}
	sort.Strings(unused)
	sort.Strings(ungranted)
	for _, p := range unused {
		t.Errorf("config/rbac grants %s, which no request of the manager used: drop the verb (the +kubebuilder:rbac markers, then make manifests; or config/rbac/leader_election_role.yaml)", p)
	}
	for _, p := range ungranted {
		t.Errorf("the manager used %s, which config/rbac does not grant", p)
	}
	for p, why := range grantedButUnseen {
		if !granted[p] {
			t.Errorf("grantedButUnseen lists %s (%s), which config/rbac no longer grants: remove it", p, why)
		}
	}
	var perms []string
	for p := range used {
		perms = append(perms, p.String())
	}
	sort.Strings(perms)
	t.Logf("the manager used %d permissions: %v", len(perms), perms)
}

// With leader election on, controller-runtime records a core/v1 Event on
// the Lease when the manager becomes leader; config/rbac's leader-election
// Role lets it (it used to grant events.k8s.io only, and the Event was
// refused at every leadership change).
func TestLeaderElectionRecordsItsEvent(t *testing.T) {
	user := testenv.ServiceAccountUser(testenv.ManagerNamespace, testenv.ManagerServiceAccount)
	before := leaderEvents(t, testenv.ManagerNamespace)
	startOperator(t, managerConfig, operatorOptions{leaseNS: testenv.ManagerNamespace})
	eventually(t, "a new core/v1 Event: became leader", func() error {
		if n := leaderEvents(t, testenv.ManagerNamespace); n <= before {
			return fmt.Errorf("%d leader-election Events, as before", n)
		}
		return nil
	})
	lease := &unstructured.Unstructured{}
	lease.SetAPIVersion("coordination.k8s.io/v1")
	lease.SetKind("Lease")
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: testenv.ManagerNamespace, Name: leaderElectionID}, lease); err != nil {
		t.Fatalf("the Lease: %v", err)
	}
	noneRefused(t, user)
}

// leaderEvents counts the "became leader" core/v1 Events on the Lease.
func leaderEvents(t *testing.T, ns string) int {
	t.Helper()
	var evs corev1.EventList
	if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == leaderElectionID && e.Reason == "LeaderElection" {
			n++
		}
	}
	return n
}
