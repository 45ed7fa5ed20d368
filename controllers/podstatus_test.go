package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// The cause a failed crawl is counted under comes from what the kubelet
// wrote, never from the crawler's own words (its log line could say
// "OOMKilled" and must not make an alert fire).
func TestPodFailureCause(t *testing.T) {
	terminated := func(reason, message string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "crawler", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: reason, Message: message}}}
	}
	for _, tc := range []struct {
		name string
		pod  corev1.PodStatus
		want string
	}{
		{"container OOMKilled", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("OOMKilled", "")}}, causeOOMKilled},
		{"Pod past activeDeadlineSeconds", corev1.PodStatus{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}, causeDeadlineExceeded},
		{"both: the container's OOM comes first", corev1.PodStatus{Reason: "DeadlineExceeded", ContainerStatuses: []corev1.ContainerStatus{terminated("OOMKilled", "")}}, causeOOMKilled},
		{"plain error exit", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("Error", "boom")}}, causeError},
		{"the crawler's log says OOMKilled", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{terminated("Error", "OOMKilled")}}, causeError},
		{"Pod reason with another word", corev1.PodStatus{Reason: "Evicted"}, causeError},
		{"nothing at all", corev1.PodStatus{}, causeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podFailureCause(&corev1.Pod{Status: tc.pod}); got != tc.want {
				t.Errorf("cause = %q, want %q", got, tc.want)
			}
		})
	}
}

// The crawler's words reach conditions and Events from the last line of
// its log, whichever format it logs in.
func TestLastLine(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tt := range []struct{ log, want string }{
		{"crawler: bad input: bad port\n", "crawler: bad input: bad port"},
		{"level=INFO msg=start\ncrawler: final report: 403\n\n", "crawler: final report: 403"},
		{`{"time":"2026-12-01T10:00:00Z","level":"INFO","msg":"robots.txt"}` + "\n" +
			`{"time":"2026-12-01T10:00:01Z","level":"ERROR","msg":"bad input: invalid URL \"http://a.example:0/\": bad port"}` + "\n",
			`bad input: invalid URL "http://a.example:0/": bad port`},
		// Not a record: shown as it is.
		{`{"level":"ERROR"}`, `{"level":"ERROR"}`},
		{"{not json", "{not json"},
		{`{"msg":"` + long + `"}`, long[:200] + "…"},
		// 199 bytes, then a 2-byte character across the 200-byte cut.
		{strings.Repeat("x", 199) + strings.Repeat("é", 10), strings.Repeat("x", 199) + "…"},
		{strings.Repeat("ж", 150), strings.Repeat("ж", 100) + "…"},
	} {
		got := lastLine(tt.log)
		if !utf8.ValidString(got) {
			t.Errorf("lastLine(%q) = %q: not valid UTF-8", tt.log, got)
		}
		if got != tt.want {
			t.Errorf("lastLine(%q) = %q, want %q", tt.log, got, tt.want)
		}
	}
}

// The observed egress address comes from a field of the crawler's last log
// line, and only as an IPv4 address: a crawler cannot put prose, another
// line's claim or an IPv6 address into an Event.
func TestObservedEgress(t *testing.T) {
	key := runreport.LogObservedEgressIP
	for _, tt := range []struct{ log, want string }{
		{`{"level":"ERROR","msg":"x","` + key + `":"203.0.113.7"}` + "\n" + `{"level":"INFO","msg":"later"}`, ""},
		{`{"level":"ERROR","msg":"x","` + key + `":"2001:db8::1"}`, ""},
		{`{"level":"ERROR","msg":"x","` + key + `":"203.0.113.7 and more"}`, ""},
		{`{"level":"ERROR","msg":"x","` + key + `":7}`, ""},
		{`{"level":"ERROR","msg":"x"}`, ""},
		{`crawler: egress address mismatch: sites would see 203.0.113.7`, ""},
		{"", ""},
		{`{"level":"INFO","msg":"start"}` + "\n" + `{"level":"ERROR","msg":"x","` + key + `":"203.0.113.7"}` + "\n", "203.0.113.7"},
	} {
		pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: runreport.ExitEgressUnverified, Message: tt.log}}}}}}
		if got := observedEgress(pod); got != tt.want {
			t.Errorf("observedEgress(%q) = %q, want %q", tt.log, got, tt.want)
		}
	}
}
