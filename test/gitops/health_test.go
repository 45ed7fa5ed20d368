package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	crawlv1alpha1 "github.com/lohisoft/crawl-operator/api/v1alpha1"
	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

// health is what an Argo CD health check returns.
type health struct{ Status, Message string }

// Argo CD's health statuses; any other value makes Argo CD report Unknown.
var argoStatuses = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true}

// healthScripts reads the health checks from the argocd-cm document of an
// Argo CD example, keyed by kind, split the way Argo CD's settings manager
// splits resource.customizations.health.<group>_<kind>.
func healthScripts(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(string(b))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GetName() != "argocd-cm" {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for k, v := range data {
			parts := strings.SplitN(k, ".", 4)
			if len(parts) == 4 && parts[0] == "resource" && parts[1] == "customizations" && parts[2] == "health" {
				if group, kind, ok := strings.Cut(parts[3], "_"); ok && group == crawlv1.GroupVersion.Group {
					out[kind] = v
				}
			}
		}
	}
	return out
}

// runHealth runs a health script as Argo CD v3 does (util/lua): a Lua state
// without the standard libraries but package, base and table (Argo CD adds a
// reduced os library, which these scripts do not use), a one-second
// deadline, the object as the global obj converted like Argo CD's
// decodeValue, and the returned table read as {status, message}.
func runHealth(script string, obj map[string]any) (*health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.fn), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	fn, err := l.LoadString(script)
	if err != nil {
		return nil, err
	}
	l.Push(fn)
	if err := l.PCall(0, lua.MultRet, nil); err != nil {
		return nil, err
	}
	ret := l.Get(-1)
	if ret.Type() == lua.LTNil {
		return nil, nil
	}
	tbl, ok := ret.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("the script returned a %s, not a table", ret.Type())
	}
	h := &health{}
	for field, dst := range map[string]*string{"status": &h.Status, "message": &h.Message} {
		switch v := tbl.RawGetString(field).(type) {
		case lua.LString:
			*dst = string(v)
		case *lua.LNilType:
		default:
			return nil, fmt.Errorf("%s is a %s, not a string", field, v.Type())
		}
	}
	if !argoStatuses[h.Status] {
		return &health{Status: "Unknown", Message: "invalid health status " + h.Status}, nil
	}
	return h, nil
}

// toLua converts an object as Argo CD's decodeValue does.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(toLua(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for k, item := range v {
			tbl.RawSetH(lua.LString(k), toLua(l, item))
		}
		return tbl
	}
	return lua.LNil
}

func cond(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

// healthCase is an object in some state and the health it must show.
type healthCase struct {
	name    string
	obj     any // *crawlv1.CrawlTarget or *crawlv1.Exclusion
	want    string
	message string // a part of the message the check must show
}

// alphaSuspended is a suspended target as Argo CD sees it when Git holds
// v1alpha1 manifests: it reads the live object in the manifest's version.
func alphaSuspended(generation, observed int64, conds ...metav1.Condition) *crawlv1alpha1.CrawlTarget {
	ct := &crawlv1alpha1.CrawlTarget{
		TypeMeta:   metav1.TypeMeta{APIVersion: crawlv1alpha1.GroupVersion.String(), Kind: "CrawlTarget"},
		ObjectMeta: metav1.ObjectMeta{Name: "example-com", Namespace: "sites", Generation: generation},
		Spec:       crawlv1alpha1.CrawlTargetSpec{URL: "https://example.com/", Suspend: true},
	}
	ct.Status.ObservedGeneration = observed
	ct.Status.Conditions = conds
	return ct
}

func target(generation, observed int64, suspend bool, conds ...metav1.Condition) *crawlv1.CrawlTarget {
	ct := &crawlv1.CrawlTarget{
		TypeMeta:   metav1.TypeMeta{APIVersion: crawlv1.GroupVersion.String(), Kind: "CrawlTarget"},
		ObjectMeta: metav1.ObjectMeta{Name: "example-com", Namespace: "sites", Generation: generation},
		Spec:       crawlv1.CrawlTargetSpec{URL: "https://example.com/", CrawlPolicy: crawlv1.CrawlPolicyScheduled},
	}
	if suspend {
		ct.Spec.CrawlPolicy = crawlv1.CrawlPolicySuspended
	}
	ct.Status.ObservedGeneration = observed
	ct.Status.Conditions = conds
	return ct
}

func exclusion(generation, observed int64, conds ...metav1.Condition) *crawlv1.Exclusion {
	ex := &crawlv1.Exclusion{
		TypeMeta:   metav1.TypeMeta{APIVersion: crawlv1.GroupVersion.String(), Kind: "Exclusion"},
		ObjectMeta: metav1.ObjectMeta{Name: "example-org", Generation: generation},
		Spec:       crawlv1.ExclusionSpec{Domain: "example.org", Description: "asked"},
	}
	ex.Status.ObservedGeneration = observed
	ex.Status.Conditions = conds
	return ex
}

const (
	ready       = "Ready"
	reconciling = "Reconciling"
	stalled     = "Stalled"
	crawling    = crawlv1.ConditionCrawling
)

var (
	yes = metav1.ConditionTrue
	no  = metav1.ConditionFalse
)

// The states the operator puts targets and exclusions in
// (controllers/crawltarget_status.go, controllers/exclusion_controller.go).
var healthCases = []healthCase{
	{"target without status", target(1, 0, false), "Progressing", "generation 1"},
	{"target crawled, then its spec changed (stale status)", target(2, 1, false,
		cond(ready, yes, crawlv1.ReasonCrawled, "3 pages indexed")), "Progressing", "generation 2"},
	{"target stale with Stalled from the old spec", target(3, 2, false,
		cond(ready, no, crawlv1.ReasonDuplicateSite, "site owned by other"), cond(stalled, yes, crawlv1.ReasonDuplicateSite, "site owned by other")), "Progressing", "generation 3"},
	{"target waiting for its first crawl", target(1, 1, false,
		cond(ready, no, "Pending", "waiting for the first crawl"), cond(reconciling, yes, "Pending", "waiting for the first crawl")), "Progressing", "waiting for the first crawl"},
	{"target's first crawl running", target(1, 1, false,
		cond(ready, no, crawlv1.ReasonCrawling, "crawl 1 of https://example.com:443 is running"),
		cond(reconciling, yes, crawlv1.ReasonCrawling, "crawl 1 of https://example.com:443 is running"),
		cond(crawling, yes, crawlv1.ReasonCrawling, "crawl 1 runs in Pod x")), "Progressing", "crawl 1 of https://example.com:443 is running"},
	{"target waiting for capacity", target(1, 1, false,
		cond(ready, no, crawlv1.ReasonWaitingForCapacity, "egress-1 runs 4 crawls"),
		cond(reconciling, yes, crawlv1.ReasonWaitingForCapacity, "egress-1 runs 4 crawls")), "Progressing", "egress-1 runs 4 crawls"},
	{"target's crawl failed, retry scheduled", target(1, 1, false,
		cond(ready, no, crawlv1.ReasonCrawlFailed, "crawl 1 failed: 503"),
		cond(reconciling, yes, crawlv1.ReasonCrawlFailed, "retry at 2026-01-01T00:00:00Z")), "Progressing", "crawl 1 failed: 503"},
	{"target with conditions but no Ready", target(1, 1, false,
		cond(crawling, no, crawlv1.ReasonIdle, "no crawl is running")), "Progressing", "Ready"},
	{"target crawled", target(1, 1, false,
		cond(ready, yes, crawlv1.ReasonCrawled, "3 pages indexed at 2026-01-01T00:00:00Z"),
		cond(crawling, no, crawlv1.ReasonIdle, "no crawl is running")), "Healthy", "3 pages indexed"},
	{"target crawled, recrawl running", target(4, 4, false,
		cond(ready, yes, crawlv1.ReasonCrawled, "3 pages indexed; recrawl running"),
		cond(crawling, yes, crawlv1.ReasonCrawling, "crawl 2 runs")), "Healthy", "recrawl running"},
	{"target a duplicate", target(1, 1, false,
		cond(ready, no, crawlv1.ReasonDuplicateSite, "site is owned by sites/other"),
		cond(stalled, yes, crawlv1.ReasonDuplicateSite, "site is owned by sites/other")), "Degraded", "site is owned by sites/other"},
	{"target excluded", target(1, 1, false,
		cond(ready, no, crawlv1.ReasonExcluded, "excluded by example-org"),
		cond(stalled, yes, crawlv1.ReasonExcluded, "excluded by example-org")), "Degraded", "excluded by example-org"},
	{"target whose crawler refused its input", target(1, 1, false,
		cond(ready, no, crawlv1.ReasonInvalidInput, "crawler: bad URL"),
		cond(stalled, yes, crawlv1.ReasonInvalidInput, "crawler: bad URL")), "Degraded", "crawler: bad URL"},
	{"target whose address was refused, after an earlier success", target(2, 2, false,
		cond(ready, no, crawlv1.ReasonAddressRefused, "only IPv6"),
		cond(stalled, yes, crawlv1.ReasonAddressRefused, "only IPv6")), "Degraded", "only IPv6"},
	{"target suspended before its first crawl", target(2, 2, true,
		cond(ready, no, crawlv1.ReasonSuspended, "suspended before its first crawl")), "Suspended", "suspended before its first crawl"},
	{"target suspended after crawls", target(3, 3, true,
		cond(ready, yes, crawlv1.ReasonCrawled, "3 pages indexed at 2026-01-01T00:00:00Z; suspended")), "Suspended", "3 pages indexed"},
	{"target suspended while excluded", target(2, 2, true,
		cond(ready, no, crawlv1.ReasonExcluded, "excluded by example-org"),
		cond(stalled, yes, crawlv1.ReasonExcluded, "excluded by example-org")), "Suspended", "excluded by example-org"},
	{"target just suspended, not yet seen by the operator", target(2, 1, true,
		cond(ready, yes, crawlv1.ReasonCrawled, "3 pages indexed")), "Progressing", "generation 2"},
	{"v1alpha1 target suspended (spec.suspend)", alphaSuspended(2, 2,
		cond(ready, yes, crawlv1.ReasonCrawled, "3 pages indexed at 2026-01-01T00:00:00Z; suspended")), "Suspended", "3 pages indexed"},

	{"exclusion without status", exclusion(1, 0), "Progressing", "generation 1"},
	{"exclusion enforced, then its spec changed (stale status)", exclusion(2, 1,
		cond(ready, yes, crawlv1.ReasonEnforced, "example.org is excluded")), "Progressing", "generation 2"},
	{"exclusion enforced", exclusion(1, 1,
		cond(ready, yes, crawlv1.ReasonEnforced, "example.org and its subdomains are excluded: 2 CrawlTargets matched")), "Healthy", "2 CrawlTargets matched"},
	{"exclusion waiting for the index backend", exclusion(1, 1,
		cond(ready, no, "BackendUnavailable", "the index backend is unreachable"),
		cond(reconciling, yes, "BackendUnavailable", "waiting for the index backend")), "Progressing", "the index backend is unreachable"},
	{"exclusion whose enforcement failed", exclusion(1, 1,
		cond(ready, no, "EnforcementFailed", "list pods: timeout"),
		cond(reconciling, yes, "EnforcementFailed", "retrying")), "Progressing", "list pods: timeout"},
	{"exclusion stalled", exclusion(1, 1,
		cond(ready, no, "Broken", "needs a person"), cond(stalled, yes, "Broken", "needs a person")), "Degraded", "needs a person"},
}

// kstatusBlind are the cases without status or conditions, which kstatus
// calls Current.
var kstatusBlind = map[string]bool{
	"target without status":               true,
	"target with conditions but no Ready": true,
	"exclusion without status":            true,
}

func unstructuredOf(t *testing.T, obj any) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestArgoCDHealthChecks(t *testing.T) {
	scripts := healthScripts(t, filepath.Join(examplesDir, "argocd-application.yaml"))
	for _, kind := range []string{"CrawlTarget", "Exclusion"} {
		if scripts[kind] == "" {
			t.Fatalf("argocd-cm has no health check for %s", kind)
		}
	}
	for _, tc := range healthCases {
		t.Run(tc.name, func(t *testing.T) {
			obj := unstructuredOf(t, tc.obj)
			got, err := runHealth(scripts[obj["kind"].(string)], obj)
			if err != nil {
				t.Fatalf("the health check failed: %v", err)
			}
			if got == nil {
				t.Fatal("the health check returned nothing")
			}
			if got.Status != tc.want {
				t.Errorf("health %q (%s), want %q", got.Status, got.Message, tc.want)
			}
			if !strings.Contains(got.Message, tc.message) {
				t.Errorf("message %q does not say %q", got.Message, tc.message)
			}
			// Flux and kubectl wait judge the same object with kstatus; Argo
			// CD must agree, except that kstatus knows nothing of suspend and
			// calls an object without status or conditions Current (it
			// cannot tell a kind without status from one not yet seen; the
			// operator always writes Ready, so Argo CD waits for it).
			spec, _ := obj["spec"].(map[string]any)
			if spec["crawlPolicy"] != string(crawlv1.CrawlPolicySuspended) && spec["suspend"] != true && !kstatusBlind[tc.name] {
				res, err := status.Compute(&unstructured.Unstructured{Object: obj})
				if err != nil {
					t.Fatal(err)
				}
				kstatus := map[status.Status]string{status.CurrentStatus: "Healthy", status.InProgressStatus: "Progressing", status.FailedStatus: "Degraded"}[res.Status]
				if kstatus != got.Status {
					t.Errorf("kstatus says %s (%s), which is %q; the health check says %q", res.Status, res.Message, kstatus, got.Status)
				}
			}
		})
	}
}

// The emulation would be worthless if it could not see a wrong health: the
// checks as they were before issue 10 must fail exactly on the stale and the
// suspended cases.
func TestOldArgoCDHealthChecksFailTheTable(t *testing.T) {
	scripts := healthScripts(t, filepath.Join(brokenDir, "argocd-application.yaml"))
	var wrong []string
	for _, tc := range healthCases {
		obj := unstructuredOf(t, tc.obj)
		got, err := runHealth(scripts[obj["kind"].(string)], obj)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got == nil || got.Status != tc.want {
			wrong = append(wrong, tc.name)
		}
	}
	want := []string{
		"target crawled, then its spec changed (stale status)",
		"target stale with Stalled from the old spec",
		"target suspended before its first crawl",
		"target suspended after crawls",
		"target suspended while excluded",
		"target just suspended, not yet seen by the operator",
		"v1alpha1 target suspended (spec.suspend)",
		"exclusion enforced, then its spec changed (stale status)",
		"exclusion stalled",
	}
	if strings.Join(wrong, "\n") != strings.Join(want, "\n") {
		t.Errorf("the old checks are wrong on:\n  %s\nwant:\n  %s", strings.Join(wrong, "\n  "), strings.Join(want, "\n  "))
	}
}

// The emulation runs scripts the way Argo CD does, not more generously:
// the string library is not there, a runaway script is stopped, a status
// Argo CD does not know becomes Unknown.
func TestHealthEmulationIsArgoCDs(t *testing.T) {
	obj := unstructuredOf(t, target(1, 1, false))
	if _, err := runHealth(`return {status = "Healthy", message = string.format("%d", 1)}`, obj); err == nil {
		t.Error("string.format worked, but Argo CD's Lua state has no string library")
	}
	start := time.Now()
	if _, err := runHealth(`while true do end`, obj); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("an endless script was not stopped after a second: %v after %s", err, time.Since(start))
	}
	if h, err := runHealth(`return {status = "Fine"}`, obj); err != nil || h.Status != "Unknown" {
		t.Errorf("an unknown status gave %+v, %v; Argo CD says Unknown", h, err)
	}
	if h, err := runHealth(`return {status = obj.kind .. " " .. obj.metadata.generation, message = obj.spec.url}`, obj); err != nil ||
		h.Status != "Unknown" || h.Message != "invalid health status CrawlTarget 1" {
		t.Errorf("obj was not converted as Argo CD does: %+v, %v", h, err)
	}
}
