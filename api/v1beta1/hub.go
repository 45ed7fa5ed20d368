package v1beta1

// v1beta1 is the hub: every other version converts to and from it
// (sigs.k8s.io/controller-runtime/pkg/conversion), so adding a version
// means one pair of conversions, not one per existing version.

// Hub marks CrawlTarget as the conversion hub.
func (*CrawlTarget) Hub() {}

// Hub marks Exclusion as the conversion hub.
func (*Exclusion) Hub() {}

// Hub marks SiteIndex as the conversion hub.
func (*SiteIndex) Hub() {}
