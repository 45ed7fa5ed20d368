// Package egress is everything the operator knows about egress nodes: the
// Nodes that own the bot's public IPv4 addresses. It says which Nodes are
// egress nodes (Selector), which address each crawls from (ExternalIPv4),
// which may take crawls now and which addresses are published to site
// owners (Policy), and which node a site's next crawl goes to (Choose).
// The CrawlTarget reconciler, the Pod builder, the FCrDNS self-check and
// the /bot pages all ask this package, so they cannot disagree.
package egress

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The default egress node label and taint (key=value, effect NoSchedule),
// shared with the chart and the dev cluster.
const (
	DefaultLabel = "crawl.lohisoft.com/egress"
	DefaultValue = "true"
)

// Selector names the egress nodes: the label that marks them and the taint
// that keeps every other Pod off them. Crawler Pods select the label and
// tolerate the taint. The zero value means the defaults.
type Selector struct {
	LabelKey, LabelValue string
	TaintKey, TaintValue string
	TaintEffect          corev1.TaintEffect
}

// DefaultSelector is crawl.lohisoft.com/egress=true, tainted NoSchedule.
func DefaultSelector() Selector {
	return Selector{LabelKey: DefaultLabel, LabelValue: DefaultValue,
		TaintKey: DefaultLabel, TaintValue: DefaultValue, TaintEffect: corev1.TaintEffectNoSchedule}
}

// ParseSelector reads a label "key=value" and a taint "key=value:Effect",
// the way kubectl label and kubectl taint write them.
func ParseSelector(label, taint string) (Selector, error) {
	var s Selector
	var ok bool
	if s.LabelKey, s.LabelValue, ok = strings.Cut(label, "="); !ok || s.LabelKey == "" {
		return Selector{}, fmt.Errorf("egress node label %q: want key=value", label)
	}
	if errs := validation.IsQualifiedName(s.LabelKey); len(errs) > 0 {
		return Selector{}, fmt.Errorf("egress node label key %q: %s", s.LabelKey, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(s.LabelValue); len(errs) > 0 {
		return Selector{}, fmt.Errorf("egress node label value %q: %s", s.LabelValue, strings.Join(errs, "; "))
	}
	kv, effect, ok := strings.Cut(taint, ":")
	if s.TaintKey, s.TaintValue, _ = strings.Cut(kv, "="); !ok || s.TaintKey == "" {
		return Selector{}, fmt.Errorf("egress node taint %q: want key=value:Effect", taint)
	}
	switch s.TaintEffect = corev1.TaintEffect(effect); s.TaintEffect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return Selector{}, fmt.Errorf("egress node taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", taint)
	}
	return s, nil
}

func (s Selector) orDefault() Selector {
	if s.LabelKey == "" {
		return DefaultSelector()
	}
	return s
}

// Labels is the label set that selects egress nodes.
func (s Selector) Labels() map[string]string {
	s = s.orDefault()
	return map[string]string{s.LabelKey: s.LabelValue}
}

// Selects reports whether an object with these labels is an egress node.
func (s Selector) Selects(labels map[string]string) bool {
	s = s.orDefault()
	v, ok := labels[s.LabelKey]
	return ok && v == s.LabelValue
}

// Toleration lets crawler Pods onto tainted egress nodes.
func (s Selector) Toleration() corev1.Toleration {
	s = s.orDefault()
	return corev1.Toleration{Key: s.TaintKey, Operator: corev1.TolerationOpEqual, Value: s.TaintValue, Effect: s.TaintEffect}
}

// Taint is the taint egress nodes carry.
func (s Selector) Taint() corev1.Taint {
	s = s.orDefault()
	return corev1.Taint{Key: s.TaintKey, Value: s.TaintValue, Effect: s.TaintEffect}
}
