// Package conversion serves the CRDs' conversion webhook from the manager:
// v1alpha1 ↔ v1beta1 of CrawlTarget, Exclusion and SiteIndex (the
// conversions are api/v1alpha1's; v1beta1 is the hub), on
// controller-runtime's webhook server, with a certificate each replica
// issues itself and keeps trusted in the CRDs' caBundle.
//
// Why a CA of its own per replica: the manager may read no Secret (its
// roles grant none), so the replicas cannot share a key through one, as
// cert-controller's rotator does; cert-manager would be a dependency of
// every install for three caBundles. A replica's CA lives in its memory
// and in a file in its Pod's emptyDir (a restarted container keeps it); its
// certificate goes into the caBundles next to the other replicas'. The
// CA is renewed at two thirds of its life, published first and served
// once trusted, and expired CAs are dropped from the caBundles by
// whichever replica sees them first. docs/api.md has the whole story.
package conversion

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/watchns"
)

// The injector reads and patches these CRDs only.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;patch,resourceNames=crawltargets.crawl.lohisoft.com;exclusions.crawl.lohisoft.com;siteindexes.crawl.lohisoft.com

// CRDs are the CRDs whose conversion the manager serves.
var CRDs = []string{"crawltargets.crawl.lohisoft.com", "exclusions.crawl.lohisoft.com", "siteindexes.crawl.lohisoft.com"}

// Defaults.
const (
	DefaultCALifetime = 7 * 24 * time.Hour
	DefaultCertDir    = "/tmp/k8s-webhook-server/serving-certs"
	defaultInterval   = time.Minute
	defaultRetry      = 5 * time.Second
	defaultSettle     = 10 * time.Second
)

// Options configure the webhook.
type Options struct {
	// Addr is host:port the webhook server listens on.
	Addr string
	// Hosts are the names (and IP addresses) the API server reaches the
	// webhook by: the webhook Service's DNS names.
	Hosts []string
	// CertDir keeps the replica's CA across container restarts.
	CertDir string
	// Name tells this replica's CA apart in a caBundle (the Pod's name).
	Name string
	// CALifetime is how long a CA is valid; it is renewed at two thirds.
	CALifetime time.Duration
	// Interval is how often the caBundles are checked once this replica
	// is trusted; Retry, until then and after an error; Settle, how long
	// every CRD trusts a new CA before it is served. Zero: the defaults
	// (1m, 5s, 10s).
	Interval, Retry, Settle time.Duration
	// Clock is the real clock when nil.
	Clock clock.PassiveClock
	// Namespaces confine the storage migration of CrawlTargets and
	// SiteIndexes (--watch-namespaces); empty: all.
	Namespaces watchns.Namespaces
}

// ServiceHosts are the names a Service's clients use for it.
func ServiceHosts(service, namespace string) []string {
	return []string{
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
		service + "." + namespace,
		service,
	}
}

// Webhook is the manager's conversion webhook, ready to be set up.
type Webhook struct {
	auth     *authority
	injector *injector
	migrator *migrator
	server   webhook.Server
}

// New makes this replica's CA (or reads it from o.CertDir) and the
// webhook server that serves its certificate; give Server to the manager
// (ctrl.Options.WebhookServer), then call Setup.
func New(o Options) (*Webhook, error) {
	host, portStr, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("--webhook-bind-address %q: %w", o.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("--webhook-bind-address %q names no port", o.Addr)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.CALifetime, DefaultCALifetime)
	def(&o.Interval, defaultInterval)
	def(&o.Retry, defaultRetry)
	def(&o.Settle, defaultSettle)
	if o.CertDir == "" {
		o.CertDir = DefaultCertDir
	}
	auth, err := newAuthority(o.CertDir, o.Hosts, o.Name, o.CALifetime, o.Settle, o.Clock.Now())
	if err != nil {
		return nil, err
	}
	w := &Webhook{auth: auth, migrator: &migrator{namespaces: o.Namespaces, retry: o.Retry}}
	w.injector = &injector{names: CRDs, auth: auth, clock: o.Clock, interval: o.Interval, retry: o.Retry}
	w.server = &server{Server: webhook.NewServer(webhook.Options{Host: host, Port: port, TLSOpts: []func(*tls.Config){func(c *tls.Config) {
		c.GetCertificate = auth.GetCertificate
		// HTTP/1.1 only, as the metrics endpoint: HTTP/2 Rapid Reset and
		// Stream Cancellation (CVE-2023-44487, CVE-2023-39325).
		c.NextProtos = []string{"http/1.1"}
	}}}), injector: w.injector}
	return w, nil
}

// server is the webhook server, which also runs the injector. The
// manager starts webhook servers before it waits for its caches, and so
// the injector: the caches' first lists need conversions of objects still
// stored as v1alpha1, which the API server sends only to a replica the
// Service finds Ready, which it is once the injector has made the CRDs
// trust it. As an ordinary runnable the injector would wait for the
// caches, and a manager whose CRDs hold v1alpha1 objects would never
// start.
type server struct {
	webhook.Server
	injector *injector
}

func (s *server) Start(ctx context.Context) error {
	if s.injector.reader != nil {
		go func() { _ = s.injector.Start(ctx) }()
	}
	return s.Server.Start(ctx)
}

// Server is the webhook server, for ctrl.Options.WebhookServer.
func (w *Webhook) Server() webhook.Server { return w.server }

// Setup registers the conversions of the three kinds (controller-runtime
// serves /convert for Hub and Convertible types), the injector on every
// replica, the readiness check "webhook", and the storage migration on
// the leader.
func (w *Webhook) Setup(mgr ctrl.Manager) error {
	if mgr.GetWebhookServer() != w.server {
		return errors.New("the manager's webhook server is not the conversion webhook's (ctrl.Options.WebhookServer)")
	}
	for kind, err := range map[string]error{
		"CrawlTarget": ctrl.NewWebhookManagedBy(mgr, &crawlv1.CrawlTarget{}).Complete(),
		"Exclusion":   ctrl.NewWebhookManagedBy(mgr, &crawlv1.Exclusion{}).Complete(),
		"SiteIndex":   ctrl.NewWebhookManagedBy(mgr, &crawlv1.SiteIndex{}).Complete(),
	} {
		if err != nil {
			return fmt.Errorf("conversion webhook for %s: %w", kind, err)
		}
	}
	w.injector.reader, w.injector.writer = mgr.GetAPIReader(), mgr.GetClient()
	w.injector.log = mgr.GetLogger().WithName("conversion-webhook")
	w.migrator.reader, w.migrator.writer = mgr.GetAPIReader(), mgr.GetClient()
	w.migrator.log = mgr.GetLogger().WithName("storage-migration")
	if err := mgr.Add(w.migrator); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("webhook", w.injector.Check)
}

// Flags are the manager's webhook flags.
type Flags struct {
	// Addr is --webhook-bind-address; "0" (the default) serves no webhook:
	// only a manager the API server can reach (in the cluster, behind the
	// Service the CRDs name) can serve one.
	Addr string
	// Service is --webhook-service, the Service the CRDs' conversion
	// names; the serving certificate is for its DNS names in the
	// manager's namespace.
	Service string
	// Hosts are --webhook-cert-hosts, more names or IP addresses for the
	// serving certificate.
	Hosts []string
	// CertDir is --webhook-cert-dir.
	CertDir string
	// Timing overrides the CA's lifetime and the injector's pace (tests).
	Timing Timing
}

// Timing is the part of Options tests shorten.
type Timing struct {
	CALifetime, Interval, Retry, Settle time.Duration
}

// DefaultFlags serve no webhook.
func DefaultFlags() Flags { return Flags{Addr: "0", CertDir: DefaultCertDir} }

// BindFlags binds the webhook flags to f.
func (f *Flags) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.Addr, "webhook-bind-address", f.Addr, "Address the CRDs' conversion webhook (v1alpha1 ↔ v1beta1) listens on, over HTTPS with a certificate of the replica's own CA, which the manager keeps in the CRDs' caBundle; 0 serves none.")
	fs.StringVar(&f.Service, "webhook-service", f.Service, "Name of the Service in --manager-namespace through which the API server reaches the conversion webhook: the serving certificate is for its DNS names.")
	fs.Func("webhook-cert-hosts", "Comma-separated further DNS names or IP addresses for the webhook's serving certificate.", func(s string) error {
		f.Hosts = nil
		for _, h := range strings.Split(s, ",") {
			if h = strings.TrimSpace(h); h != "" {
				f.Hosts = append(f.Hosts, h)
			}
		}
		return nil
	})
	fs.StringVar(&f.CertDir, "webhook-cert-dir", f.CertDir, "Directory where the replica keeps its webhook CA (certificate and key), so a restarted container keeps it: an emptyDir of the Pod.")
}

// Enabled says whether a webhook is served.
func (f Flags) Enabled() bool { return f.Addr != "" && f.Addr != "0" }

// Options are the webhook's options for a manager in namespace.
func (f Flags) Options(namespace string) (Options, error) {
	var hosts []string
	if f.Service != "" {
		if namespace == "" {
			return Options{}, errors.New("--webhook-service needs --manager-namespace, the namespace of the Service")
		}
		hosts = ServiceHosts(f.Service, namespace)
	}
	hosts = append(hosts, f.Hosts...)
	if len(hosts) == 0 {
		return Options{}, errors.New("--webhook-bind-address needs --webhook-service (or --webhook-cert-hosts): the names the API server reaches the webhook by")
	}
	name, _ := os.Hostname() // the Pod's name
	return Options{Addr: f.Addr, Hosts: hosts, CertDir: f.CertDir, Name: name,
		CALifetime: f.Timing.CALifetime, Interval: f.Timing.Interval, Retry: f.Timing.Retry, Settle: f.Timing.Settle}, nil
}
