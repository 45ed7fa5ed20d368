package crawlpod

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/testutil/testca"
)

// parseConfig parses args with the manager's crawler Pod flags over the
// defaults, as cmd/manager does.
func parseConfig(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	c := DefaultConfig()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	c.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := c.ReadExtraCAFile(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// writeFile writes content to a file of its own and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPodTakesConfiguredSettings(t *testing.T) {
	q := resource.MustParse
	extraCA := testca.New(t)
	tests := []struct {
		name string
		args []string
		// check looks at the Pod built with the parsed Config.
		check func(t *testing.T, pod *corev1.Pod)
	}{
		{
			name: "defaults",
			check: func(t *testing.T, pod *corev1.Pod) {
				if !reflect.DeepEqual(pod.Spec.Containers[0].Resources, DefaultResources()) {
					t.Errorf("resources = %v, want the defaults", pod.Spec.Containers[0].Resources)
				}
				if pod.Spec.ImagePullSecrets != nil || pod.Spec.PriorityClassName != "" {
					t.Errorf("pull secrets %v, priority class %q without flags", pod.Spec.ImagePullSecrets, pod.Spec.PriorityClassName)
				}
				if len(pod.Labels) != 6 || len(pod.Annotations) != 4 {
					t.Errorf("labels %v, annotations %v: want only the operator's", pod.Labels, pod.Annotations)
				}
				if env := pod.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != runreport.TokenEnv {
					t.Errorf("env %v: want only the run token", env)
				}
			},
		},
		{
			name: "resources",
			args: []string{"--crawler-cpu-request=100m", "--crawler-memory-request=1e8", "--crawler-cpu-limit=", "--crawler-memory-limit=1Gi"},
			check: func(t *testing.T, pod *corev1.Pod) {
				want := corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("1e8")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1Gi")},
				}
				if got := pod.Spec.Containers[0].Resources; !reflect.DeepEqual(got, want) {
					t.Errorf("resources = %v, want %v (an empty flag removes the limit)", got, want)
				}
			},
		},
		{
			name: "pull secrets and priority class",
			args: []string{"--crawler-image-pull-secrets=registry-a, registry-b", "--crawler-priority-class-name=crawlers-low"},
			check: func(t *testing.T, pod *corev1.Pod) {
				want := []corev1.LocalObjectReference{{Name: "registry-a"}, {Name: "registry-b"}}
				if !reflect.DeepEqual(pod.Spec.ImagePullSecrets, want) {
					t.Errorf("imagePullSecrets = %v, want %v", pod.Spec.ImagePullSecrets, want)
				}
				if pod.Spec.PriorityClassName != "crawlers-low" {
					t.Errorf("priorityClassName = %q", pod.Spec.PriorityClassName)
				}
			},
		},
		{
			name: "extra labels and annotations",
			args: []string{"--crawler-pod-labels=team=search,example.com/cost-centre=42",
				"--crawler-pod-annotations=example.com/note=ACME: Bots #1 = fine,sidecar.istio.io/inject=false"},
			check: func(t *testing.T, pod *corev1.Pod) {
				if pod.Labels["team"] != "search" || pod.Labels["example.com/cost-centre"] != "42" || pod.Labels[LabelName] != NameValue {
					t.Errorf("labels = %v", pod.Labels)
				}
				if pod.Annotations["example.com/note"] != "ACME: Bots #1 = fine" || pod.Annotations["sidecar.istio.io/inject"] != "false" ||
					pod.Annotations[AnnotationTokenSHA256] != "abc" {
					t.Errorf("annotations = %v", pod.Annotations)
				}
				if s := TokenSecret(testRun("t", crawlv1.CrawlTargetSpec{URL: "https://example.com/"}), pod, "x"); s.Labels["team"] != "" {
					t.Errorf("the token Secret got the Pods' extra labels: %v", s.Labels)
				}
			},
		},
		{
			name: "extra CAs",
			args: []string{"--crawler-extra-ca-file=" + writeFile(t, "# the world's CA\n"+extraCA.PEM)},
			check: func(t *testing.T, pod *corev1.Pod) {
				want := []corev1.EnvVar{{Name: runreport.ExtraCACertsEnv, Value: "# the world's CA\n" + extraCA.PEM}}
				if env := pod.Spec.Containers[0].Env; len(env) != 2 || env[0].Name != runreport.TokenEnv || !reflect.DeepEqual(env[1:], want) {
					t.Errorf("env = %v, want the run token and %v", env, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfig(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, Pod(testRun("t", crawlv1.CrawlTargetSpec{URL: "https://example.com/"}), cfg))
		})
	}
}

// Bad settings stop the manager with the flag's name instead of failing
// every Pod create later.
func TestBadPodSettingsNameTheFlag(t *testing.T) {
	for _, tt := range []struct {
		arg, want string
	}{
		{"--egress-echo-url=echo.bot.lohisoft.com", `--egress-echo-url "echo.bot.lohisoft.com": want an http or https URL`},
		{"--egress-echo-url=ftp://echo.bot.lohisoft.com/", "--egress-echo-url"},
		{"--egress-echo-url=https://user:secret@echo.bot.lohisoft.com/", "--egress-echo-url"},
		{"--crawler-cpu-request=lots", "crawler-cpu-request"},
		{"--crawler-memory-limit=-1Gi", "--crawler-memory-limit -1Gi: must not be negative"},
		{"--crawler-cpu-request=2", "--crawler-cpu-request 2 must not exceed --crawler-cpu-limit 500m"},
		{"--crawler-image-pull-secrets=ok,Not_A_Name", `--crawler-image-pull-secrets: "Not_A_Name" is not a Secret name`},
		{"--crawler-priority-class-name=High Priority", `--crawler-priority-class-name: "High Priority" is not a PriorityClass name`},
		{"--crawler-pod-labels=team", `crawler-pod-labels: "team": want key=value`},
		{"--crawler-pod-labels=a=1,a=2", `crawler-pod-labels: "a" given twice`},
		{"--crawler-pod-labels=team=two words", "--crawler-pod-labels: Invalid value"},
		{"--crawler-pod-labels=Bad Key=x", "--crawler-pod-labels: Invalid value"},
		{"--crawler-pod-annotations=bad key=x", "--crawler-pod-annotations: Invalid value"},
		// The operator's own keys: what the reconciler, the results
		// endpoint and the NetworkPolicy find crawler Pods by.
		{"--crawler-pod-labels=" + LabelName + "=other", `--crawler-pod-labels: "app.kubernetes.io/name" is the operator's own key`},
		{"--crawler-pod-labels=" + LabelManagedBy + "=me", `--crawler-pod-labels: "app.kubernetes.io/managed-by" is the operator's own key`},
		{"--crawler-pod-labels=" + LabelTargetUID + "=x", `"crawl.lohisoft.com/target-uid" is the operator's own key`},
		{"--crawler-pod-labels=crawl.lohisoft.com/new=x", `"crawl.lohisoft.com/new" is the operator's own key`},
		{"--crawler-pod-annotations=" + AnnotationTokenSHA256 + "=0000", `--crawler-pod-annotations: "crawl.lohisoft.com/token-sha256" is the operator's own key`},
	} {
		_, err := parseConfig(t, tt.arg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.arg, err, tt.want)
		}
	}
}

// A CA file crawlers could not use stops the manager at start, naming the
// flag and the file, rather than failing every crawl of an HTTPS site.
func TestBadExtraCAFileNamesTheFlagAndTheFile(t *testing.T) {
	ca := testca.New(t)
	for _, tt := range []struct {
		name string
		path string
		want string
	}{
		{"missing", filepath.Join(t.TempDir(), "absent.crt"), "no such file or directory"},
		{"unreadable: a directory", t.TempDir(), "is a directory"},
		{"empty", writeFile(t, ""), "no PEM CERTIFICATE block"},
		{"no CERTIFICATE block", writeFile(t, "just text, not PEM\n"), "no PEM CERTIFICATE block"},
		{"a block that does not parse", writeFile(t, ca.PEM+"-----BEGIN CERTIFICATE-----\nbm90IERFUg==\n-----END CERTIFICATE-----\n"), "certificate 2:"},
		{"a private key", writeFile(t, ca.PEM+"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "a PRIVATE KEY block"},
		// Valid certificates past the limit: the size alone refuses them.
		{"over 64 KiB", writeFile(t, strings.Repeat(ca.PEM, 64<<10/len(ca.PEM)+1)), "over the limit of 65536"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig(t, "--crawler-extra-ca-file="+tt.path)
			if err == nil || !strings.Contains(err.Error(), "--crawler-extra-ca-file") || !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v, want an error naming --crawler-extra-ca-file and %s, with %q", err, tt.path, tt.want)
			}
		})
	}
}

// Even a Config built in code, which skipped Validate, cannot make a Pod
// whose own labels or annotations say something else.
func TestExtraKeysNeverReplaceTheOperatorsOwn(t *testing.T) {
	cfg := testConfig()
	cfg.PodLabels = map[string]string{LabelName: "other", LabelRun: "99", "crawl.lohisoft.com/x": "y", "team": "search"}
	cfg.PodAnnotations = map[string]string{AnnotationTokenSHA256: "0000", AnnotationSite: "https://evil.example:443"}
	pod := Pod(testRun("t", crawlv1.CrawlTargetSpec{URL: "https://example.com/"}), cfg)
	if pod.Labels[LabelName] != NameValue || pod.Labels[LabelRun] != "3" || pod.Labels["crawl.lohisoft.com/x"] != "" || pod.Labels["team"] != "search" {
		t.Errorf("labels = %v", pod.Labels)
	}
	if pod.Annotations[AnnotationTokenSHA256] != "abc" || pod.Annotations[AnnotationSite] != "https://example.com:443" {
		t.Errorf("annotations = %v", pod.Annotations)
	}
}
