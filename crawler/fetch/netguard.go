package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// nonPublic lists the IPv4 ranges that are not the public internet (IANA
// special-purpose registry). A crawler Pod may be able to reach some of them
// (the cluster, the node, the cloud metadata service); a hostile DNS answer
// or redirect must not be able to point the bot there.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("10.0.0.0/8"),      // private
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared space
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, cloud metadata
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
}

// IsPublicIPv4 reports whether a is an IPv4 address on the public internet.
func IsPublicIPv4(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Errors the dialer returns. They are permanent for the crawl: retrying
// will not change them.
var (
	ErrIPv6      = errors.New("IPv6 is not used (LohiSoftBot connects over IPv4 only)")
	ErrNoIPv4    = errors.New("no IPv4 address (A record)")
	ErrNonPublic = errors.New("not a public IPv4 address (use --allow-private for local tests)")
)

// Resolver finds IPv4 addresses. *net.Resolver satisfies it; tests point one
// at a DNS server on loopback.
type Resolver interface {
	LookupIP(ctx context.Context, network, host string) ([]net.IP, error)
}

// Dialer connects only over IPv4 and, unless AllowPrivate, only to public
// addresses. The check runs on the address actually dialled, after DNS, so
// neither a DNS answer nor a redirect can aim the bot at an internal host,
// and there is no second lookup to rebind.
type Dialer struct {
	Resolver       Resolver // nil: net.DefaultResolver
	AllowPrivate   bool
	SourceIP       netip.Addr // zero: the kernel chooses
	ConnectTimeout time.Duration
}

// Addresses resolves host to the IPv4 addresses the dialer would use,
// applying the same rules, so a crawl can refuse a site before sending
// anything.
func (d *Dialer) Addresses(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Is6() && !a.Is4In6() || strings.Contains(host, ":") {
			return nil, fmt.Errorf("%s: %w", host, ErrIPv6)
		}
		return d.filter(host, []netip.Addr{a.Unmap()})
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupIP(ctx, "ip4", host)
	var addrs []netip.Addr
	for _, ip := range ips {
		if ip4 := ip.To4(); ip4 != nil {
			addrs = append(addrs, netip.AddrFrom4([4]byte(ip4)))
		}
	}
	if len(addrs) == 0 {
		var dnsErr *net.DNSError
		if err == nil || errors.As(err, &dnsErr) && (dnsErr.IsNotFound || dnsErr.Err == "no such host") {
			return nil, fmt.Errorf("%s: %w", host, ErrNoIPv4)
		}
		return nil, fmt.Errorf("%s: resolving: %w", host, err)
	}
	return d.filter(host, addrs)
}

func (d *Dialer) filter(host string, addrs []netip.Addr) ([]netip.Addr, error) {
	if d.AllowPrivate {
		return addrs, nil
	}
	var ok []netip.Addr
	for _, a := range addrs {
		if IsPublicIPv4(a) {
			ok = append(ok, a)
		}
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("%s resolves to %v: %w", host, addrs[0], ErrNonPublic)
	}
	return ok, nil
}

// DialContext is for http.Transport. Only "tcp"/"tcp4" are accepted and the
// connection is always tcp4.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" {
		return nil, fmt.Errorf("dial %s %s: %w", network, address, ErrIPv6)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs, err := d.Addresses(ctx, host)
	if err != nil {
		return nil, err
	}
	nd := net.Dialer{Timeout: d.ConnectTimeout}
	if d.SourceIP.IsValid() {
		nd.LocalAddr = &net.TCPAddr{IP: d.SourceIP.AsSlice()}
	}
	var firstErr error
	for _, a := range addrs {
		c, err := nd.DialContext(ctx, "tcp4", net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}
