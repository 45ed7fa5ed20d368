// Package crawlpod defines what a crawler Pod looks like: its labels and
// annotations, its run token, and the Pod spec itself. The CrawlTarget
// reconciler builds Pods with it and the results endpoint reads them with it,
// so both sides agree on one definition.
package crawlpod

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/engine"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/egress"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// Labels and annotations on crawler Pods.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelTarget    = "crawl.lohisoft.com/target"
	LabelTargetUID = "crawl.lohisoft.com/target-uid"
	LabelRun       = "crawl.lohisoft.com/run"
	// LabelHostHash carries a hash of the host because host names can be
	// longer than a label value may be.
	LabelHostHash = "crawl.lohisoft.com/host-hash"

	AnnotationSite        = "crawl.lohisoft.com/site"
	AnnotationEgressNode  = "crawl.lohisoft.com/egress-node"
	AnnotationEgressIP    = "crawl.lohisoft.com/egress-ip"
	AnnotationTokenSHA256 = "crawl.lohisoft.com/token-sha256"
	AnnotationRequestedAt = "crawl.lohisoft.com/requested-at"

	NameValue      = "lohisoftbot-crawler"
	ManagedByValue = "crawl-operator"

	// TokenKey is the key of the token in the run's Secret.
	TokenKey = "token"

	containerName = "crawler"
	nonRootUID    = 65532
)

// Config is the operator-wide part of every crawler Pod.
type Config struct {
	Image           string
	ImagePullPolicy corev1.PullPolicy
	// ResultsURL is the base URL of the manager's results endpoint as seen
	// from inside the cluster.
	ResultsURL string
	// MinDelay is the floor applied to spec.delay.
	MinDelay time.Duration
	// UserAgent overrides the crawler's default User-Agent when set.
	UserAgent string
	// ActiveDeadline bounds one crawl Pod's lifetime.
	ActiveDeadline time.Duration
	Resources      corev1.ResourceRequirements
	// ImagePullSecrets name the Secrets the kubelet pulls Image with; they
	// live in the crawler Pods' namespaces.
	ImagePullSecrets  []string
	PriorityClassName string
	// PodLabels and PodAnnotations are added to every crawler Pod, for
	// the cluster's own policies (cost labels, mesh or log annotations).
	// They never replace the operator's own keys.
	PodLabels, PodAnnotations map[string]string
	// AllowPrivate lets crawlers reach private addresses. Only for local
	// demos and tests, where the sample site is on loopback.
	AllowPrivate bool
	// Egress names the egress nodes; zero means the defaults.
	Egress egress.Selector
	// EgressEchoURL, when set, is the echo service every crawler asks,
	// before its first request to a site, which source address sites see;
	// it crawls only if that is its node's published address (the run's
	// NodeIP). Empty: no check.
	EgressEchoURL string
	// ExtraCAFile is --crawler-extra-ca-file; ReadExtraCAFile reads it
	// into ExtraCACerts, PEM certificates of the certificate authorities
	// crawlers trust besides the public roots (sites behind a private CA).
	// Crawler Pods get them in their environment.
	ExtraCAFile, ExtraCACerts string
}

// DefaultResources are requests and limits sized for a 20-page crawl with a
// 2 MiB body cap.
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("50m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("500m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		},
	}
}

// Run is one crawl of a target on one egress node.
type Run struct {
	Target      *crawlv1.CrawlTarget
	Site        site.Site
	Number      int64
	Node        string
	NodeIP      string
	TokenSHA256 string
	// RequestedAt is the requested-at annotation value this run answers.
	RequestedAt string
}

// PodName is the deterministic name of run n of a target, so a repeated
// create after a crash or a stale cache hits AlreadyExists instead of
// starting a second crawl.
func PodName(target string, n int64) string {
	suffix := "-crawl-" + strconv.FormatInt(n, 10)
	const maxName = 63 // keep the Pod's hostname valid too
	if len(target)+len(suffix) > maxName {
		h := sha256.Sum256([]byte(target))
		target = strings.TrimRight(target[:maxName-len(suffix)-9], "-.") + "-" + hex.EncodeToString(h[:4])
	}
	return target + suffix
}

// SecretName is the name of the Secret holding a run's token.
func SecretName(podName string) string { return podName + "-token" }

// HostHash is the value of LabelHostHash for a host.
func HostHash(host string) string {
	h := sha256.Sum256([]byte(host))
	return hex.EncodeToString(h[:16])
}

// NewToken returns a fresh random run token and its SHA-256 in hex.
func NewToken() (token, sum string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("generate run token: %w", err)
	}
	token = hex.EncodeToString(b)
	return token, TokenSHA256(token), nil
}

// TokenSHA256 is the hex SHA-256 the Pod annotation stores for a token.
func TokenSHA256(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// TokenMatches checks a presented token against a Pod's annotation in
// constant time.
func TokenMatches(pod *corev1.Pod, token string) bool {
	want := pod.Annotations[AnnotationTokenSHA256]
	if want == "" || token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(TokenSHA256(token))) == 1
}

// IsCrawlerPod reports whether a Pod was made by this package.
func IsCrawlerPod(pod *corev1.Pod) bool {
	return pod.Labels[LabelName] == NameValue && pod.Labels[LabelManagedBy] == ManagedByValue
}

// Finished reports whether a Pod has ended, one way or the other.
func Finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Active reports whether a Pod still counts as a running crawl.
func Active(pod *corev1.Pod) bool {
	return !Finished(pod) && pod.DeletionTimestamp == nil
}

// RunNumber reads the run number from a Pod's labels.
func RunNumber(pod *corev1.Pod) int64 {
	n, _ := strconv.ParseInt(pod.Labels[LabelRun], 10, 64)
	return n
}

// Delay is the gap the crawler keeps between requests: spec.delay raised to
// the operator's floor.
func Delay(spec crawlv1.CrawlTargetSpec, floor time.Duration) time.Duration {
	return max(spec.DelayOrDefault(), floor)
}

// ReportURL is where a run reports: one URL per run, so a token is only
// ever checked against its own Pod.
func ReportURL(base, namespace, pod string) string {
	return base + runreport.Path(namespace, pod)
}

// TokenSecret builds the Secret that hands a run its token, for the run's
// Pod, which must exist already (its UID is the owner reference). It is
// created after the Pod so that it can be owned by the Pod alone: the
// garbage collector then removes it with the Pod whoever deletes the Pod
// (the reconciler, an uninstall, a person), so no one who cleans up after
// the operator needs a right to list Secrets. The CrawlTarget is not a
// second owner: the collector keeps a dependent while any owner lives, so
// the Secret would outlive its Pod as long as the target; the chain
// CrawlTarget -> Pod -> Secret removes it with the target all the same.
//
// The reference is neither controller nor blockOwnerDeletion. Nothing
// reconciles a Secret on its Pod's behalf (the CrawlTarget reconciler
// makes and deletes it by name), so the Pod is its owner, not its
// controller. blockOwnerDeletion only makes a foreground deletion of the
// Pod wait for the Secret, which nothing needs, and where the API server
// enforces owner references (OwnerReferencesPermissionEnforcement) setting
// it would take update on pods/finalizers; without it, setting the
// reference takes only the Secret's delete, which the manager holds.
func TokenSecret(r Run, pod *corev1.Pod, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      SecretName(pod.Name),
			Namespace: pod.Namespace,
			Labels:    labels(r),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Type:      corev1.SecretTypeOpaque,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{TokenKey: []byte(token)},
	}
}

// Pod builds the crawler Pod of a run. The Pod processes hostile input from
// the internet, so it gets no Kubernetes credentials and the restricted Pod
// Security profile, and it is pinned to one egress node so the site always
// sees the same source IP.
// It is one literal on purpose: a reviewer reads the whole Pod, every
// security setting included, in one place.
func Pod(r Run, cfg Config) *corev1.Pod {
	name := PodName(r.Target.Name, r.Number)
	args := []string{
		"crawl",
		// First, so that even a refused flag after it is logged as JSON.
		"--" + runreport.LogFormatFlag + "=" + runreport.LogFormatJSON,
		"--max-pages=" + strconv.Itoa(int(r.Target.Spec.MaxPagesOrDefault())),
		"--delay=" + Delay(r.Target.Spec, cfg.MinDelay).String(),
		"--report-url=" + ReportURL(cfg.ResultsURL, r.Target.Namespace, name),
	}
	if cfg.UserAgent != "" {
		args = append(args, "--user-agent="+cfg.UserAgent)
	}
	if cfg.AllowPrivate {
		args = append(args, "--allow-private")
	}
	if cfg.EgressEchoURL != "" {
		args = append(args, "--egress-echo-url="+cfg.EgressEchoURL, "--expect-egress-ip="+r.NodeIP)
	}
	if cfg.ActiveDeadline > 0 {
		// Leave the crawler a minute to report before the kubelet kills it.
		timeout := max(cfg.ActiveDeadline-time.Minute, cfg.ActiveDeadline/2)
		args = append(args, "--timeout="+timeout.String())
	}
	args = append(args, r.Target.Spec.URL)

	var deadline *int64
	if cfg.ActiveDeadline > 0 {
		deadline = ptr.To(int64(cfg.ActiveDeadline / time.Second))
	}
	annotations := map[string]string{
		AnnotationSite:        r.Site.String(),
		AnnotationEgressNode:  r.Node,
		AnnotationEgressIP:    r.NodeIP,
		AnnotationTokenSHA256: r.TokenSHA256,
	}
	if r.RequestedAt != "" {
		annotations[AnnotationRequestedAt] = r.RequestedAt
	}
	var pullSecrets []corev1.LocalObjectReference
	for _, s := range cfg.ImagePullSecrets {
		pullSecrets = append(pullSecrets, corev1.LocalObjectReference{Name: s})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       r.Target.Namespace,
			Labels:          withExtra(labels(r), cfg.PodLabels),
			Annotations:     withExtra(annotations, cfg.PodAnnotations),
			OwnerReferences: []metav1.OwnerReference{ownerRef(r.Target)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			ActiveDeadlineSeconds:         deadline,
			TerminationGracePeriodSeconds: ptr.To(int64(10)),
			ImagePullSecrets:              pullSecrets,
			PriorityClassName:             cfg.PriorityClassName,
			NodeSelector:                  cfg.Egress.Labels(),
			Tolerations:                   []corev1.Toleration{cfg.Egress.Toleration()},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchFields: []corev1.NodeSelectorRequirement{{
							Key:      "metadata.name",
							Operator: corev1.NodeSelectorOpIn,
							Values:   []string{r.Node},
						}},
					}},
				},
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(int64(nonRootUID)),
				RunAsGroup:     ptr.To(int64(nonRootUID)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           cfg.Image,
				ImagePullPolicy: cfg.ImagePullPolicy,
				Command:         []string{"crawler"},
				Args:            args,
				Env: append([]corev1.EnvVar{{
					Name: runreport.TokenEnv,
					ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: SecretName(name)},
						Key:                  TokenKey,
					}},
				}}, extraCAEnv(cfg)...),
				Resources: cfg.Resources,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					RunAsNonRoot:             ptr.To(true),
					Privileged:               ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

// echoURL reports whether s is a URL a crawler can ask: http or https, with
// a host, without credentials (they would show in every Pod's arguments).
func echoURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

func labels(r Run) map[string]string {
	return map[string]string{
		LabelName:      NameValue,
		LabelManagedBy: ManagedByValue,
		LabelTarget:    truncateLabel(r.Target.Name),
		LabelTargetUID: string(r.Target.UID),
		LabelRun:       strconv.FormatInt(r.Number, 10),
		LabelHostHash:  HostHash(r.Site.Host),
	}
}

// withExtra adds the configured extra keys to own; own keys win, so an
// extra key can never replace what the operator finds its Pods by (Validate
// refuses such keys before any Pod is built).
func withExtra(own, extra map[string]string) map[string]string {
	for k, v := range extra {
		if _, taken := own[k]; !taken && !reserved(k) {
			own[k] = v
		}
	}
	return own
}

func ownerRef(t *crawlv1.CrawlTarget) metav1.OwnerReference {
	return *metav1.NewControllerRef(t, crawlv1.GroupVersion.WithKind("CrawlTarget"))
}

// truncateLabel keeps a name usable as a label value (at most 63 characters);
// the target UID label is the exact reference.
func truncateLabel(s string) string {
	if len(s) <= 63 {
		return s
	}
	return strings.TrimRight(s[:63], "-.")
}

// DefaultConfig is the Config of the manager's flag defaults.
func DefaultConfig() Config {
	return Config{
		Image:           "ghcr.io/lohisoft/crawl-operator:latest",
		ImagePullPolicy: corev1.PullIfNotPresent,
		ResultsURL:      "http://crawl-operator-results.crawl-system.svc:8083",
		MinDelay:        time.Second,
		UserAgent:       engine.DefaultUserAgent,
		ActiveDeadline:  30 * time.Minute,
		Resources:       DefaultResources(),
	}
}

// BindFlags binds the manager's crawler Pod flags to c, with c's values as
// the defaults. The egress selector is bound by egress.Policy.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Image, "crawler-image", c.Image, "Image of crawler Pods; it must provide the crawler command.")
	fs.StringVar((*string)(&c.ImagePullPolicy), "crawler-image-pull-policy", string(c.ImagePullPolicy), "Pull policy of the crawler image.")
	fs.StringVar(&c.ResultsURL, "results-url", c.ResultsURL, "Base URL of the results endpoint as crawler Pods reach it.")
	fs.DurationVar(&c.MinDelay, "min-crawl-delay", c.MinDelay, "Floor applied to spec.delay: the least gap between two requests to a site.")
	fs.DurationVar(&c.ActiveDeadline, "crawl-deadline", c.ActiveDeadline, "activeDeadlineSeconds of crawler Pods.")
	fs.StringVar(&c.UserAgent, "crawler-user-agent", c.UserAgent, "User-Agent crawler Pods send; /bot states it as the current one.")
	fs.BoolVar(&c.AllowPrivate, "crawler-allow-private", c.AllowPrivate, "Let crawlers fetch private and loopback addresses. Local demos and tests only.")
	fs.StringVar(&c.EgressEchoURL, "egress-echo-url", c.EgressEchoURL, "Echo service (http or https, outside the cluster) that every crawler asks, before its first request to a site, which source address sites see; a node whose address is not its published ExternalIP gets no crawls for a while (empty: no check).")
	c.bindExtraFlags(fs)
}

// Validate reports the first setting no crawler Pod could run with.
func (c Config) Validate() error {
	switch {
	case c.Image == "":
		return errors.New("--crawler-image must not be empty")
	case c.MinDelay < 0:
		return errors.New("--min-crawl-delay must not be negative")
	case c.ActiveDeadline < 0:
		return errors.New("--crawl-deadline must not be negative")
	case c.EgressEchoURL != "" && !echoURL(c.EgressEchoURL):
		return fmt.Errorf("--egress-echo-url %q: want an http or https URL with a host", c.EgressEchoURL)
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("--crawler-image-pull-policy %q: want Always, IfNotPresent or Never", c.ImagePullPolicy)
	}
	return c.validateExtra()
}
