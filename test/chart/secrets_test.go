package chart

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil/helmrender"
)

// readsSecrets reports whether a rule lets its holder read Secrets: get,
// list or watch (list and watch return whole objects, data included) on
// core Secrets, or a wildcard that covers them. A rule limited to some
// resourceNames still counts: no role may read any Secret.
func readsSecrets(r rbacv1.PolicyRule) bool {
	return (slices.Contains(r.APIGroups, "") || slices.Contains(r.APIGroups, rbacv1.APIGroupAll)) &&
		(slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, rbacv1.ResourceAll)) &&
		slices.ContainsFunc(r.Verbs, func(v string) bool {
			return v == "get" || v == "list" || v == "watch" || v == rbacv1.VerbAll
		})
}

// secretReaders lists, as "Kind name: rule", every rule of the Roles and
// ClusterRoles among objs that reads Secrets, and every ClusterRole that
// aggregates others (its rules are not in the manifest, so they cannot be
// checked here). It also returns how many roles it looked at.
func secretReaders(t *testing.T, objs []*unstructured.Unstructured) (found []string, roles int) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		roles++
		b, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole
		if err := json.Unmarshal(b, &role); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		where := o.GetKind() + " " + o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			where += " in " + ns
		}
		if role.AggregationRule != nil {
			found = append(found, where+": aggregates other ClusterRoles")
		}
		for _, r := range role.Rules {
			if readsSecrets(r) {
				found = append(found, where+": "+r.String())
			}
		}
	}
	return found, roles
}

// configDocs decodes every YAML document under config/, whether or not a
// kustomization lists its file.
func configDocs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	root := filepath.Join(repoRoot, "config")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := testenv.Decode(b)
		if err != nil {
			t.Errorf("%s: %v", path, err)
		}
		out = append(out, objs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// No role can read a Secret, in config/ or in the chart: not the
// manager's (it creates and deletes each run's token Secret, blind), not
// the uninstall hook's (the garbage collector removes a token Secret with
// its crawler Pod, so the hook deletes Pods only), not any other. The
// chart is rendered with its hooks, cluster-wide, in namespaced mode, and
// with every optional part on.
func TestNoRoleReadsSecrets(t *testing.T) {
	t.Run("config", func(t *testing.T) {
		found, roles := secretReaders(t, configDocs(t))
		// The manager's ClusterRole, leader election's Role, the metrics
		// reader.
		if roles < 3 {
			t.Fatalf("%d roles under config/: the walk missed config/rbac", roles)
		}
		for _, f := range found {
			t.Errorf("config/: %s", f)
		}
	})
	watched := []any{"sites", "shop"}
	for _, c := range []struct {
		name   string
		values map[string]any
		// cleanupRoles is how many Roles or ClusterRoles the hook has.
		cleanupRoles int
	}{
		{"defaults", nil, 1},
		{"watchNamespaces", map[string]any{"watchNamespaces": watched}, 2},
		{"every option", map[string]any{
			"watchNamespaces": watched,
			"networkPolicy":   map[string]any{"crawlerNamespaces": watched},
			"serviceMonitor":  map[string]any{"enabled": true},
			"prometheusRule":  map[string]any{"enabled": true},
			"dashboards":      map[string]any{"enabled": true},
			"ingress":         map[string]any{"enabled": true, "host": "lohisoft.com"},
		}, 2},
		{"metrics not secure", map[string]any{"metrics": map[string]any{"secure": false}}, 1},
	} {
		t.Run("chart "+c.name, func(t *testing.T) {
			objs, err := helmrender.RenderWithHooksFor(chartPath, "crawl", releaseNamespace, kubeVersion(t), c.values)
			if err != nil {
				t.Fatal(err)
			}
			cleanup := 0
			for _, o := range objs {
				if (o.GetKind() == "Role" || o.GetKind() == "ClusterRole") && strings.HasSuffix(o.GetName(), "-cleanup") {
					cleanup++
				}
			}
			if cleanup != c.cleanupRoles {
				t.Fatalf("%d roles of the uninstall hook rendered, want %d", cleanup, c.cleanupRoles)
			}
			found, _ := secretReaders(t, objs)
			for _, f := range found {
				t.Errorf("chart: %s", f)
			}
		})
	}
}

// The check itself: it catches every rule that reads Secrets, wildcards
// included, and passes those that do not.
func TestReadsSecretsCatchesEveryForm(t *testing.T) {
	rule := func(groups, resources, verbs []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
	}
	core, all := []string{""}, []string{"*"}
	for _, c := range []struct {
		rule  rbacv1.PolicyRule
		reads bool
	}{
		{rule(core, []string{"secrets"}, []string{"get"}), true},
		{rule(core, []string{"pods", "secrets"}, []string{"list", "delete"}), true},
		{rule(core, []string{"secrets"}, []string{"watch"}), true},
		{rule(core, []string{"secrets"}, all), true},
		{rule(core, all, []string{"list"}), true},
		{rule(all, []string{"secrets"}, []string{"get"}), true},
		{rule(all, all, all), true},
		{rbacv1.PolicyRule{APIGroups: core, Resources: []string{"secrets"}, ResourceNames: []string{"one"}, Verbs: []string{"get"}}, true},
		{rule(core, []string{"secrets"}, []string{"create", "delete"}), false},
		{rule(core, []string{"pods"}, []string{"get", "list", "watch"}), false},
		{rule([]string{"example.com"}, []string{"secrets"}, []string{"get"}), false},
		{rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}, false},
	} {
		if got := readsSecrets(c.rule); got != c.reads {
			t.Errorf("readsSecrets(%s) = %v, want %v", c.rule.String(), got, c.reads)
		}
	}
	aggregating := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "agg"},
		"aggregationRule": map[string]any{"clusterRoleSelectors": []any{map[string]any{"matchLabels": map[string]any{"x": "y"}}}},
	}}
	if found, _ := secretReaders(t, []*unstructured.Unstructured{aggregating}); len(found) != 1 {
		t.Errorf("an aggregating ClusterRole passed: %v", found)
	}
}
