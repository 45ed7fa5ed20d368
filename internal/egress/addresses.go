package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Addresses is the set of public IPv4 addresses published to site owners
// (--expected-egress-ips). When it is not empty, it is the only set of
// source addresses crawls may use: owners may allowlist exactly those.
type Addresses struct {
	list []string
}

// ParseAddresses reads a comma-separated list of IPv4 addresses; blanks
// between commas are ignored, anything else that is not IPv4 is an error.
func ParseAddresses(s string) (Addresses, error) {
	var a Addresses
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		ip, err := netip.ParseAddr(f)
		if err != nil || !ip.Is4() {
			return Addresses{}, fmt.Errorf("%q is not an IPv4 address", f)
		}
		if !slices.Contains(a.list, ip.String()) {
			a.list = append(a.list, ip.String())
		}
	}
	return a, nil
}

// MustParseAddresses is ParseAddresses for constants in tests and defaults.
func MustParseAddresses(s string) Addresses {
	a, err := ParseAddresses(s)
	if err != nil {
		panic(err)
	}
	return a
}

// Allows reports whether ip may be a source address: any IPv4 when the set
// is empty, otherwise only the listed ones.
func (a Addresses) Allows(ip string) bool {
	return len(a.list) == 0 || slices.Contains(a.list, ip)
}

// List returns the addresses in the order given.
func (a Addresses) List() []string { return slices.Clone(a.list) }
