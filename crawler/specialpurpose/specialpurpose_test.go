package specialpurpose

import (
	"net/netip"
	"slices"
	"testing"
)

// The registry's address blocks as IANA publishes them (2026; the
// NAT64/DNS64 record holds two /32s), with the Globally Reachable column,
// written out here so that the table cannot lose or change an entry
// without this test changing too.
var registry = []struct {
	prefix string
	global Reachability
}{
	{"0.0.0.0/8", NotGlobal}, {"0.0.0.0/32", NotGlobal}, {"10.0.0.0/8", NotGlobal}, {"100.64.0.0/10", NotGlobal},
	{"127.0.0.0/8", NotGlobal}, {"169.254.0.0/16", NotGlobal}, {"172.16.0.0/12", NotGlobal},
	{"192.0.0.0/24", NotGlobal}, {"192.0.0.0/29", NotGlobal}, {"192.0.0.8/32", NotGlobal}, {"192.0.0.9/32", Global},
	{"192.0.0.10/32", Global}, {"192.0.0.170/32", NotGlobal}, {"192.0.0.171/32", NotGlobal}, {"192.0.2.0/24", NotGlobal},
	{"192.31.196.0/24", Global}, {"192.52.193.0/24", Global}, {"192.88.99.0/24", NotStated}, {"192.88.99.2/32", NotGlobal},
	{"192.168.0.0/16", NotGlobal}, {"192.175.48.0/24", Global}, {"198.18.0.0/15", NotGlobal}, {"198.51.100.0/24", NotGlobal},
	{"203.0.113.0/24", NotGlobal}, {"240.0.0.0/4", NotGlobal}, {"255.255.255.255/32", NotGlobal},
	// The IPv4 Multicast Address Space Registry has no such column.
	{"224.0.0.0/4", NotStated},
}

func TestTableIsTheRegistry(t *testing.T) {
	if len(IPv4) != len(registry) {
		t.Errorf("the table has %d entries, the registry %d", len(IPv4), len(registry))
	}
	for i, want := range registry {
		if i >= len(IPv4) {
			t.Errorf("missing %s (%s)", want.prefix, want.global)
			continue
		}
		if got := IPv4[i]; got.Prefix.String() != want.prefix || got.Global != want.global {
			t.Errorf("entry %d is %s (%s), the registry's is %s (%s)", i, got.Prefix, got.Global, want.prefix, want.global)
		}
	}
}

// What every entry must satisfy for the two enforcers to mean the same.
func TestEntries(t *testing.T) {
	for _, e := range IPv4 {
		t.Run(e.Prefix.String(), func(t *testing.T) {
			if !e.Prefix.Addr().Is4() || e.Prefix != e.Prefix.Masked() {
				t.Errorf("%s is not a masked IPv4 prefix: a NetworkPolicy's except-list would not take it as written", e.Prefix)
			}
			if e.Name == "" || e.RFC == "" {
				t.Errorf("%s: name %q, RFC %q: the chart's list and the docs show both", e.Prefix, e.Name, e.RFC)
			}
			// A range the registry does not call globally reachable is
			// some network's inside: the bot stays out of all of them.
			if e.Global != Global && e.Allowed {
				t.Errorf("%s (%s) is %s, yet allowed", e.Prefix, e.Name, e.Global)
			}
			// One ipBlock cannot let in a range inside one of its
			// excepts, nor except a range inside an allowed one and
			// still mean "the allowed range": keep decisions nested
			// the same way.
			for _, o := range IPv4 {
				if covers(o.Prefix, e.Prefix) && o.Allowed != e.Allowed {
					t.Errorf("%s (allowed %t) lies inside %s (allowed %t)", e.Prefix, e.Allowed, o.Prefix, o.Allowed)
				}
			}
		})
	}
}

// The bot's decisions, written out: the ranges a NetworkPolicy excepts.
func TestForbidden(t *testing.T) {
	want := []string{"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4"}
	got := Forbidden()
	var s []string
	for _, p := range got {
		s = append(s, p.String())
	}
	if !slices.Equal(s, want) {
		t.Errorf("Forbidden() = %v, want %v", s, want)
	}
	// Every forbidden entry is covered, no allowed one touched.
	for _, e := range IPv4 {
		covered := slices.ContainsFunc(got, func(p netip.Prefix) bool { return p == e.Prefix || covers(p, e.Prefix) })
		overlaps := slices.ContainsFunc(got, e.Prefix.Overlaps)
		if e.Allowed && overlaps || !e.Allowed && !covered {
			t.Errorf("%s (allowed %t): covered by Forbidden() %t, overlaps it %t", e.Prefix, e.Allowed, covered, overlaps)
		}
	}
	got[0] = netip.MustParsePrefix("8.8.8.0/24")
	if IsForbidden(netip.MustParseAddr("8.8.8.8")) {
		t.Error("changing Forbidden's answer changed what IsForbidden refuses")
	}
}

func TestIsForbidden(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		// The edges of ranges that sit next to public space.
		{"192.0.2.0", true}, {"192.0.2.255", true}, {"192.0.1.255", false}, {"192.0.3.0", false},
		{"198.51.100.0", true}, {"198.51.100.255", true}, {"198.51.99.255", false}, {"198.51.101.0", false},
		{"203.0.113.0", true}, {"203.0.113.255", true}, {"203.0.112.255", false}, {"203.0.114.0", false},
		{"198.18.0.0", true}, {"198.19.255.255", true}, {"198.17.255.255", false}, {"198.20.0.0", false},
		{"100.64.0.0", true}, {"100.127.255.255", true}, {"100.63.255.255", false}, {"100.128.0.0", false},
		{"172.16.0.0", true}, {"172.31.255.255", true}, {"172.15.255.255", false}, {"172.32.0.0", false},
		{"192.88.99.1", true}, {"192.88.99.2", true}, {"192.88.98.255", false}, {"192.88.100.0", false},
		// Globally reachable, yet forbidden with their /24.
		{"192.0.0.9", true}, {"192.0.0.10", true}, {"192.0.0.170", true}, {"192.0.0.255", true}, {"192.0.1.0", false},
		// Globally reachable and allowed.
		{"192.31.196.1", false}, {"192.52.193.1", false}, {"192.175.48.6", false},
		{"0.0.0.0", true}, {"127.0.0.1", true}, {"169.254.169.254", true}, {"224.0.0.251", true}, {"239.255.255.250", true},
		{"240.0.0.1", true}, {"255.255.255.255", true}, {"223.255.255.255", false},
		{"8.8.8.8", false}, {"79.139.58.98", false},
		// IPv4-mapped addresses are judged as IPv4; other IPv6 is not
		// this table's business (the bot never dials IPv6).
		{"::ffff:192.0.2.1", true}, {"::ffff:8.8.8.8", false}, {"2001:db8::1", false},
	} {
		if got := IsForbidden(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("IsForbidden(%s) = %t, want %t", tc.addr, got, tc.want)
		}
	}
}
