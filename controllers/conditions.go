package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// verdict is what one reconcile concluded, before it is turned into
// conditions. Steps fill it; render turns it into conditions and a phase.
type verdict struct {
	// block is set when the target cannot be crawled without a change by a
	// person (Excluded, DuplicateSite, a bad URL): Ready=False, Stalled=True.
	block reason
	// wait is set when the target is queued (WaitingForCapacity,
	// NoEgressNode): Ready=False, Reconciling=True.
	wait reason
}

type reason struct {
	Reason  string
	Message string
}

func (r reason) set() bool { return r.Reason != "" }

// setCondition sets a condition and reports whether its status or reason
// changed, which is what deserves an Event.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, r reason) bool {
	old := meta.FindStatusCondition(*conds, typ)
	changed := old == nil || old.Status != status || old.Reason != r.Reason
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             r.Reason,
		Message:            r.Message,
		ObservedGeneration: generation,
	})
	return changed
}
