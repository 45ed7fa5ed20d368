// Package dnstest runs a small authoritative DNS server on 127.0.0.1 for
// tests, so that name resolution (A records pointing at loopback, missing A
// records, PTR records for FCrDNS) can be exercised without the internet.
package dnstest

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Zone is the data the server answers from. Names are case-insensitive and
// may be written with or without the final dot.
type Zone struct {
	A    map[string][]string // name → IPv4 addresses
	AAAA map[string][]string // name → IPv6 addresses
	PTR  map[string][]string // IP address (either family) → names
	// Delay holds every answer back this long, as a slow resolver does.
	Delay time.Duration
}

// Server is a running test DNS server.
type Server struct {
	Addr string // host:port of the UDP listener
	zone Zone
	mu   sync.Mutex
	log  []string // questions asked, "TYPE name"
}

// Start serves zone on 127.0.0.1 until the test ends.
func Start(t testing.TB, zone Zone) *Server {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: pc.LocalAddr().String(), zone: normalise(zone)}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve)}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return s
}

func normalise(z Zone) Zone {
	fix := func(m map[string][]string, reverse bool) map[string][]string {
		out := map[string][]string{}
		for k, v := range m {
			if reverse {
				r, err := dns.ReverseAddr(k)
				if err != nil {
					panic(err)
				}
				k = r
			}
			out[dns.Fqdn(strings.ToLower(k))] = v
		}
		return out
	}
	return Zone{A: fix(z.A, false), AAAA: fix(z.AAAA, false), PTR: fix(z.PTR, true), Delay: z.Delay}
}

// Questions returns the questions asked so far.
func (s *Server) Questions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Resolver returns a pure-Go resolver that asks only this server.
func (s *Server) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp4", s.Addr)
	}}
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	s.mu.Lock()
	s.log = append(s.log, dns.TypeToString[q.Qtype]+" "+name)
	s.mu.Unlock()
	time.Sleep(s.zone.Delay)
	_, hasA := s.zone.A[name]
	_, hasAAAA := s.zone.AAAA[name]
	_, hasPTR := s.zone.PTR[name]
	if !hasA && !hasAAAA && !hasPTR {
		m.Rcode = dns.RcodeNameError
		_ = w.WriteMsg(m)
		return
	}
	hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 60}
	switch q.Qtype {
	case dns.TypeA:
		for _, ip := range s.zone.A[name] {
			h := hdr
			h.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: h, A: net.ParseIP(ip)})
		}
	case dns.TypeAAAA:
		for _, ip := range s.zone.AAAA[name] {
			h := hdr
			h.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: h, AAAA: net.ParseIP(ip)})
		}
	case dns.TypePTR:
		for _, n := range s.zone.PTR[name] {
			h := hdr
			h.Rrtype = dns.TypePTR
			m.Answer = append(m.Answer, &dns.PTR{Hdr: h, Ptr: dns.Fqdn(n)})
		}
	}
	_ = w.WriteMsg(m)
}
