// Package specialpurposetest gives tests the addresses on which the
// crawler's dialer and the crawler NetworkPolicies must agree.
package specialpurposetest

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/lohisoft/crawl-operator/crawler/specialpurpose"
)

// Sample is an address to judge and where it lies, for messages.
type Sample struct {
	Addr  netip.Addr
	Where string
}

// Samples are the first and last address of every range in
// specialpurpose.IPv4 and the addresses just outside it (where an
// off-by-one prefix length shows), then public addresses, each once, in
// order. Both verdicts occur among them.
func Samples() []Sample {
	var out []Sample
	seen := map[netip.Addr]bool{}
	add := func(a netip.Addr, where string, args ...any) {
		if a.IsValid() && !seen[a] { // before 0.0.0.0 and after 255.255.255.255 there is nothing
			seen[a] = true
			out = append(out, Sample{a, fmt.Sprintf(where, args...)})
		}
	}
	for _, r := range specialpurpose.IPv4 {
		first, last := r.Prefix.Addr(), Last(r.Prefix)
		add(first.Prev(), "just below %s (%s)", r.Prefix, r.Name)
		add(first, "first of %s (%s)", r.Prefix, r.Name)
		add(last, "last of %s (%s)", r.Prefix, r.Name)
		add(last.Next(), "just above %s (%s)", r.Prefix, r.Name)
	}
	for _, a := range []string{"8.8.8.8", "79.139.58.98", "151.101.1.69"} {
		add(netip.MustParseAddr(a), "public")
	}
	return out
}

// Last is the highest address of an IPv4 prefix.
func Last(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])|(1<<(32-p.Bits())-1))
	return netip.AddrFrom4(a)
}
