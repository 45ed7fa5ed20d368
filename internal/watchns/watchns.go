// Package watchns is the manager's namespaced mode: the namespaces whose
// CrawlTargets, SiteIndexes, crawler Pods and run Secrets it watches and
// touches (--watch-namespaces). Nodes and Exclusions are cluster-scoped and
// always watched cluster-wide.
package watchns

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Namespaces lists the watched namespaces; empty means every namespace.
// *Namespaces is a flag.Value taking a comma-separated list.
type Namespaces []string

// Parse reads a comma-separated list of namespace names ("" is every
// namespace). Spaces around names are ignored; an empty item, an invalid
// name or a repeated one is refused.
func Parse(s string) (Namespaces, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out Namespaces
	for _, item := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(item))
	}
	return out, out.Validate()
}

// Validate refuses an empty or invalid namespace name and a repeated one.
func (n Namespaces) Validate() error {
	seen := map[string]bool{}
	for _, ns := range n {
		if ns == "" {
			return fmt.Errorf("--watch-namespaces: empty namespace name in the list")
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		if seen[ns] {
			return fmt.Errorf("--watch-namespaces: %q is listed twice", ns)
		}
		seen[ns] = true
	}
	return nil
}

// All reports whether every namespace is watched.
func (n Namespaces) All() bool { return len(n) == 0 }

// Has reports whether namespace ns is watched.
func (n Namespaces) Has(ns string) bool { return n.All() || slices.Contains(n, ns) }

// Cache is the manager cache's DefaultNamespaces: nil (every namespace) or
// one entry per watched namespace.
func (n Namespaces) Cache() map[string]cache.Config {
	if n.All() {
		return nil
	}
	out := make(map[string]cache.Config, len(n))
	for _, ns := range n {
		out[ns] = cache.Config{}
	}
	return out
}

// String is the flag's form: the names joined by commas.
func (n *Namespaces) String() string {
	if n == nil {
		return ""
	}
	return strings.Join(*n, ",")
}

// Set parses the flag's value.
func (n *Namespaces) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*n = v
	return nil
}
