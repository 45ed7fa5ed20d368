package chart

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lohisoft/crawl-operator/internal/testenv"
)

// confined are the namespaced resources namespaced mode grants per
// namespace only; the ClusterRole keeps the cluster-scoped ones.
var confined = []string{"pods", "secrets", "crawltargets", "siteindexes", "networkpolicies"}

func isConfined(resource string) bool {
	for _, r := range confined {
		if resource == r || strings.HasPrefix(resource, r+"/") {
			return true
		}
	}
	return false
}

// generatedPermissions are what config/rbac/role.yaml (from the markers)
// grants.
func generatedPermissions(t *testing.T) map[testenv.Permission]bool {
	t.Helper()
	objs, err := testenv.ConfigRBAC(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var role []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" {
			role = append(role, o)
		}
	}
	return permissionsOf(t, role)
}

func permissionsOf(t *testing.T, objs []*unstructured.Unstructured) map[testenv.Permission]bool {
	t.Helper()
	rules, err := testenv.Rules(objs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := testenv.Granted(rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func objsOf(objs []*unstructured.Unstructured, kind string, keep func(*unstructured.Unstructured) bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (keep == nil || keep(o)) {
			out = append(out, o)
		}
	}
	return out
}

func diff(got, want map[testenv.Permission]bool) (missing, extra []string) {
	for p := range want {
		if !got[p] {
			missing = append(missing, p.String())
		}
	}
	for p := range got {
		if !want[p] {
			extra = append(extra, p.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return missing, extra
}

// managers keeps the roles the manager holds: not the metrics reader,
// which the chart creates for Prometheus.
func managers(o *unstructured.Unstructured) bool {
	return !strings.HasSuffix(o.GetName(), "-metrics-reader")
}

func leaderElection(o *unstructured.Unstructured) bool {
	return strings.HasSuffix(o.GetName(), "-leader-election")
}

// By default the ClusterRole grants exactly what the markers generate,
// cluster-wide, and no other Role is rendered but leader election's.
func TestClusterRoleIsTheGeneratedRole(t *testing.T) {
	objs := mustRender(t, nil)
	missing, extra := diff(permissionsOf(t, objsOf(objs, "ClusterRole", managers)), generatedPermissions(t))
	if len(missing)+len(extra) > 0 {
		t.Errorf("the chart's ClusterRole differs from config/rbac/role.yaml: lacks %v, adds %v", missing, extra)
	}
	if roles := objsOf(objs, "Role", func(o *unstructured.Unstructured) bool { return !leaderElection(o) }); len(roles) > 0 {
		t.Errorf("Roles rendered without watchNamespaces: %d", len(roles))
	}
	if _, err := arg("watch-namespaces")(objs); err == nil {
		t.Error("--watch-namespaces passed without watchNamespaces")
	}
}

// With watchNamespaces, no ClusterRole grants anything on Pods, Secrets,
// CrawlTargets or SiteIndexes: each watched namespace gets a Role with
// exactly those rules and a RoleBinding to the manager's ServiceAccount,
// and the ClusterRole keeps the rest. Together they grant exactly the
// generated role, and nothing lands outside the watched namespaces.
func TestNamespacedModeGrantsPodsAndSecretsPerNamespaceOnly(t *testing.T) {
	watched := []string{"sites", "shop"}
	objs := mustRender(t, map[string]any{"watchNamespaces": []any{"sites", "shop"}})
	generated := generatedPermissions(t)
	wantCluster, wantNamespaced := map[testenv.Permission]bool{}, map[testenv.Permission]bool{}
	for p := range generated {
		if isConfined(p.Resource) {
			wantNamespaced[p] = true
		} else {
			wantCluster[p] = true
		}
	}
	for _, r := range []string{"pods", "secrets"} {
		if !wantNamespaced[testenv.Permission{Resource: r, Verb: "create"}] {
			t.Fatalf("the generated role does not create %s: the test's expectations are stale", r)
		}
	}

	cluster := permissionsOf(t, objsOf(objs, "ClusterRole", managers))
	for p := range cluster {
		if isConfined(p.Resource) {
			t.Errorf("a ClusterRole grants %s in namespaced mode", p)
		}
	}
	if missing, extra := diff(cluster, wantCluster); len(missing)+len(extra) > 0 {
		t.Errorf("ClusterRole in namespaced mode: lacks %v, adds %v", missing, extra)
	}

	sa := find(objs, "ServiceAccount", "")
	roles := objsOf(objs, "Role", func(o *unstructured.Unstructured) bool { return !leaderElection(o) })
	bindings := objsOf(objs, "RoleBinding", func(o *unstructured.Unstructured) bool { return !leaderElection(o) })
	var roleNS, bindingNS []string
	for _, r := range roles {
		roleNS = append(roleNS, r.GetNamespace())
		if missing, extra := diff(permissionsOf(t, []*unstructured.Unstructured{r}), wantNamespaced); len(missing)+len(extra) > 0 {
			t.Errorf("Role in %s: lacks %v, adds %v", r.GetNamespace(), missing, extra)
		}
	}
	for _, b := range bindings {
		bindingNS = append(bindingNS, b.GetNamespace())
		kind, _ := dig(b.Object, "roleRef", "kind")
		name, _ := dig(b.Object, "roleRef", "name")
		subject, _ := dig(b.Object, "subjects", 0)
		s := subject.(map[string]any)
		if kind != "Role" || name != roles[0].GetName() || s["kind"] != "ServiceAccount" || s["name"] != sa.GetName() || s["namespace"] != releaseNamespace {
			t.Errorf("RoleBinding in %s binds %v %v to %v", b.GetNamespace(), kind, name, s)
		}
	}
	if strings.Join(roleNS, ",") != strings.Join(watched, ",") || strings.Join(bindingNS, ",") != strings.Join(watched, ",") {
		t.Errorf("Roles in %v and RoleBindings in %v, want one each in %v", roleNS, bindingNS, watched)
	}
	if got, err := arg("watch-namespaces")(objs); err != nil || got != "sites,shop" {
		t.Errorf("--watch-namespaces = %v (%v), want sites,shop", got, err)
	}
}

// The leader-election Role allows what client-go's Lease lock and
// controller-runtime's leader-election Events use, in the release
// namespace, exactly as config/rbac does.
func TestLeaderElectionRole(t *testing.T) {
	objs := mustRender(t, nil)
	roles := objsOf(objs, "Role", leaderElection)
	if len(roles) != 1 || roles[0].GetNamespace() != releaseNamespace {
		t.Fatalf("leader-election Roles: %d", len(roles))
	}
	cfg, err := testenv.ConfigRBAC(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	want := permissionsOf(t, objsOf(cfg, "Role", nil))
	if !want[testenv.Permission{Group: "", Resource: "events", Verb: "create"}] {
		t.Fatalf("%s does not let leader election record core Events", filepath.Join("config", "rbac", "leader_election_role.yaml"))
	}
	if missing, extra := diff(permissionsOf(t, roles), want); len(missing)+len(extra) > 0 {
		t.Errorf("the chart's leader-election Role differs from config/rbac's: lacks %v, adds %v", missing, extra)
	}
}
