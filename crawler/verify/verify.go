// Package verify checks that an IP address belongs to LohiSoftBot by
// forward-confirmed reverse DNS, the way the bot's public page tells site
// owners to: the PTR name must end in .bot.lohisoft.com and must resolve
// back to the same address.
package verify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Suffix is the domain that only LohiSoftBot's crawlers live in. The bare
// lohisoft.com also covers LohiSoft's web and mail servers, so it does not
// identify the bot.
const Suffix = ".bot.lohisoft.com"

// Resolver does the two lookups. *net.Resolver satisfies it.
type Resolver interface {
	LookupAddr(ctx context.Context, addr string) ([]string, error)
	LookupIP(ctx context.Context, network, host string) ([]net.IP, error)
}

// ErrBadIP is returned for input that is not an IP address.
var ErrBadIP = errors.New("not an IP address")

// NotVerifiedError says why an address is not LohiSoftBot's.
type NotVerifiedError struct{ Reason string }

func (e *NotVerifiedError) Error() string { return "not LohiSoftBot: " + e.Reason }

// Verify returns the crawler hostname of ip when FCrDNS confirms it.
func Verify(ctx context.Context, r Resolver, ip string) (string, error) {
	return VerifySuffix(ctx, r, ip, Suffix)
}

// VerifySuffix is Verify against another hostname suffix (with its leading
// dot), for an operator whose crawlers live elsewhere than Suffix; the
// manager's egress self-check uses the suffix it is configured with.
func VerifySuffix(ctx context.Context, r Resolver, ip, suffix string) (string, error) {
	addr, err := netip.ParseAddr(strings.TrimSpace(ip))
	if err != nil {
		return "", fmt.Errorf("%q: %w", ip, ErrBadIP)
	}
	addr = addr.Unmap()
	if !addr.Is4() {
		return "", &NotVerifiedError{Reason: addr.String() + " is IPv6; LohiSoftBot makes no requests over IPv6"}
	}
	names, err := r.LookupAddr(ctx, addr.String())
	if err != nil || len(names) == 0 {
		reason := "no reverse DNS (PTR) name for " + addr.String()
		if err != nil && !isNotFound(err) {
			reason += ": " + err.Error()
		}
		return "", &NotVerifiedError{Reason: reason}
	}
	var reasons []string
	for _, n := range names {
		host := strings.ToLower(strings.TrimSuffix(n, "."))
		if !strings.HasSuffix(host, suffix) || host == strings.TrimPrefix(suffix, ".") {
			reasons = append(reasons, fmt.Sprintf("reverse DNS name %s does not end in %s", host, suffix))
			continue
		}
		ips, err := r.LookupIP(ctx, "ip4", host)
		if err != nil && !isNotFound(err) {
			reasons = append(reasons, fmt.Sprintf("forward lookup of %s failed: %v", host, err))
			continue
		}
		for _, fip := range ips {
			if a, ok := netip.AddrFromSlice(fip); ok && a.Unmap() == addr {
				return host, nil
			}
		}
		reasons = append(reasons, fmt.Sprintf("%s does not resolve back to %s (forward lookup: %v)", host, addr, ips))
	}
	return "", &NotVerifiedError{Reason: strings.Join(reasons, "; ")}
}

func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// ResolverFor returns the system resolver, or one that asks only server
// (host:port) when it is not empty.
func ResolverFor(server string) *net.Resolver {
	if server == "" {
		return net.DefaultResolver
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
}
