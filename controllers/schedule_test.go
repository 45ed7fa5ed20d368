package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
)

func TestRetryBackoff(t *testing.T) {
	tests := []struct {
		failures int32
		interval time.Duration
		want     time.Duration
	}{
		{0, 168 * time.Hour, 0},
		{1, 168 * time.Hour, time.Minute},
		{2, 168 * time.Hour, 2 * time.Minute},
		{5, 168 * time.Hour, 16 * time.Minute},
		{30, 168 * time.Hour, 6 * time.Hour},
		{1000, 168 * time.Hour, 6 * time.Hour},
		{20, 2 * time.Hour, 2 * time.Hour},
	}
	for _, tt := range tests {
		if got := retryBackoff(tt.failures, tt.interval); got != tt.want {
			t.Errorf("retryBackoff(%d, %s) = %s, want %s", tt.failures, tt.interval, got, tt.want)
		}
	}
}

func TestCrawlDue(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	hour := &metav1.Duration{Duration: time.Hour}
	tests := []struct {
		name     string
		ct       crawlv1.CrawlTarget
		wantDue  bool
		wantNext time.Time
	}{
		{
			name:    "never crawled",
			wantDue: true,
		},
		{
			name:     "crawled recently",
			ct:       crawlv1.CrawlTarget{Spec: crawlv1.CrawlTargetSpec{Interval: hour}, Status: crawlv1.CrawlTargetStatus{LastCrawlTime: at(-30 * time.Minute)}},
			wantNext: now.Add(30 * time.Minute),
		},
		{
			name:     "interval elapsed",
			ct:       crawlv1.CrawlTarget{Spec: crawlv1.CrawlTargetSpec{Interval: hour}, Status: crawlv1.CrawlTargetStatus{LastCrawlTime: at(-2 * time.Hour)}},
			wantDue:  true,
			wantNext: now.Add(-time.Hour),
		},
		{
			name:     "default interval is a week",
			ct:       crawlv1.CrawlTarget{Status: crawlv1.CrawlTargetStatus{LastCrawlTime: at(-24 * time.Hour)}},
			wantNext: now.Add(6 * 24 * time.Hour),
		},
		{
			name: "failure backs off",
			ct: crawlv1.CrawlTarget{Spec: crawlv1.CrawlTargetSpec{Interval: hour}, Status: crawlv1.CrawlTargetStatus{
				LastCrawlTime: at(-2 * time.Hour), ConsecutiveFailures: 3, LastFailureTime: at(-time.Minute)}},
			wantNext: now.Add(3 * time.Minute),
		},
		{
			name: "retry-after wins over the schedule",
			ct: crawlv1.CrawlTarget{Spec: crawlv1.CrawlTargetSpec{Interval: hour}, Status: crawlv1.CrawlTargetStatus{
				LastCrawlTime: at(-2 * time.Hour), RetryAfterTime: at(10 * time.Minute)}},
			wantNext: now.Add(10 * time.Minute),
		},
		{
			name: "requested crawl ignores the schedule",
			ct: crawlv1.CrawlTarget{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{crawlv1.RequestedAtAnnotation: "2"}},
				Spec:       crawlv1.CrawlTargetSpec{Interval: hour},
				Status:     crawlv1.CrawlTargetStatus{LastCrawlTime: at(-time.Minute), LastHandledRequestedAt: "1"}},
			wantDue: true,
		},
		{
			name: "handled request does not repeat",
			ct: crawlv1.CrawlTarget{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{crawlv1.RequestedAtAnnotation: "1"}},
				Spec:       crawlv1.CrawlTargetSpec{Interval: hour},
				Status:     crawlv1.CrawlTargetStatus{LastCrawlTime: at(-time.Minute), LastHandledRequestedAt: "1"}},
			wantNext: now.Add(59 * time.Minute),
		},
		{
			name: "requested crawl still honours retry-after",
			ct: crawlv1.CrawlTarget{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{crawlv1.RequestedAtAnnotation: "now"}},
				Status:     crawlv1.CrawlTargetStatus{RetryAfterTime: at(5 * time.Minute)}},
			wantNext: now.Add(5 * time.Minute),
		},
		{
			name: "suspended",
			ct: crawlv1.CrawlTarget{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{crawlv1.RequestedAtAnnotation: "now"}},
				Spec:       crawlv1.CrawlTargetSpec{CrawlPolicy: crawlv1.CrawlPolicySuspended}},
		},
		{
			name: "a policy this manager does not know crawls nothing",
			ct: crawlv1.CrawlTarget{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{crawlv1.RequestedAtAnnotation: "now"}},
				Spec:       crawlv1.CrawlTargetSpec{CrawlPolicy: "Hourly"}},
		},
		{
			name: "on request: never crawled, not requested",
			ct:   crawlv1.CrawlTarget{Spec: crawlv1.CrawlTargetSpec{CrawlPolicy: crawlv1.CrawlPolicyOnRequest}},
		},
		{
			name: "on request: no schedule after a crawl",
			ct: crawlv1.CrawlTarget{Spec: crawlv1.CrawlTargetSpec{Interval: hour, CrawlPolicy: crawlv1.CrawlPolicyOnRequest},
				Status: crawlv1.CrawlTargetStatus{LastCrawlTime: at(-2 * time.Hour)}},
		},
		{
			name: "on request: requested",
			ct: crawlv1.CrawlTarget{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{crawlv1.RequestedAtAnnotation: "2"}},
				Spec:       crawlv1.CrawlTargetSpec{CrawlPolicy: crawlv1.CrawlPolicyOnRequest},
				Status:     crawlv1.CrawlTargetStatus{LastCrawlTime: at(-time.Minute), LastHandledRequestedAt: "1"}},
			wantDue: true,
		},
		{
			name: "on request: a failed requested crawl backs off and is retried",
			ct: crawlv1.CrawlTarget{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{crawlv1.RequestedAtAnnotation: "1"}},
				Spec:       crawlv1.CrawlTargetSpec{Interval: hour, CrawlPolicy: crawlv1.CrawlPolicyOnRequest},
				Status: crawlv1.CrawlTargetStatus{LastHandledRequestedAt: "1",
					ConsecutiveFailures: 2, LastFailureTime: at(-time.Minute)}},
			wantNext: now.Add(time.Minute),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, next := crawlDue(&tt.ct, now)
			if due != tt.wantDue || !next.Equal(tt.wantNext) {
				t.Errorf("CrawlDue = %v, %s; want %v, %s", due, next, tt.wantDue, tt.wantNext)
			}
		})
	}
}

func TestSiteOwner(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	deleting := metav1.NewTime(t1.Time)
	mk := func(ns, name string, created metav1.Time, runs int64) crawlv1.CrawlTarget {
		return crawlv1.CrawlTarget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created},
			Status:     crawlv1.CrawlTargetStatus{Runs: runs},
		}
	}
	gone := mk("a", "gone", t0, 3)
	gone.DeletionTimestamp = &deleting
	tests := []struct {
		name    string
		targets []crawlv1.CrawlTarget
		want    string
	}{
		{"none", nil, ""},
		{"oldest wins", []crawlv1.CrawlTarget{mk("b", "new", t1, 0), mk("z", "old", t0, 0)}, "z/old"},
		{"same second: the one that crawled wins", []crawlv1.CrawlTarget{mk("a", "fresh", t0, 0), mk("z", "crawling", t0, 1)}, "z/crawling"},
		{"same second, neither crawled: by name", []crawlv1.CrawlTarget{mk("b", "x", t0, 0), mk("a", "y", t0, 0)}, "a/y"},
		{"deleting owner is skipped", []crawlv1.CrawlTarget{gone, mk("b", "next", t1, 0)}, "b/next"},
	}
	for _, tt := range tests {
		got := siteOwner(tt.targets)
		name := ""
		if got != nil {
			name = got.Namespace + "/" + got.Name
		}
		if name != tt.want {
			t.Errorf("%s: owner = %q, want %q", tt.name, name, tt.want)
		}
	}
}
