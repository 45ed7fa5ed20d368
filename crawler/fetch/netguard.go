package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/specialpurpose"
)

// IsPublicIPv4 reports whether a is an IPv4 address the bot may connect
// to: not in a range of specialpurpose's table that it must not reach. A
// crawler Pod may be able to reach some of those (the cluster, the node,
// the cloud metadata service); a hostile DNS answer or redirect must not be
// able to point the bot there. The crawler NetworkPolicy excepts the same
// ranges, from the same table.
func IsPublicIPv4(a netip.Addr) bool {
	a = a.Unmap()
	return a.Is4() && !specialpurpose.IsForbidden(a)
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
