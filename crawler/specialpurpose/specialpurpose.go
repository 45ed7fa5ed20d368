// Package specialpurpose is the one list of IPv4 destinations LohiSoftBot
// never connects to: the IANA IPv4 Special-Purpose Address Registry (RFC
// 6890, updated by RFC 8190) and the multicast block of the IPv4 Multicast
// Address Space Registry, each entry with the bot's decision.
//
// Two things enforce it and both read it from here, so they cannot
// disagree: the crawler's dialer (crawler/fetch), which checks the address
// it is about to dial after DNS, and the crawler NetworkPolicy's
// except-list (internal/crawlpod, and the Helm chart through a file
// generated from this table and checked by test/chart), which the CNI
// enforces for the whole Pod, whatever the crawler process does.
//
// The package imports nothing of the operator: the crawler binary links it.
package specialpurpose

import (
	"net/netip"
	"slices"
)

// Reachability is the registry's "Globally Reachable" column: whether a
// datagram to the range is forwardable beyond one administrative domain.
type Reachability int8

const (
	// NotGlobal ranges are meaningful only inside some network (private
	// networks, loopback, link-local, documentation, ...). The zero value,
	// so an entry that forgets the column claims the least.
	NotGlobal Reachability = iota
	// Global ranges are routed on the public internet.
	Global
	// NotStated: the registry gives no value, because the entry was
	// terminated (192.88.99.0/24) or comes from another registry
	// (multicast).
	NotStated
)

func (r Reachability) String() string {
	switch r {
	case NotGlobal:
		return "not globally reachable"
	case Global:
		return "globally reachable"
	default:
		return "reachability not stated"
	}
}

// Range is one registry entry and whether the bot may connect to it.
type Range struct {
	Prefix netip.Prefix
	Name   string // the registry's name for the block
	RFC    string // the reference the registry gives
	Global Reachability
	// Allowed means the bot may connect there. The zero value is
	// forbidden, so an entry added without a decision keeps the bot out.
	Allowed bool
}

func r(prefix, name, rfc string, global Reachability, allowed bool) Range {
	return Range{Prefix: netip.MustParsePrefix(prefix), Name: name, RFC: rfc, Global: global, Allowed: allowed}
}

// IPv4 is the table, in the registry's order (checked against the registry
// as published in 2026; multicast last). The comment on each entry is why
// the bot may or may not go there. The guard is about where a hostile DNS
// answer or redirect could aim the bot: a crawler Pod sits inside a
// cluster, next to nodes, cloud metadata and private networks that the
// public internet cannot reach, and nothing a site owner can publish lives
// in any of these ranges except the three allowed below.
var IPv4 = []Range{
	// Connecting to 0.0.0.0 reaches the local host on Linux.
	r("0.0.0.0/8", `"This network"`, "RFC 791, Section 3.2", NotGlobal, false),
	r("0.0.0.0/32", `"This host on this network"`, "RFC 1122, Section 3.2.1.3", NotGlobal, false),
	// Where clusters, nodes and company networks live.
	r("10.0.0.0/8", "Private-Use", "RFC 1918", NotGlobal, false),
	// CGNAT, and inside many clouds and VPNs (and Pod ranges of the
	// development cluster) the provider's own network.
	r("100.64.0.0/10", "Shared Address Space", "RFC 6598", NotGlobal, false),
	// The Pod itself, or the node for a host-network process.
	r("127.0.0.0/8", "Loopback", "RFC 1122, Section 3.2.1.3", NotGlobal, false),
	// Cloud metadata services (169.254.169.254) hand out credentials.
	r("169.254.0.0/16", "Link Local", "RFC 3927", NotGlobal, false),
	r("172.16.0.0/12", "Private-Use", "RFC 1918", NotGlobal, false),
	// The whole /24 is forbidden although two of its /32s (PCP and TURN
	// anycast, below) are globally reachable: anycast reaches the nearest
	// instance, and for both that is infrastructure of the network the
	// bot sits in, not a website. The registry marks the rest of the /24
	// "not usable unless by virtue of a more specific reservation".
	r("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890, Section 2.1", NotGlobal, false),
	// DS-Lite's tunnel endpoints at the operator's own ISP.
	r("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", NotGlobal, false),
	r("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", NotGlobal, false),
	// The Port Control Protocol server is the NAT in front of the bot: a
	// Pod that reaches it could open inbound port mappings.
	r("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", Global, false),
	// A TURN server relays traffic on the client's behalf: a way around
	// this guard and the NetworkPolicy both.
	r("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", Global, false),
	// Answered by the local network's NAT64/DNS64 resolver.
	r("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 Section 2.2", NotGlobal, false),
	r("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 Section 2.2", NotGlobal, false),
	// Documentation ranges: no real site is there, and networks reuse
	// them for their own hosts (the development cluster's machine is
	// 192.0.2.2), so a DNS answer pointing here points inside.
	r("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", NotGlobal, false),
	// Allowed: public anycast DNS sinks that answer for the reverse zones
	// of private ranges. They are built to absorb stray traffic, nothing
	// sits behind them, and the registry says they are globally reachable.
	r("192.31.196.0/24", "AS112-v4", "RFC 7535", Global, true),
	// Allowed: public anycast relays that deliver multicast to whoever
	// asks over UDP; they forward nothing into the network they sit in.
	r("192.52.193.0/24", "AMT", "RFC 7450", Global, true),
	// 6to4 relays, deprecated: the nearest relay answers, often one inside
	// the operator's own network, and it tunnels into IPv6, which the bot
	// never uses.
	r("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", NotStated, false),
	r("192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", NotGlobal, false),
	r("192.168.0.0/16", "Private-Use", "RFC 1918", NotGlobal, false),
	// Allowed: AS112 again, the DNAME-delegated sink (see AS112-v4).
	r("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", Global, true),
	// Lab networks, not the internet; often reused internally like the
	// documentation ranges.
	r("198.18.0.0/15", "Benchmarking", "RFC 2544", NotGlobal, false),
	r("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", NotGlobal, false),
	r("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", NotGlobal, false),
	// Not routed; Linux refuses to connect to most of it anyway, so a site
	// there cannot work for anyone.
	r("240.0.0.0/4", "Reserved", "RFC 1112, Section 4", NotGlobal, false),
	r("255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919 Section 7", NotGlobal, false),
	// From the IPv4 Multicast Address Space Registry: TCP cannot connect
	// to a group, and link-local groups (mDNS, SSDP) reach the node's
	// neighbours.
	r("224.0.0.0/4", "Multicast", "RFC 5771", NotStated, false),
}

// forbidden is Forbidden's answer, computed once: the dialer asks for
// every connection.
var forbidden = forbiddenPrefixes(IPv4)

// Forbidden returns the prefixes the bot must not connect to, in address
// order, each only once: a forbidden range inside another forbidden one
// (0.0.0.0/32 in 0.0.0.0/8) is left out, as a NetworkPolicy's except-list
// needs no more. The caller may change the slice.
func Forbidden() []netip.Prefix { return slices.Clone(forbidden) }

func forbiddenPrefixes(table []Range) []netip.Prefix {
	var out []netip.Prefix
	for _, e := range table {
		if e.Allowed || slices.ContainsFunc(table, func(o Range) bool { return !o.Allowed && covers(o.Prefix, e.Prefix) }) {
			continue
		}
		out = append(out, e.Prefix)
	}
	slices.SortFunc(out, netip.Prefix.Compare)
	return out
}

// covers reports whether outer holds all of inner and more.
func covers(outer, inner netip.Prefix) bool {
	return outer.Bits() < inner.Bits() && outer.Contains(inner.Addr())
}

// IsForbidden reports whether a is an IPv4 address (or an IPv4-mapped IPv6
// one) that the bot must not connect to. Other IPv6 addresses are not
// judged here: the bot never uses IPv6 at all.
func IsForbidden(a netip.Addr) bool {
	a = a.Unmap()
	return a.Is4() && slices.ContainsFunc(forbidden, func(p netip.Prefix) bool { return p.Contains(a) })
}
