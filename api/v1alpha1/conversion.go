package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// v1alpha1 is a spoke: it converts to and from the hub, v1beta1, and
// nothing else. The API server stores v1beta1, and an object read in
// v1alpha1 and written back must come back unchanged in v1beta1, even
// where v1alpha1 has no field for what v1beta1 says. That part travels in
// an annotation of the v1alpha1 object, which ConvertTo turns back into
// fields and removes: v1beta1 objects never carry it.

// LostAnnotationPrefix starts the annotations that carry, on a v1alpha1
// object, what its v1beta1 original says and v1alpha1 cannot. They are
// reserved for the conversion: their values on v1beta1 objects are
// dropped.
const LostAnnotationPrefix = "crawl.lohisoft.com/v1beta1-"

// putLost stores lost as JSON under key in meta's annotations, or removes
// key when there is nothing to keep.
func putLost(meta *metav1.ObjectMeta, key string, lost any, empty bool) {
	if empty {
		delete(meta.Annotations, key)
		if len(meta.Annotations) == 0 {
			meta.Annotations = nil
		}
		return
	}
	b, err := json.Marshal(lost)
	if err != nil {
		// Only plain structs of strings and numbers are stored.
		panic(err)
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = string(b)
}

// takeLost removes key from meta's annotations and decodes its value into
// lost. It reports whether there was a usable value: one that does not
// decode is dropped, since failing the conversion would make the object
// unreadable in every version.
func takeLost(meta *metav1.ObjectMeta, key string, lost any) bool {
	v, ok := meta.Annotations[key]
	if !ok {
		return false
	}
	delete(meta.Annotations, key)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	return json.Unmarshal([]byte(v), lost) == nil
}
