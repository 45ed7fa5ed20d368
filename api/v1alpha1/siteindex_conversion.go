package v1alpha1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/lohisoft/crawl-operator/api/v1beta1"
)

var _ conversion.Convertible = &SiteIndex{}

// ConvertTo converts this SiteIndex to the hub version, v1beta1, where
// the times are named fooTime.
func (src *SiteIndex) ConvertTo(hub conversion.Hub) error {
	dst := hub.(*v1beta1.SiteIndex)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	dst.Spec = v1beta1.SiteIndexSpec{Site: src.Spec.Site}
	st := &src.Status
	dst.Status = v1beta1.SiteIndexStatus{
		CrawlTime: st.CrawledAt.DeepCopy(),
		Stats: v1beta1.IndexStats{
			Pages:          st.Stats.Pages,
			Skipped:        st.Stats.Skipped,
			BytesReceived:  st.Stats.BytesReceived,
			PagesUnchanged: st.Stats.PagesUnchanged,
		},
		Run:            st.Run,
		Complete:       st.Complete,
		RetryAfterTime: st.RetryAfter.DeepCopy(),
		Refused:        st.Refused,
		EgressIP:       st.EgressIP,
		Site:           st.Site,
	}
	if st.Pages != nil {
		dst.Status.Pages = make([]v1beta1.IndexedPage, len(st.Pages))
		for i, p := range st.Pages {
			dst.Status.Pages[i] = v1beta1.IndexedPage{URL: p.URL, StatusCode: p.StatusCode, Title: p.Title, FetchTime: p.FetchedAt.DeepCopy()}
		}
	}
	if r := st.Robots; r != nil {
		dst.Status.Robots = &v1beta1.RobotsStatus{StatusCode: r.StatusCode, FetchTime: r.FetchedAt.DeepCopy()}
	}
	if p := st.Progress; p != nil {
		dst.Status.Progress = &v1beta1.CrawlProgress{Run: p.Run, Pages: p.Pages, UpdateTime: p.UpdatedAt.DeepCopy()}
	}
	return nil
}

// ConvertFrom converts the hub version, v1beta1, to this SiteIndex.
func (dst *SiteIndex) ConvertFrom(hub conversion.Hub) error {
	src := hub.(*v1beta1.SiteIndex)
	dst.ObjectMeta = *src.ObjectMeta.DeepCopy()
	dst.Spec = SiteIndexSpec{Site: src.Spec.Site}
	st := &src.Status
	dst.Status = SiteIndexStatus{
		CrawledAt: st.CrawlTime.DeepCopy(),
		Stats: IndexStats{
			Pages:          st.Stats.Pages,
			Skipped:        st.Stats.Skipped,
			BytesReceived:  st.Stats.BytesReceived,
			PagesUnchanged: st.Stats.PagesUnchanged,
		},
		Run:        st.Run,
		Complete:   st.Complete,
		RetryAfter: st.RetryAfterTime.DeepCopy(),
		Refused:    st.Refused,
		EgressIP:   st.EgressIP,
		Site:       st.Site,
	}
	if st.Pages != nil {
		dst.Status.Pages = make([]IndexedPage, len(st.Pages))
		for i, p := range st.Pages {
			dst.Status.Pages[i] = IndexedPage{URL: p.URL, StatusCode: p.StatusCode, Title: p.Title, FetchedAt: p.FetchTime.DeepCopy()}
		}
	}
	if r := st.Robots; r != nil {
		dst.Status.Robots = &RobotsStatus{StatusCode: r.StatusCode, FetchedAt: r.FetchTime.DeepCopy()}
	}
	if p := st.Progress; p != nil {
		dst.Status.Progress = &CrawlProgress{Run: p.Run, Pages: p.Pages, UpdatedAt: p.UpdateTime.DeepCopy()}
	}
	return nil
}
