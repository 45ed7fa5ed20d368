package verify

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
)

func TestVerify(t *testing.T) {
	dns := dnstest.Start(t, dnstest.Zone{
		PTR: map[string][]string{
			"79.139.58.98":  {"crawler1.bot.lohisoft.com"},
			"79.139.58.121": {"CRAWLER2.bot.lohisoft.com."},
			"79.139.58.10":  {"mail.lohisoft.com"},
			"203.0.113.5":   {"evil-bot.lohisoft.com.attacker.net"},
			"203.0.113.6":   {"crawler1.bot.lohisoft.com"}, // forged PTR
			"203.0.113.7":   {"ghost.bot.lohisoft.com"},    // no A record
			"203.0.113.8":   {"evilbot.lohisoft.com"},
			"203.0.113.9":   {"bot.lohisoft.com"},
		},
		A: map[string][]string{
			"crawler1.bot.lohisoft.com":          {"79.139.58.98"},
			"crawler2.bot.lohisoft.com":          {"79.139.58.121"},
			"mail.lohisoft.com":                  {"79.139.58.10"},
			"evil-bot.lohisoft.com.attacker.net": {"203.0.113.5"},
			"evilbot.lohisoft.com":               {"203.0.113.8"},
			"bot.lohisoft.com":                   {"203.0.113.9"},
		},
	})
	r := ResolverFor(dns.Addr)
	ok := map[string]string{
		"79.139.58.98":        "crawler1.bot.lohisoft.com",
		"79.139.58.121":       "crawler2.bot.lohisoft.com",
		"::ffff:79.139.58.98": "crawler1.bot.lohisoft.com",
	}
	for ip, want := range ok {
		got, err := Verify(context.Background(), r, ip)
		if err != nil || got != want {
			t.Errorf("Verify(%s) = %q, %v; want %q", ip, got, err, want)
		}
	}
	bad := map[string]string{
		"79.139.58.10": "does not end in .bot.lohisoft.com",
		"203.0.113.5":  "does not end in .bot.lohisoft.com",
		"203.0.113.6":  "does not resolve back",
		"203.0.113.7":  "does not resolve back",
		"203.0.113.8":  "does not end in .bot.lohisoft.com",
		"203.0.113.9":  "does not end in .bot.lohisoft.com",
		"198.51.100.1": "no reverse DNS",
		"2001:db8::1":  "IPv6",
	}
	for ip, why := range bad {
		_, err := Verify(context.Background(), r, ip)
		var nv *NotVerifiedError
		if !errors.As(err, &nv) || !strings.Contains(nv.Reason, why) {
			t.Errorf("Verify(%s) err %v, want reason containing %q", ip, err, why)
		}
	}
	if _, err := Verify(context.Background(), r, "crawler1.bot.lohisoft.com"); !errors.Is(err, ErrBadIP) {
		t.Errorf("hostname input: %v", err)
	}
}
