package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

// The real API server must refuse bad manifests at apply time, with a
// message that names the field.
func TestAPIServerRejectsBadCrawlTargets(t *testing.T) {
	ns := newNamespace(t)
	dur := func(s string) *metav1.Duration {
		d, _ := time.ParseDuration(s)
		return &metav1.Duration{Duration: d}
	}
	tests := []struct {
		name  string
		spec  crawlv1.CrawlTargetSpec
		field string
		msg   string
	}{
		{"maxPages above the promise", crawlv1.CrawlTargetSpec{URL: "https://example.com/", MaxPages: ptr.To[int32](21)}, "spec.maxPages", "less than or equal to 20"},
		{"negative maxPages", crawlv1.CrawlTargetSpec{URL: "https://example.com/", MaxPages: ptr.To[int32](-1)}, "spec.maxPages", "greater than or equal to 1"},
		{"ftp scheme", crawlv1.CrawlTargetSpec{URL: "ftp://example.com/"}, "spec.url", "http or https"},
		{"IPv6 literal", crawlv1.CrawlTargetSpec{URL: "http://[::1]/"}, "spec.url", "IPv6"},
		{"IPv6 literal with port", crawlv1.CrawlTargetSpec{URL: "https://[2001:db8::1]:8443/x"}, "spec.url", "IPv6"},
		{"not a URL", crawlv1.CrawlTargetSpec{URL: "example.com"}, "spec.url", "absolute URL"},
		{"credentials", crawlv1.CrawlTargetSpec{URL: "https://user:secret@example.com/"}, "spec.url", "credentials"},
		{"bad host", crawlv1.CrawlTargetSpec{URL: "https://exa_mple!.com/"}, "spec.url", ""},
		{"empty url", crawlv1.CrawlTargetSpec{URL: ""}, "spec.url", ""},
		// The crawler refuses these ports ("bad port"); without the rule the
		// target would fail and be retried for ever.
		{"port 0", crawlv1.CrawlTargetSpec{URL: "http://example.com:0/"}, "spec.url", "port must be a number from 1 to 65535"},
		{"port 65536", crawlv1.CrawlTargetSpec{URL: "http://example.com:65536/"}, "spec.url", "port must be a number from 1 to 65535"},
		{"port 99999", crawlv1.CrawlTargetSpec{URL: "https://93.184.216.34:99999/x"}, "spec.url", "port must be a number from 1 to 65535"},
		{"interval too short", crawlv1.CrawlTargetSpec{URL: "https://example.com/", Interval: dur("5m")}, "spec.interval", "at least 1h"},
		{"delay too long", crawlv1.CrawlTargetSpec{URL: "https://example.com/", Delay: dur("2m")}, "spec.delay", "at most 60s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-"}, Spec: tt.spec}
			err := k8s.Create(context.Background(), ct)
			if err == nil {
				t.Fatalf("API server accepted %+v", tt.spec)
			}
			if !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not name %s with %q", err, tt.field, tt.msg)
			}
		})
	}
}

func TestAPIServerAcceptsAndDefaultsCrawlTargets(t *testing.T) {
	ns := newNamespace(t)
	for i, url := range []string{"https://example.com/", "http://93.184.216.34:8080/start?x=1", "HTTPS://Sub.Example.ORG./",
		"http://example.com:1/", "https://example.com:65535/"} {
		ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok-" + string(rune('a'+i))},
			Spec: crawlv1.CrawlTargetSpec{URL: url}}
		if err := k8s.Create(context.Background(), ct); err != nil {
			t.Fatalf("rejected %s: %v", url, err)
		}
		got := &crawlv1.CrawlTarget{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ct), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.MaxPages == nil || *got.Spec.MaxPages != 20 || got.Spec.Interval.Duration != 168*time.Hour || got.Spec.Delay.Duration != time.Second {
			t.Errorf("defaults not applied: %+v", got.Spec)
		}
	}
}

func TestAPIServerRejectsBadExclusions(t *testing.T) {
	tests := []struct {
		name  string
		spec  crawlv1.ExclusionSpec
		field string
	}{
		{"scheme in domain", crawlv1.ExclusionSpec{Domain: "https://example.com", Description: "owner asked"}, "spec.domain"},
		{"upper case", crawlv1.ExclusionSpec{Domain: "Example.com", Description: "owner asked"}, "spec.domain"},
		{"wildcard", crawlv1.ExclusionSpec{Domain: "*.example.com", Description: "owner asked"}, "spec.domain"},
		{"missing description", crawlv1.ExclusionSpec{Domain: "example.com"}, "spec.description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := &crawlv1.Exclusion{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: tt.spec}
			err := k8s.Create(context.Background(), ex)
			if err == nil {
				t.Fatalf("API server accepted %+v", tt.spec)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %s", err, tt.field)
			}
		})
	}
}
