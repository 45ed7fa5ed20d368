package crawlpod

import (
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/egress"

	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/site"
)

func testRun(name string, spec crawlv1.CrawlTargetSpec) Run {
	t := &crawlv1.CrawlTarget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web", UID: "uid-1"},
		Spec:       spec,
	}
	s, _ := site.Parse(spec.URL)
	return Run{Target: t, Site: s, Number: 3, Node: "egress-a", NodeIP: "79.139.58.98", TokenSHA256: "abc"}
}

func testConfig() Config {
	return Config{
		Image:          "ghcr.io/lohisoft/crawl-operator:1.0",
		ResultsURL:     "http://results.crawl-system.svc:8083",
		MinDelay:       time.Second,
		ActiveDeadline: 30 * time.Minute,
		Resources:      DefaultResources(),
	}
}

func TestPodIsRestrictedAndCredentialFree(t *testing.T) {
	pod := Pod(testRun("example", crawlv1.CrawlTargetSpec{URL: "https://example.com/"}), testConfig())

	spec := pod.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %s, want Never", spec.RestartPolicy)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("crawler Pods must not mount a service account token")
	}
	if spec.ActiveDeadlineSeconds == nil || *spec.ActiveDeadlineSeconds != 1800 {
		t.Errorf("activeDeadlineSeconds = %v, want 1800", spec.ActiveDeadlineSeconds)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil ||
		psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context not restricted: %+v", psc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container security context not restricted: %+v", sc)
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources not set: %+v", c.Resources)
	}
	if len(c.Env) != 1 || c.Env[0].Name != runreport.TokenEnv || c.Env[0].ValueFrom.SecretKeyRef.Name != "example-crawl-3-token" {
		t.Errorf("token must come from the run's Secret, got %+v", c.Env)
	}
	for _, a := range c.Args {
		if strings.Contains(a, "token") && a != "--report-url=http://results.crawl-system.svc:8083/v1/runs/web/example-crawl-3" {
			t.Errorf("token material in argv: %q", a)
		}
	}
}

// The token Secret is owned by its Pod only, so the garbage collector
// removes it with the Pod, and the reference asks for no more than the
// Secret's create and delete: no controller claim, no blockOwnerDeletion
// (which would take update on pods/finalizers where owner references are
// enforced).
func TestTokenSecretIsOwnedByItsPod(t *testing.T) {
	r := testRun("example", crawlv1.CrawlTargetSpec{URL: "https://example.com/"})
	pod := Pod(r, testConfig())
	pod.UID = "pod-uid-7"
	s := TokenSecret(r, pod, "the-token")
	if s.Name != "example-crawl-3-token" || s.Name != pod.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Name || s.Namespace != pod.Namespace {
		t.Errorf("Secret %s/%s, Pod %s/%s reads %s", s.Namespace, s.Name, pod.Namespace, pod.Name, pod.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Name)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: "pod-uid-7"}}
	if !reflect.DeepEqual(s.OwnerReferences, want) {
		t.Errorf("owner references %+v, want %+v", s.OwnerReferences, want)
	}
	if string(s.Data[TokenKey]) != "the-token" || s.Immutable == nil || !*s.Immutable || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret %+v", s)
	}
	if s.Labels[LabelTargetUID] != "uid-1" || s.Labels[LabelRun] != "3" || s.Labels[LabelManagedBy] != ManagedByValue {
		t.Errorf("labels %v", s.Labels)
	}
}

func TestPodIsPinnedToItsEgressNode(t *testing.T) {
	pod := Pod(testRun("example", crawlv1.CrawlTargetSpec{URL: "https://example.com/"}), testConfig())
	if pod.Spec.NodeSelector[egress.DefaultLabel] != "true" {
		t.Errorf("nodeSelector = %v", pod.Spec.NodeSelector)
	}
	tol := pod.Spec.Tolerations
	if len(tol) != 1 || tol[0].Key != egress.DefaultLabel || tol[0].Value != "true" || tol[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("tolerations = %+v", tol)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 ||
		terms[0].MatchFields[0].Key != "metadata.name" || !slices.Equal(terms[0].MatchFields[0].Values, []string{"egress-a"}) {
		t.Errorf("node affinity = %+v", terms)
	}
	if pod.Annotations[AnnotationEgressIP] != "79.139.58.98" {
		t.Errorf("egress IP annotation = %q", pod.Annotations[AnnotationEgressIP])
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "CrawlTarget" || !*pod.OwnerReferences[0].Controller {
		t.Errorf("owner references = %+v", pod.OwnerReferences)
	}
}

func TestPodArgs(t *testing.T) {
	tests := []struct {
		name string
		spec crawlv1.CrawlTargetSpec
		cfg  func(*Config)
		want []string
	}{
		{
			name: "defaults",
			spec: crawlv1.CrawlTargetSpec{URL: "https://example.com/"},
			want: []string{"crawl", "--log-format=json", "--max-pages=20", "--delay=1s", "--report-url=http://results.crawl-system.svc:8083/v1/runs/web/t-crawl-3", "--timeout=29m0s", "https://example.com/"},
		},
		{
			name: "delay below floor is raised",
			spec: crawlv1.CrawlTargetSpec{URL: "http://example.com/", MaxPages: ptr.To[int32](5), Delay: &metav1.Duration{Duration: 100 * time.Millisecond}},
			cfg:  func(c *Config) { c.MinDelay = 2 * time.Second },
			want: []string{"crawl", "--log-format=json", "--max-pages=5", "--delay=2s", "--report-url=http://results.crawl-system.svc:8083/v1/runs/web/t-crawl-3", "--timeout=29m0s", "http://example.com/"},
		},
		{
			name: "budget above promise is capped",
			spec: crawlv1.CrawlTargetSpec{URL: "http://example.com/", MaxPages: ptr.To[int32](50), Delay: &metav1.Duration{Duration: 3 * time.Second}},
			cfg: func(c *Config) {
				c.UserAgent = "LohiSoftBot/1.0 (+message@lohisoft.com)"
				c.AllowPrivate = true
				c.ActiveDeadline = 0
			},
			want: []string{"crawl", "--log-format=json", "--max-pages=20", "--delay=3s", "--report-url=http://results.crawl-system.svc:8083/v1/runs/web/t-crawl-3", "--user-agent=LohiSoftBot/1.0 (+message@lohisoft.com)", "--allow-private", "http://example.com/"},
		},
		{
			// The address the crawler must see is the node's published
			// one, the same the Pod's egress-ip annotation records.
			name: "egress check",
			spec: crawlv1.CrawlTargetSpec{URL: "https://example.com/"},
			cfg:  func(c *Config) { c.EgressEchoURL = "https://echo.bot.lohisoft.com/ip" },
			want: []string{"crawl", "--log-format=json", "--max-pages=20", "--delay=1s", "--report-url=http://results.crawl-system.svc:8083/v1/runs/web/t-crawl-3",
				"--egress-echo-url=https://echo.bot.lohisoft.com/ip", "--expect-egress-ip=79.139.58.98", "--timeout=29m0s", "https://example.com/"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			got := Pod(testRun("t", tt.spec), cfg).Spec.Containers[0].Args
			if !slices.Equal(got, tt.want) {
				t.Errorf("args =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestNamesAreValid(t *testing.T) {
	long := strings.Repeat("a", 60) + "-." + strings.Repeat("b", 100)
	for _, target := range []string{"x", "example-com", long, strings.Repeat("c", 253)} {
		name := PodName(target, 12345)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("PodName(%q) = %q: %v", target, name, errs)
		}
		if errs := validation.IsDNS1123Subdomain(SecretName(name)); len(errs) > 0 {
			t.Errorf("SecretName(%q): %v", name, errs)
		}
		if errs := validation.IsValidLabelValue(truncateLabel(target)); len(errs) > 0 {
			t.Errorf("label for %q: %v", target, errs)
		}
	}
	if PodName(long, 1) == PodName(long+"x", 1) {
		t.Error("truncated names of different targets must differ")
	}
	if errs := validation.IsValidLabelValue(HostHash("example.com")); len(errs) > 0 {
		t.Errorf("host hash label: %v", errs)
	}
}

func TestToken(t *testing.T) {
	token, sum, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := NewToken()
	if token == other {
		t.Fatal("tokens must be random")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationTokenSHA256: sum}}}
	if !TokenMatches(pod, token) {
		t.Error("own token rejected")
	}
	if TokenMatches(pod, other) || TokenMatches(pod, "") || TokenMatches(&corev1.Pod{}, token) {
		t.Error("wrong, empty or unannotated token accepted")
	}
}

func TestPodFollowsTheEgressSelector(t *testing.T) {
	cfg := testConfig()
	cfg.Egress = egress.Selector{LabelKey: "pool", LabelValue: "egress", TaintKey: "dedicated", TaintValue: "crawler", TaintEffect: corev1.TaintEffectNoExecute}
	pod := Pod(testRun("t", crawlv1.CrawlTargetSpec{URL: "https://example.com/"}), cfg)
	if pod.Spec.NodeSelector["pool"] != "egress" || len(pod.Spec.NodeSelector) != 1 {
		t.Errorf("nodeSelector = %v", pod.Spec.NodeSelector)
	}
	if tol := pod.Spec.Tolerations; len(tol) != 1 || tol[0].Key != "dedicated" || tol[0].Effect != corev1.TaintEffectNoExecute {
		t.Errorf("tolerations = %+v", tol)
	}
	if !cfg.Egress.Selects(map[string]string{"pool": "egress"}) || cfg.Egress.Selects(map[string]string{egress.DefaultLabel: egress.DefaultValue}) {
		t.Error("Selects disagrees with the configured label")
	}
	if !(egress.Selector{}).Selects(map[string]string{egress.DefaultLabel: egress.DefaultValue}) {
		t.Error("the zero Egress must select the default label")
	}
}
