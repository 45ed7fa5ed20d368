package verify

import (
	"context"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
)

func TestVerifySuffix(t *testing.T) {
	dns := dnstest.Start(t, dnstest.Zone{
		PTR: map[string][]string{"192.0.2.1": {"c1.crawl.example.net"}, "192.0.2.2": {"c2.bot.lohisoft.com"}},
		A:   map[string][]string{"c1.crawl.example.net": {"192.0.2.1"}, "c2.bot.lohisoft.com": {"192.0.2.2"}},
	})
	r := ResolverFor(dns.Addr)
	if got, err := VerifySuffix(context.Background(), r, "192.0.2.1", ".crawl.example.net"); err != nil || got != "c1.crawl.example.net" {
		t.Errorf("VerifySuffix(own suffix) = %q, %v", got, err)
	}
	// The default suffix no longer counts once another is configured.
	if got, err := VerifySuffix(context.Background(), r, "192.0.2.2", ".crawl.example.net"); err == nil {
		t.Errorf("VerifySuffix accepted %q under another suffix", got)
	}
	if got, err := Verify(context.Background(), r, "192.0.2.2"); err != nil || got != "c2.bot.lohisoft.com" {
		t.Errorf("Verify = %q, %v", got, err)
	}
}
