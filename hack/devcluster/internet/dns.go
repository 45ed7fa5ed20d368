package internet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Zone is the internet's one zone file, authoritative for the root: every
// name here is absolute, so one file holds the sites' domains, LohiSoft's
// hosts and the bot's reverse zone, as if each had its own server.
func (w Internet) Zone() string {
	var b strings.Builder
	rr := func(name, typ, value string) { fmt.Fprintf(&b, "%-40s 60 IN %-5s %s\n", dns.Fqdn(name), typ, value) }
	fmt.Fprintf(&b, "$ORIGIN .\n")
	rr(".", "SOA", fmt.Sprintf("%s. message.lohisoft.com. %d 60 60 600 60", DNSName, w.Serial+1))
	rr(".", "NS", DNSName+".")
	rr(DNSName, "A", DNSAddr.String())
	rr(EchoName, "A", EchoAddr.String())
	for i, a := range w.Bot {
		name := BotName(i)
		rr(name, "A", a.String())
		rev, _ := dns.ReverseAddr(a.String())
		rr(rev, "PTR", name+".")
	}
	for _, s := range w.Sites {
		rr(s.Name, "A", s.IPv4.String())
		if s.IPv6.IsValid() {
			rr(s.Name, "AAAA", s.IPv6.String())
		}
	}
	return b.String()
}

// BotName is the published name of the bot's i-th address (from 0):
// crawler1.bot.lohisoft.com, crawler2...
func BotName(i int) string { return fmt.Sprintf("crawler%d.bot.lohisoft.com", i+1) }

func (w Internet) writeZone() error {
	tmp := w.zonePath() + ".tmp"
	if err := os.WriteFile(tmp, []byte(w.Zone()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, w.zonePath())
}

// corefile serves the zone file, reread within a second of a change (its
// SOA serial), on every address of the namespace.
func (w Internet) corefile() string {
	return fmt.Sprintf(`.:53 {
    file %s . {
        reload 1s
    }
    errors
    log
}
`, w.zonePath())
}

// startDNS runs CoreDNS inside the namespace and waits until it answers.
func (w Internet) startDNS(ctx context.Context, corednsBin string) error {
	conf := filepath.Join(w.Dir, "Corefile")
	if err := os.WriteFile(conf, []byte(w.corefile()), 0o644); err != nil {
		return err
	}
	if err := w.dns().Start(nil, "ip", "netns", "exec", w.Netns, corednsBin, "-conf", conf); err != nil {
		return err
	}
	return w.WaitName(ctx, DNSName, DNSAddr, 20*time.Second)
}

// WaitName waits until the internet's DNS server answers name with want
// (after a change, within its reload interval).
func (w Internet) WaitName(ctx context.Context, name string, want netip.Addr, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		got, err := Lookup(ctx, name, qtype(want))
		if err == nil && slices.Contains(got, want.String()) {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("answered %v", got)
		}
		if _, ok := w.dns().PID(); !ok {
			return fmt.Errorf("the internet's DNS server exited; see %s", w.dns().LogFile())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the internet's DNS server does not answer %s with %s after %s: %v (log: %s)", name, want, timeout, last, w.dns().LogFile())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func qtype(a netip.Addr) uint16 {
	if a.Is4() {
		return dns.TypeA
	}
	return dns.TypeAAAA
}

// Lookup asks the internet's DNS server, from this machine, as a site
// owner's resolver would.
func Lookup(ctx context.Context, name string, qtype uint16) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.ExchangeContext(ctx, m, net.JoinHostPort(DNSAddr.String(), "53"))
	if err != nil {
		return nil, err
	}
	if r.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("%s %s: %s", name, dns.TypeToString[qtype], dns.RcodeToString[r.Rcode])
	}
	var out []string
	for _, a := range r.Answer {
		switch rr := a.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		case *dns.PTR:
			out = append(out, rr.Ptr)
		}
	}
	return out, nil
}
