package crawlpod

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// Flag names of the crawler Pod settings that Validate names in its errors.
const (
	flagImagePullSecrets  = "crawler-image-pull-secrets"
	flagPriorityClassName = "crawler-priority-class-name"
	flagPodLabels         = "crawler-pod-labels"
	flagPodAnnotations    = "crawler-pod-annotations"
	flagExtraCAFile       = "crawler-extra-ca-file"
)

// crawlerResources are the resources whose request and limit have a flag
// each: --crawler-cpu-request, --crawler-memory-limit, ...
var crawlerResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

func resourceFlag(res corev1.ResourceName, limit bool) string {
	if limit {
		return "crawler-" + string(res) + "-limit"
	}
	return "crawler-" + string(res) + "-request"
}

// ReservedPrefix is the operator's own label and annotation domain. Extra
// labels and annotations may not use it: the reconciler, the results
// endpoint and the NetworkPolicy find and trust crawler Pods by these keys,
// so a configured value must never replace or imitate one.
const ReservedPrefix = "crawl.lohisoft.com/"

// reserved reports whether key is one the operator sets on crawler Pods.
func reserved(key string) bool {
	return strings.HasPrefix(key, ReservedPrefix) || key == LabelName || key == LabelManagedBy
}

func (c *Config) bindExtraFlags(fs *flag.FlagSet) {
	for _, res := range crawlerResources {
		fs.Var(&quantityFlag{&c.Resources.Requests, res}, resourceFlag(res, false),
			"Request of "+string(res)+" of the crawler container, a Kubernetes quantity; empty sets none.")
		fs.Var(&quantityFlag{&c.Resources.Limits, res}, resourceFlag(res, true),
			"Limit of "+string(res)+" of the crawler container, a Kubernetes quantity; empty sets none.")
	}
	fs.Var(&listFlag{&c.ImagePullSecrets}, flagImagePullSecrets,
		"Comma-separated Secrets crawler Pods pull their image with (private registries); each must exist in every namespace with CrawlTargets.")
	fs.StringVar(&c.PriorityClassName, flagPriorityClassName, c.PriorityClassName, "PriorityClass of crawler Pods (empty: the cluster's default).")
	fs.Var(&mapFlag{&c.PodLabels}, flagPodLabels,
		"Comma-separated key=value labels added to crawler Pods; keys of the operator's own ("+ReservedPrefix+"*, "+LabelName+", "+LabelManagedBy+") are refused.")
	fs.Var(&mapFlag{&c.PodAnnotations}, flagPodAnnotations,
		"Comma-separated key=value annotations added to crawler Pods (no commas in values); keys under "+ReservedPrefix+" are refused.")
	fs.StringVar(&c.ExtraCAFile, flagExtraCAFile, c.ExtraCAFile,
		"PEM file of certificate authorities crawlers trust for HTTPS besides the public roots (sites behind a private CA); read at start and passed to crawler Pods in $"+runreport.ExtraCACertsEnv+".")
}

// ReadExtraCAFile reads --crawler-extra-ca-file into ExtraCACerts, once, at
// start: a file that is missing or too big stops the manager, rather than
// every crawl of an HTTPS site failing later.
func (c *Config) ReadExtraCAFile() error {
	if c.ExtraCAFile == "" {
		return nil
	}
	f, err := os.Open(c.ExtraCAFile)
	if err != nil {
		return fmt.Errorf("--%s: %w", flagExtraCAFile, err)
	}
	defer f.Close()
	// One byte over the limit is enough for Validate to refuse it.
	b, err := io.ReadAll(io.LimitReader(f, fetch.MaxExtraCACerts+1))
	if err != nil {
		return fmt.Errorf("--%s %s: %w", flagExtraCAFile, c.ExtraCAFile, err)
	}
	if _, err := fetch.ParseCACerts(b); err != nil {
		return fmt.Errorf("--%s %s: %w", flagExtraCAFile, c.ExtraCAFile, err)
	}
	c.ExtraCACerts = string(b)
	return nil
}

// extraCAEnv hands crawler Pods the extra CAs. A Pod spec needs no object in
// the crawler's namespace, unlike a mounted ConfigMap, and CA certificates
// are public.
func extraCAEnv(cfg Config) []corev1.EnvVar {
	if cfg.ExtraCACerts == "" {
		return nil
	}
	return []corev1.EnvVar{{Name: runreport.ExtraCACertsEnv, Value: cfg.ExtraCACerts}}
}

// validateExtra checks the configurable parts of the Pod with the API
// server's own rules, so a bad value stops the manager at start with the
// flag's name instead of failing every Pod create.
func (c Config) validateExtra() error {
	for _, res := range crawlerResources {
		req, hasReq := c.Resources.Requests[res]
		lim, hasLim := c.Resources.Limits[res]
		switch {
		case hasReq && req.Sign() < 0:
			return fmt.Errorf("--%s %s: must not be negative", resourceFlag(res, false), req.String())
		case hasLim && lim.Sign() < 0:
			return fmt.Errorf("--%s %s: must not be negative", resourceFlag(res, true), lim.String())
		case hasReq && hasLim && req.Cmp(lim) > 0:
			return fmt.Errorf("--%s %s must not exceed --%s %s", resourceFlag(res, false), req.String(), resourceFlag(res, true), lim.String())
		}
	}
	for _, name := range c.ImagePullSecrets {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("--%s: %q is not a Secret name: %s", flagImagePullSecrets, name, strings.Join(errs, "; "))
		}
	}
	if c.PriorityClassName != "" {
		if errs := validation.IsDNS1123Subdomain(c.PriorityClassName); len(errs) > 0 {
			return fmt.Errorf("--%s: %q is not a PriorityClass name: %s", flagPriorityClassName, c.PriorityClassName, strings.Join(errs, "; "))
		}
	}
	// Set in code rather than read from --crawler-extra-ca-file: crawlers
	// must still be able to use it.
	if c.ExtraCACerts != "" {
		if _, err := fetch.ParseCACerts([]byte(c.ExtraCACerts)); err != nil {
			return fmt.Errorf("--%s %s: %w", flagExtraCAFile, c.ExtraCAFile, err)
		}
	}
	if errs := metav1validation.ValidateLabels(c.PodLabels, field.NewPath("--"+flagPodLabels)); len(errs) > 0 {
		return errs.ToAggregate()
	}
	if errs := apivalidation.ValidateAnnotations(c.PodAnnotations, field.NewPath("--"+flagPodAnnotations)); len(errs) > 0 {
		return errs.ToAggregate()
	}
	for flagName, m := range map[string]map[string]string{flagPodLabels: c.PodLabels, flagPodAnnotations: c.PodAnnotations} {
		for _, k := range sortedKeys(m) {
			if reserved(k) {
				return fmt.Errorf("--%s: %q is the operator's own key", flagName, k)
			}
		}
	}
	return nil
}

// quantityFlag sets one resource of a ResourceList; an empty value removes
// it.
type quantityFlag struct {
	list *corev1.ResourceList
	res  corev1.ResourceName
}

func (f *quantityFlag) String() string {
	if f == nil || f.list == nil {
		return ""
	}
	if q, ok := (*f.list)[f.res]; ok {
		return q.String()
	}
	return ""
}

func (f *quantityFlag) Set(v string) error {
	// A copy: the list may be shared with the defaults.
	list := corev1.ResourceList{}
	for k, q := range *f.list {
		list[k] = q
	}
	if v == "" {
		delete(list, f.res)
	} else {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return err
		}
		list[f.res] = q
	}
	*f.list = list
	return nil
}

// listFlag is a comma-separated list; empty items are dropped.
type listFlag struct{ list *[]string }

func (f *listFlag) String() string {
	if f == nil || f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f *listFlag) Set(v string) error {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	*f.list = out
	return nil
}

// mapFlag is a comma-separated list of key=value pairs. A value cannot
// hold a comma: labels never can, and annotations given this way do not.
type mapFlag struct{ m *map[string]string }

func (f *mapFlag) String() string {
	if f == nil || f.m == nil {
		return ""
	}
	pairs := make([]string, 0, len(*f.m))
	for _, k := range sortedKeys(*f.m) {
		pairs = append(pairs, k+"="+(*f.m)[k])
	}
	return strings.Join(pairs, ",")
}

func (f *mapFlag) Set(v string) error {
	out := map[string]string{}
	if v != "" {
		for _, pair := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			if !ok || k == "" {
				return fmt.Errorf("%q: want key=value", pair)
			}
			if _, dup := out[k]; dup {
				return fmt.Errorf("%q given twice", k)
			}
			out[k] = val
		}
	}
	*f.m = out
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
