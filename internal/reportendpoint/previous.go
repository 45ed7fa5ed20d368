package reportendpoint

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/store"
)

// kindPrevious labels the crawler's GET of the previous run's validators.
const kindPrevious = "previous"

// previous serves GET /v1/runs/{namespace}/{pod}: the pages the index holds
// for the run's target from its last crawl, with their validators
// (runreport.Previous), so the crawler can ask the site for what changed
// only. The request is authenticated as a report is, by the run's token
// (the Pod gets no other credential), and refused for the same reasons
// (wrong token, an ended or superseded run, an excluded or moved site).
// Pages are given only once the target has a complete crawl. The answer is
// at most runreport.MaxPages pages, each validator one the
// bot keeps (the store holds no other), so at most
// runreport.MaxPreviousBytes.
func (s *Server) previous(w http.ResponseWriter, r *http.Request) {
	s.init()
	prev, err := s.handlePrevious(r)
	if err != nil {
		s.refuse(w, r, kindPrevious, err, "could not read the previous run, retry")
		return
	}
	accepted(kindPrevious)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(prev)
}

func (s *Server) handlePrevious(r *http.Request) (runreport.Previous, error) {
	ctx := r.Context()
	pod, err := s.authenticate(ctx, r, r.PathValue("namespace"), r.PathValue("pod"))
	if err != nil {
		return runreport.Previous{}, err
	}
	ct, owner, err := s.target(ctx, pod)
	if err != nil {
		return runreport.Previous{}, err
	}
	prev := runreport.Previous{Site: owner.String(), Pages: []runreport.KnownPage{}}
	si := &crawlv1.SiteIndex{}
	if err := s.reader().Get(ctx, client.ObjectKeyFromObject(ct), si); err != nil && !apierrors.IsNotFound(err) {
		return prev, err
	}
	// Only a complete crawl's pages: during a first crawl (one retried
	// after progress was written, say) the backend holds a partial run,
	// which each progress report replaces, so an unchanged page could find
	// nothing to keep. That crawl is simply unconditional.
	if s.Index == nil || !si.Status.Complete {
		return prev, nil
	}
	prev.Site = owner.Crawled(si.Status.Site).String()
	known, err := s.Index.Validators(ctx, client.ObjectKeyFromObject(ct), prev.Site)
	if errors.Is(err, store.ErrUnavailable) {
		return prev, errBackendUnavailable
	}
	if err != nil {
		return prev, err
	}
	for _, v := range known[:min(len(known), runreport.MaxPages)] {
		prev.Pages = append(prev.Pages, runreport.KnownPage{URL: v.URL, ETag: v.ETag, LastModified: v.LastModified})
	}
	return prev, nil
}
