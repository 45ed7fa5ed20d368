// Package reportendpoint is the manager's results endpoint. Crawler Pods hold no
// Kubernetes credentials, so they hand their progress and final result to
// this endpoint, authenticated by their run's token; the endpoint checks the
// token against the run's Pod, bounds the payload, writes the run's pages
// to the index backend (every kept field) and then the SiteIndex status (a
// compact record per page).
package reportendpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/site"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// DefaultMaxBody bounds one report: the crawler trims every document to
// runreport.MaxDocumentBytes, so anything bigger is a broken or hostile crawler.
const DefaultMaxBody = runreport.MaxReportBytes

// The results endpoint reads crawler Pods through the manager's cache and
// again from the API server, the run's CrawlTarget and SiteIndex from the
// API server, and patches the SiteIndex status. Excluded reads Exclusions
// through the cache.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=crawltargets,verbs=get
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=siteindexes,verbs=get
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=siteindexes/status,verbs=patch
// +kubebuilder:rbac:groups=crawl.lohisoft.com,resources=exclusions,verbs=list;watch

// Server serves POST /v1/runs/{namespace}/{pod}.
type Server struct {
	Client client.Client
	// Reader reads the Pod, CrawlTarget and SiteIndex from the API server:
	// a stale cache must not decide which run is live and current, or what
	// it overwrites.
	Reader  client.Reader
	Clock   clock.PassiveClock
	MaxBody int64
	// Excluded reports whether a host is covered by an Exclusion; reports of
	// excluded sites are refused so nothing purged comes back.
	Excluded func(ctx context.Context, host string) (bool, error)
	// Index is where a run's pages go with every kept field. Without it
	// (tests of the endpoint alone) only the SiteIndex is written.
	Index Index
	// Namespaces are the namespaces the manager watches (empty: all). A
	// run in any other namespace is unknown: the manager's cache does not
	// hold it and its RBAC may not let it read there.
	Namespaces watchns.Namespaces
	// FailureRate and FailureBurst limit failed requests (malformed names,
	// missing or wrong tokens) per source address; beyond them a source
	// gets 429 with Retry-After. Zero takes DefaultFailureRate and
	// DefaultFailureBurst.
	FailureRate  float64
	FailureBurst int

	initOnce sync.Once
	limiter  *failureLimiter
	absent   negativeCache
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		rate, burst := s.FailureRate, s.FailureBurst
		if rate <= 0 {
			rate = DefaultFailureRate
		}
		if burst <= 0 {
			burst = DefaultFailureBurst
		}
		s.limiter = &failureLimiter{rate: rate, burst: float64(burst)}
	})
}

// Handler returns the endpoint's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+runreport.PathPattern, s.report)
	mux.HandleFunc("GET "+runreport.PathPattern, s.previous)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not found: POST or GET /v1/runs/{namespace}/{pod}")
	})
	return mux
}

// Index is the index backend as the endpoint writes it (the index's
// syncer, which orders these writes with Exclusion purges).
type Index interface {
	// WriteSite makes doc what the backend holds for the SiteIndex key
	// (store.SiteDoc.Source is set from key). It fails with
	// store.ErrExcluded when an Exclusion covers the site, and with
	// store.ErrUnavailable while the backend cannot be reached.
	WriteSite(ctx context.Context, key client.ObjectKey, doc store.SiteDoc) error
	// RemoveSite removes what the backend holds for the SiteIndex key.
	RemoveSite(ctx context.Context, key client.ObjectKey) error
	// Validators lists the pages the backend holds for the SiteIndex key
	// and its site, with their validators; store.ErrUnavailable while the
	// backend cannot be reached.
	Validators(ctx context.Context, key client.ObjectKey, site string) ([]store.Validators, error)
}

// backendRetryAfter is what a crawler is told to wait while the index
// backend is unreachable: the backend is checked every 5 s.
const backendRetryAfter = "5"

// errBackendUnavailable asks the crawler to come back when the backend
// answers again.
var errBackendUnavailable = &httpError{code: http.StatusServiceUnavailable, reason: "backend_unavailable",
	msg:    "the index backend is unavailable, retry later",
	header: http.Header{"Retry-After": {backendRetryAfter}}}

// httpError is an error with the status code the crawler should see.
type httpError struct {
	code int
	// reason is the refusal's metric label: a word, never the message,
	// which names Pods and sites.
	reason string
	msg    string
	header http.Header
	// failure marks a request that counts against its source's limit.
	failure bool
}

func (e *httpError) Error() string { return e.msg }

func fail(reason string, code int, format string, args ...any) error {
	return &httpError{code: code, reason: reason, msg: fmt.Sprintf(format, args...)}
}

func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	s.init()
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	pages, kind, err := s.handle(r, ns, name)
	if err != nil {
		s.refuse(w, r, kind, err, "could not store the report, retry")
		return
	}
	accepted(kind)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]int{"pages": pages})
}

// refuse answers a request the endpoint could not serve: an httpError as
// it says, any other error (logged) as a 503 saying retry, counted under
// kind, and against the source's failure limit when it marks a failure.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, kind string, err error, retry string) {
	var he *httpError
	if !errors.As(err, &he) {
		log.FromContext(r.Context()).Error(err, "results endpoint", "kind", kind, "namespace", r.PathValue("namespace"), "pod", r.PathValue("pod"))
		he = &httpError{code: http.StatusServiceUnavailable, reason: "error", msg: retry}
	}
	refused(kind, he.reason)
	if he.failure {
		s.limiter.failed(source(r), s.now())
	}
	for k, v := range he.header {
		w.Header()[k] = v
	}
	writeError(w, he.code, he.msg)
}

// handle stores one report and says which kind it was (kindUnknown when it
// was refused before its body was read).
func (s *Server) handle(r *http.Request, ns, name string) (int, string, error) {
	ctx := r.Context()
	pod, err := s.authenticate(ctx, r, ns, name)
	if err != nil {
		return 0, kindUnknown, err
	}
	rep, err := s.decode(r)
	if err != nil {
		return 0, kindUnknown, err
	}
	kind := kindProgress
	if rep.Final {
		kind = kindFinal
	}
	ct, owner, err := s.target(ctx, pod)
	if err != nil {
		return 0, kind, err
	}
	pages, err := s.store(ctx, pod, ct, owner, rep)
	return pages, kind, err
}

// authenticate ties the bearer token to exactly one live run: the Pod named
// in the URL, whose annotation holds the token's hash. Names no Pod can
// have get 400 before anything is looked up; runs are looked up in the
// manager's cache (lookupRun), and a source that keeps failing gets 429
// while a crawler with its run's token goes through.
func (s *Server) authenticate(ctx context.Context, r *http.Request, ns, name string) (*corev1.Pod, error) {
	if err := checkNames(ns, name); err != nil {
		return nil, counted(err)
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return nil, counted(fail(reasonMissingToken, http.StatusUnauthorized, "missing bearer token"))
	}
	key := client.ObjectKey{Namespace: ns, Name: name}
	wait := s.limiter.wait(source(r), s.now())
	pod, fromAPI, err := s.lookupRun(ctx, key, token, wait > 0)
	switch {
	case errors.Is(err, errUnknownRun) && wait > 0:
		return nil, tooMany(wait)
	case errors.Is(err, errUnknownRun):
		return nil, counted(err)
	case err != nil:
		return nil, err
	}
	if !fromAPI {
		// Read fresh: a Pod being deleted (an Exclusion, a user) must not
		// deliver the partial result its crawler sends on SIGTERM.
		pod = &corev1.Pod{}
		err := s.reader().Get(ctx, key, pod)
		if apierrors.IsNotFound(err) {
			return nil, fail("run_ended", http.StatusConflict, "run %s/%s has ended", ns, name)
		}
		if err != nil {
			return nil, err
		}
		if !crawlpod.IsCrawlerPod(pod) || !crawlpod.TokenMatches(pod, token) {
			return nil, counted(errUnknownRun)
		}
	}
	if !crawlpod.Active(pod) {
		return nil, fail("run_ended", http.StatusConflict, "run %s/%s has ended", ns, name)
	}
	return pod, nil
}

// counted marks err as a failure that counts against its source's limit.
func counted(err error) error {
	var he *httpError
	if errors.As(err, &he) {
		c := *he
		c.failure = true
		return &c
	}
	return err
}

func (s *Server) decode(r *http.Request) (runreport.Report, error) {
	var rep runreport.Report
	limit := s.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return rep, fail("bad_content_type", http.StatusUnsupportedMediaType, "content type must be application/json")
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, limit))
	if err := dec.Decode(&rep); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return rep, fail("too_large", http.StatusRequestEntityTooLarge, "report larger than %d bytes", limit)
		}
		return rep, fail("bad_json", http.StatusBadRequest, "invalid report JSON: %v", err)
	}
	return rep, nil
}

// target finds the CrawlTarget that owns the run and refuses reports for a
// site that has since been excluded or moved.
func (s *Server) target(ctx context.Context, pod *corev1.Pod) (*crawlv1.CrawlTarget, site.Site, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "CrawlTarget" {
		return nil, site.Site{}, fail("not_current_run", http.StatusForbidden, "run has no CrawlTarget")
	}
	ct := &crawlv1.CrawlTarget{}
	if err := s.reader().Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}, ct); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, site.Site{}, fail("target_gone", http.StatusConflict, "CrawlTarget %s is gone", ref.Name)
		}
		return nil, site.Site{}, err
	}
	owner, err := site.Parse(ct.Spec.URL)
	if ct.UID != ref.UID || err != nil || owner.String() != pod.Annotations[crawlpod.AnnotationSite] {
		return nil, site.Site{}, fail("target_changed", http.StatusConflict, "CrawlTarget %s no longer matches this run", ref.Name)
	}
	// Only the run the operator started and recorded may write: a Pod that
	// merely looks like a crawler (anyone who may create Pods could make
	// one) is not it.
	if pod.Name != crawlpod.PodName(ct.Name, ct.Status.Runs) {
		return nil, site.Site{}, fail("not_current_run", http.StatusForbidden, "pod %s is not the current run of CrawlTarget %s", pod.Name, ct.Name)
	}
	if s.Excluded != nil {
		excluded, err := s.Excluded(ctx, owner.Host)
		if err != nil {
			return nil, site.Site{}, err
		}
		if excluded {
			return nil, site.Site{}, fail("excluded", http.StatusConflict, "site %s is excluded", owner)
		}
	}
	return ct, owner, nil
}

// store writes an accepted report: first its pages to the index backend,
// which is where search reads them, then the SiteIndex's compact status.
// In that order a failure leaves the backend at most ahead of the
// SiteIndex, never behind it, and the crawler's retry writes both again.
func (s *Server) store(ctx context.Context, pod *corev1.Pod, ct *crawlv1.CrawlTarget, owner site.Site, rep runreport.Report) (int, error) {
	si := &crawlv1.SiteIndex{}
	if err := s.reader().Get(ctx, client.ObjectKeyFromObject(ct), si); err != nil {
		return 0, err
	}
	if !metav1.IsControlledBy(si, ct) {
		return 0, fail("not_owned", http.StatusConflict, "SiteIndex %s is not owned by the CrawlTarget", si.Name)
	}
	if si.Status.Run == pod.Name && si.Status.Complete {
		if rep.Final {
			// A repeat of the stored final result, whose answer was lost.
			return int(si.Status.Stats.Pages), nil
		}
		return 0, fail("already_final", http.StatusConflict, "run %s already delivered its final result", pod.Name)
	}
	now := s.now()
	res := Convert(rep, owner, pod.Name, int(ct.Spec.MaxPagesOrDefault()), now, si.Status.Pages)
	res.Status.EgressIP = verifiedEgress(rep, pod)
	key := client.ObjectKeyFromObject(si)
	if Replaces(si.Status, res.Status) {
		if err := s.writeIndex(ctx, key, res.Doc); err != nil {
			return 0, err
		}
	}
	before := si.DeepCopy()
	si.Status = Merge(si.Status, res.Status, now)
	// The optimistic lock keeps a late request from overwriting a newer
	// write; the crawler retries a 503.
	err := s.Client.Status().Patch(ctx, si, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) && s.Index != nil {
		// The target went meanwhile; its rows must not outlive it.
		if err := s.Index.RemoveSite(ctx, key); err != nil {
			return 0, err
		}
		return 0, fail("target_gone", http.StatusConflict, "SiteIndex %s is gone", key.Name)
	}
	if apierrors.IsConflict(err) {
		return 0, fail("conflict", http.StatusServiceUnavailable, "the SiteIndex changed meanwhile, retry")
	}
	if err != nil {
		return 0, fmt.Errorf("write SiteIndex status: %w", err)
	}
	return len(si.Status.Pages), nil
}

// writeIndex writes a run's pages to the index backend and says what a
// crawler should do when that fails: an excluded site is refused for
// good, an unreachable backend asks it to retry later (its final report
// is retried for minutes; nothing indexed before is touched).
func (s *Server) writeIndex(ctx context.Context, key client.ObjectKey, doc store.SiteDoc) error {
	if s.Index == nil {
		return nil
	}
	err := s.Index.WriteSite(ctx, key, doc)
	switch {
	case errors.Is(err, store.ErrExcluded):
		return fail("excluded", http.StatusConflict, "site %s is excluded", doc.Site)
	case errors.Is(err, store.ErrUnavailable):
		return errBackendUnavailable
	case err != nil:
		return fmt.Errorf("write the index backend: %w", err)
	}
	return nil
}

func (s *Server) reader() client.Reader {
	if s.Reader != nil {
		return s.Reader
	}
	return s.Client
}

func (s *Server) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock.Now()
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
