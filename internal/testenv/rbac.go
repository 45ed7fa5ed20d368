package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/lohisoft/crawl-operator/internal/yamldoc"
)

// The identity every test manager runs as: the ServiceAccount that
// config/rbac binds, as config/rbac names it (kustomize later prefixes the
// names and moves it to crawl-system). The suites' managers run with
// nothing but the generated ClusterRole and the leader-election Role, so a
// call the RBAC does not allow fails a test.
const (
	ManagerNamespace      = "system"
	ManagerServiceAccount = "controller-manager"
)

// ServiceAccountUser is the user name the API server gives a
// ServiceAccount's tokens, which RBAC subjects of kind ServiceAccount match.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// auditPolicy logs every request of a ServiceAccount (the managers under
// test; no other client of a test control plane is one) without bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: None
`

// configureAudit makes env's API server write an audit log of the
// managers' requests into dir, and returns its path.
func configureAudit(env *envtest.Environment, dir string) (string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return "", err
	}
	log := filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", log).
		Set("audit-log-mode", "blocking").
		Set("audit-log-maxsize", "0")
	return log, nil
}

// ServiceAccountConfig returns a rest.Config that authenticates as the
// ServiceAccount namespace/name, with the groups the API server gives
// ServiceAccounts: it can do exactly what RBAC grants that ServiceAccount.
func (e *Env) ServiceAccountConfig(namespace, name string) (*rest.Config, error) {
	u, err := e.serviceAccountUser(namespace, name)
	if err != nil {
		return nil, err
	}
	return u.Config(), nil
}

// ServiceAccountKubeconfig writes a kubeconfig for the ServiceAccount
// namespace/name (the identity ServiceAccountConfig gives) into the
// control plane's directory and returns its path: a manager run as a
// process of its own (bin/manager) reads it from $KUBECONFIG.
func (e *Env) ServiceAccountKubeconfig(namespace, name string) (string, error) {
	u, err := e.serviceAccountUser(namespace, name)
	if err != nil {
		return "", err
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("kubeconfig for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	path := filepath.Join(e.dir, "kubeconfig-"+namespace+"-"+name)
	return path, os.WriteFile(path, b, 0o600)
}

func (e *Env) serviceAccountUser(namespace, name string) (*envtest.AuthenticatedUser, error) {
	u, err := e.env.AddUser(envtest.User{
		Name:   ServiceAccountUser(namespace, name),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
	}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return nil, fmt.Errorf("add user for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return u, nil
}

// bindConfigRBAC applies config/rbac of the repository at root, as
// `kubectl apply -k config/rbac` would, into its namespace "system".
func bindConfigRBAC(ctx context.Context, c client.Client, root string) error {
	if err := EnsureNamespace(ctx, c, ManagerNamespace); err != nil {
		return err
	}
	objs, err := ConfigRBAC(root)
	if err != nil {
		return err
	}
	return Apply(ctx, c, objs...)
}

// ConfigRBAC reads the objects of config/rbac (the files its
// kustomization.yaml lists) of the repository at root.
func ConfigRBAC(root string) ([]*unstructured.Unstructured, error) {
	dir := filepath.Join(root, "config", "rbac")
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("config/rbac/kustomization.yaml: %w", err)
	}
	var out []*unstructured.Unstructured
	for _, f := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		objs, err := Decode(b)
		if err != nil {
			return nil, fmt.Errorf("config/rbac/%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return boundRoles(out), nil
}

// boundRoles drops the Roles and ClusterRoles no binding among objs refers
// to: config/rbac also ships roles for others (the metrics reader, for
// Prometheus), which the manager does not hold.
func boundRoles(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	bound := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "RoleBinding" || o.GetKind() == "ClusterRoleBinding" {
			kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
			name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			bound[kind+"/"+name] = true
		}
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if (o.GetKind() == "Role" || o.GetKind() == "ClusterRole") && !bound[o.GetKind()+"/"+o.GetName()] {
			continue
		}
		out = append(out, o)
	}
	return out
}

// Decode splits a YAML stream into objects, skipping empty documents.
func Decode(b []byte) ([]*unstructured.Unstructured, error) { return yamldoc.Decode(b) }

// Apply creates objs, or replaces those that exist.
func Apply(ctx context.Context, c client.Client, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		o = o.DeepCopy()
		err := c.Create(ctx, o)
		if apierrors.IsAlreadyExists(err) {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(o.GroupVersionKind())
			if err = c.Get(ctx, client.ObjectKeyFromObject(o), cur); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				err = c.Update(ctx, o)
			}
		}
		if err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

// EnsureNamespace creates a namespace unless it exists.
func EnsureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// Request is one request a manager made, from the API server's audit log.
type Request struct {
	User        string
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Code        int
	// URI is the request's path and query.
	URI string
	// Received is when the API server received the request, Completed
	// when it had sent the whole response.
	Received, Completed time.Time
}

// Permission names what RBAC checks: verb on group/resource[/subresource].
func (r Request) Permission() Permission {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	return Permission{Group: r.Group, Resource: res, Verb: r.Verb}
}

func (r Request) String() string {
	where := r.Namespace
	if r.Name != "" {
		where += "/" + r.Name
	}
	if where == "" {
		where = "(cluster)"
	}
	return fmt.Sprintf("%s %s by %s: HTTP %d", r.Permission(), where, r.User, r.Code)
}

// Permission is one verb on one resource of one API group ("" is core);
// Resource may name a subresource ("crawltargets/status").
type Permission struct {
	Group, Resource, Verb string
}

func (p Permission) String() string {
	g := p.Group
	if g == "" {
		g = "core"
	}
	return fmt.Sprintf("%s %s/%s", p.Verb, g, p.Resource)
}

// Requests returns the requests the audit log holds, of every manager
// identity (every ServiceAccount), oldest first.
func (e *Env) Requests() ([]Request, error) {
	return e.RequestsFrom(0)
}

// AuditOffset is how long the audit log is now: RequestsFrom(AuditOffset())
// later reads only the requests made since, which keeps a benchmark that
// makes millions of requests from parsing them all again.
func (e *Env) AuditOffset() (int64, error) {
	st, err := os.Stat(e.auditLog)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// RequestsFrom returns the requests the audit log holds from offset (the
// start of a line, from AuditOffset) on, oldest first.
func (e *Env) RequestsFrom(offset int64) ([]Request, error) {
	f, err := os.Open(e.auditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	var out []Request
	rd := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := rd.ReadBytes('\n')
		if err == io.EOF {
			// The API server may be writing the last line right now
			// (a benchmark reads while the manager runs): it counts
			// once it is whole.
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var ev struct {
			Stage     string    `json:"stage"`
			Verb      string    `json:"verb"`
			Received  time.Time `json:"requestReceivedTimestamp"`
			Completed time.Time `json:"stageTimestamp"`
			URI       string    `json:"requestURI"`
			User      struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				APIGroup    string `json:"apiGroup"`
				Namespace   string `json:"namespace"`
				Name        string `json:"name"`
			} `json:"objectRef"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		// A watch is logged when it starts and again when it ends.
		if ev.ObjectRef == nil || ev.Stage == "ResponseComplete" && ev.Verb == "watch" {
			continue
		}
		r := Request{User: ev.User.Username, Verb: ev.Verb, Group: ev.ObjectRef.APIGroup,
			Resource: ev.ObjectRef.Resource, Subresource: ev.ObjectRef.Subresource,
			Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name, URI: ev.URI,
			Received: ev.Received, Completed: ev.Completed}
		if ev.ResponseStatus != nil {
			r.Code = ev.ResponseStatus.Code
		}
		out = append(out, r)
	}
}

// Refused returns the requests RBAC refused (HTTP 403), described.
func (e *Env) Refused() ([]string, error) {
	reqs, err := e.Requests()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range reqs {
		if r.Code != 403 {
			continue
		}
		s := r.String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Granted expands RBAC rules into the permissions they grant, whether or
// not a rule names the objects (resourceNames). Rules with
// nonResourceURLs are refused: the operator's roles have none.
func Granted(rules []rbacv1.PolicyRule) (map[Permission]bool, error) {
	out := map[Permission]bool{}
	for _, r := range rules {
		// A rule naming resources (resourceNames) grants its verbs on
		// those only; it counts as granting them, which a request of the
		// verb then uses.
		if len(r.NonResourceURLs) > 0 {
			return nil, fmt.Errorf("rule %+v: nonResourceURLs are not expected", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						return nil, fmt.Errorf("rule %+v grants a wildcard", r)
					}
					out[Permission{Group: g, Resource: res, Verb: v}] = true
				}
			}
		}
	}
	return out, nil
}

// Rules returns the rules of the Roles and ClusterRoles among objs.
func Rules(objs []*unstructured.Unstructured) ([]rbacv1.PolicyRule, error) {
	var out []rbacv1.PolicyRule
	for _, o := range objs {
		if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
			continue
		}
		b, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		var role rbacv1.ClusterRole
		if err := json.Unmarshal(b, &role); err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		out = append(out, role.Rules...)
	}
	return out, nil
}

// checkRefused is the suite-wide check: a manager request refused by RBAC
// means the generated RBAC lacks something a code path needs.
func (e *Env) checkRefused() error {
	refused, err := e.Refused()
	if err != nil {
		return fmt.Errorf("read the audit log: %w", err)
	}
	if len(refused) > 0 {
		return fmt.Errorf("RBAC refused %d kinds of manager requests (config/rbac or the chart lacks a verb a code path needs; add a +kubebuilder:rbac marker):\n  %s",
			len(refused), strings.Join(refused, "\n  "))
	}
	return nil
}
