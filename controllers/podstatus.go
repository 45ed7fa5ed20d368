package controllers

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// podFinishedAt is when the crawler container ended, or fallback.
func podFinishedAt(pod *corev1.Pod, fallback time.Time) time.Time {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && !t.FinishedAt.IsZero() {
			return t.FinishedAt.Time
		}
	}
	return fallback
}

// podStartedAt is when the crawler container started, if it did.
func podStartedAt(pod *corev1.Pod) time.Time {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && !t.StartedAt.IsZero() {
			return t.StartedAt.Time
		}
	}
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return time.Time{}
}

// Causes of a failed crawl, as crawl_operator_crawl_failures_total labels
// them: a fixed set, so the series cannot grow with what Pods report.
const (
	causeOOMKilled        = "oom_killed"
	causeDeadlineExceeded = "deadline_exceeded"
	causePodDeleted       = "pod_deleted"
	causeNoResult         = "no_result"
	causeBadInput         = "bad_input"
	causeAddressRefused   = "address_refused"
	causeBackedOff        = "backed_off"
	causeError            = "error"
)

var failureCauses = []string{causeOOMKilled, causeDeadlineExceeded, causePodDeleted, causeNoResult,
	causeBadInput, causeAddressRefused, causeBackedOff, causeError}

// podFailureCause classifies a failed crawler Pod: the kubelet's OOMKilled
// on the container, its DeadlineExceeded on the Pod (activeDeadlineSeconds),
// else a plain error.
func podFailureCause(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			return causeOOMKilled
		}
	}
	if pod.Status.Reason == "DeadlineExceeded" {
		return causeDeadlineExceeded
	}
	return causeError
}

// podFailure explains a failed Pod in one line.
func podFailure(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg := fmt.Sprintf("exit code %d", t.ExitCode)
			if t.Reason != "" {
				msg += " (" + t.Reason + ")"
			}
			if t.Message != "" {
				msg += ": " + lastLine(t.Message)
			}
			return msg
		}
	}
	if pod.Status.Reason != "" {
		return pod.Status.Reason + ": " + pod.Status.Message
	}
	return "unknown reason"
}

// lastLine is the last line of a failed crawler's log (the termination
// message), cut to a condition message's length. Crawler Pods log JSON
// (--log-format=json): of a JSON record, it is the record's msg.
func lastLine(s string) string {
	const max = 200
	s = logTail(s)
	var record struct {
		Msg *string `json:"msg"`
	}
	if strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &record) == nil && record.Msg != nil {
		s = *record.Msg
	}
	if len(s) > max {
		// Cut on a character boundary: a condition message must stay
		// valid UTF-8, and a crawler's error may quote any text.
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// logTail is the last line of a log.
func logTail(s string) string {
	s = strings.TrimRight(s, "\n ")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// terminationMessage is the crawler container's termination message: the
// end of its log when it failed (FallbackToLogsOnError).
func terminationMessage(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return t.Message
		}
	}
	return ""
}

// crawlerExitCode is the exit code of a finished crawler container, or -1.
func crawlerExitCode(pod *corev1.Pod) int32 {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return t.ExitCode
		}
	}
	return -1
}
