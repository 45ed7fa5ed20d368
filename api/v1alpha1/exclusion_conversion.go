package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/lohisoft/crawl-operator/api/v1beta1"
)

var _ conversion.Convertible = &Exclusion{}

// ConvertTo converts this Exclusion to the hub version, v1beta1.
// spec.reason is v1beta1's spec.description: the same text, under the
// name the API conventions leave free (a reason is a CamelCase word).
func (src *Exclusion) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*v1beta1.Exclusion)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	dst.Spec = v1beta1.ExclusionSpec{
		Domain:      src.Spec.Domain,
		Description: src.Spec.Reason,
		RequestedBy: src.Spec.RequestedBy,
	}
	dst.Status = v1beta1.ExclusionStatus{
		ObservedGeneration: src.Status.ObservedGeneration,
		Conditions:         copyConditions(src.Status.Conditions),
		MatchedTargets:     src.Status.MatchedTargets,
		PurgedPages:        src.Status.PurgedPages,
	}
	return nil
}

// ConvertFrom converts the hub version, v1beta1, to this Exclusion.
func (dst *Exclusion) ConvertFrom(hub conversion.Hub) error {
	src := hub.(*v1beta1.Exclusion)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	dst.Spec = ExclusionSpec{
		Domain:      src.Spec.Domain,
		Reason:      src.Spec.Description,
		RequestedBy: src.Spec.RequestedBy,
	}
	dst.Status = ExclusionStatus{
		ObservedGeneration: src.Status.ObservedGeneration,
		Conditions:         copyConditions(src.Status.Conditions),
		MatchedTargets:     src.Status.MatchedTargets,
		PurgedPages:        src.Status.PurgedPages,
	}
	return nil
}
