package fcrdns

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lohisoft/crawl-operator/crawler/testutil/dnstest"
	"github.com/lohisoft/crawl-operator/crawler/verify"
	"github.com/lohisoft/crawl-operator/internal/egress"
)

// zone is the loopback DNS the checks ask; no test leaves this machine.
var zone = dnstest.Zone{
	PTR: map[string][]string{
		"79.139.58.98":  {"crawler1.bot.lohisoft.com"},
		"203.0.113.10":  {"crawler.lohisoft.com"},      // bare company domain
		"203.0.113.11":  {"crawler3.bot.lohisoft.com"}, // resolves elsewhere
		"203.0.113.13":  {"bot.lohisoft.com"},          // the suffix itself
		"198.51.100.14": {"crawler4.bot.lohisoft.com"},
	},
	A: map[string][]string{
		"crawler1.bot.lohisoft.com": {"79.139.58.98"},
		"crawler.lohisoft.com":      {"203.0.113.10"},
		"crawler3.bot.lohisoft.com": {"203.0.113.99"},
		"bot.lohisoft.com":          {"203.0.113.13"},
		"crawler4.bot.lohisoft.com": {"198.51.100.14"},
	},
}

func egressNode(name, ip string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{egress.DefaultLabel: egress.DefaultValue}}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeExternalIP, Address: ip}}
	}
	return n
}

type fixture struct {
	checker  *Checker
	client   client.Client
	recorder *events.FakeRecorder
	now      time.Time
}

func newFixture(t *testing.T, nodes ...client.Object) *fixture {
	t.Helper()
	dns := dnstest.Start(t, zone)
	f := &fixture{
		client:   fake.NewClientBuilder().WithObjects(nodes...).Build(),
		recorder: events.NewFakeRecorder(100),
		now:      time.Date(2026, 8, 23, 10, 0, 0, 0, time.UTC),
	}
	f.checker = &Checker{
		Client: f.client, Resolver: verify.ResolverFor(dns.Addr), Suffix: ".bot.lohisoft.com",
		Interval: 5 * time.Minute, Timeout: 2 * time.Second, Recorder: f.recorder,
		Now: func() time.Time { return f.now },
	}
	return f
}

func (f *fixture) check(t *testing.T, node string) ctrl.Result {
	t.Helper()
	res, err := f.checker.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: node}})
	if err != nil {
		t.Fatalf("check %s: %v", node, err)
	}
	return res
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		node, ip     string
		wantHealthy  bool
		wantHostname string
		wantReason   string // in the Warning Event
	}{
		{"pass", "79.139.58.98", true, "crawler1.bot.lohisoft.com", ""},
		{"bare-domain", "203.0.113.10", false, "", "does not end in .bot.lohisoft.com"},
		{"forward-mismatch", "203.0.113.11", false, "", "does not resolve back to 203.0.113.11"},
		{"suffix-itself", "203.0.113.13", false, "", "does not end in .bot.lohisoft.com"},
		{"nxdomain", "203.0.113.12", false, "", "no reverse DNS (PTR) name"},
		{"no-external-ip", "", false, "", "no IPv4 ExternalIP"},
		{"ipv6-only", "2001:db8::1", false, "", "no IPv4 ExternalIP"},
	}
	for _, tc := range tests {
		t.Run(tc.node, func(t *testing.T) {
			f := newFixture(t, egressNode(tc.node, tc.ip))
			res := f.check(t, tc.node)
			if got := passed(f.checker, tc.node); got != tc.wantHealthy {
				t.Errorf("Healthy = %v, want %v", got, tc.wantHealthy)
			}
			r, _ := f.checker.Lookup(tc.node)
			if r.Hostname != tc.wantHostname || r.OK != tc.wantHealthy || !r.CheckedAt.Equal(f.now) {
				t.Errorf("result = %+v", r)
			}
			gauge := value(t, verifiedGauge.WithLabelValues(tc.node))
			evs := f.events()
			if tc.wantHealthy {
				if gauge != 1 || len(evs) != 0 || res.RequeueAfter != 5*time.Minute {
					t.Errorf("passing node: gauge %v, events %q, next check in %v", gauge, evs, res.RequeueAfter)
				}
				return
			}
			if gauge != 0 {
				t.Errorf("gauge = %v, want 0", gauge)
			}
			if value(t, failuresTotal.WithLabelValues(tc.node)) != 1 {
				t.Errorf("failures counter = %v, want 1", value(t, failuresTotal.WithLabelValues(tc.node)))
			}
			if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+ReasonFailed+" ") || !strings.Contains(evs[0], tc.wantReason) {
				t.Errorf("events = %q, want one Warning %s saying %q", evs, ReasonFailed, tc.wantReason)
			}
			if res.RequeueAfter != retryFailed {
				t.Errorf("failing node checked again in %v, want %v", res.RequeueAfter, retryFailed)
			}
		})
	}
}

func TestWarningsAreNotRepeatedEveryRetry(t *testing.T) {
	f := newFixture(t, egressNode("n", "203.0.113.12"))
	f.check(t, "n")
	f.now = f.now.Add(retryFailed)
	f.check(t, "n")
	if evs := f.events(); len(evs) != 1 {
		t.Errorf("two failed checks a minute apart gave events %q, want one", evs)
	}
	f.now = f.now.Add(5 * time.Minute)
	f.check(t, "n")
	if evs := f.events(); len(evs) != 1 {
		t.Errorf("a failure an interval later gave events %q, want one more", evs)
	}
}

func TestRecoveryAndAddressChange(t *testing.T) {
	node := egressNode("n", "203.0.113.12")
	f := newFixture(t, node)
	f.check(t, "n")
	f.events()
	// The node gets an address with correct DNS.
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "198.51.100.14"}}
	if err := f.client.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	f.check(t, "n")
	if !passed(f.checker, "n") {
		t.Fatal("node with correct DNS is not healthy")
	}
	if evs := f.events(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal "+ReasonVerified) {
		t.Errorf("events = %q, want one Normal %s", evs, ReasonVerified)
	}
	if got := f.checker.Results(); len(got) != 1 || got[0].Hostname != "crawler4.bot.lohisoft.com" || got[0].IP != "198.51.100.14" {
		t.Errorf("Results = %+v", got)
	}
}

func TestNodesLeavingAreForgotten(t *testing.T) {
	node := egressNode("n", "79.139.58.98")
	f := newFixture(t, node)
	f.check(t, "n")
	if !passed(f.checker, "n") {
		t.Fatal("not healthy")
	}
	// Unlabelled: no longer an egress node.
	node.Labels = nil
	if err := f.client.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	f.check(t, "n")
	if passed(f.checker, "n") || len(f.checker.Results()) != 0 {
		t.Errorf("unlabelled node still known: %+v", f.checker.Results())
	}
	if series(t, verifiedGauge, "n") {
		t.Error("the gauge still has a series for the node")
	}
	if passed(f.checker, "never-seen") {
		t.Error("a node never checked is healthy")
	}
}

func TestFollowersRecordNoEvents(t *testing.T) {
	f := newFixture(t, egressNode("n", "203.0.113.12"))
	f.checker.Elected = make(chan struct{}) // never elected
	f.check(t, "n")
	if evs := f.events(); len(evs) != 0 {
		t.Errorf("a follower recorded %q", evs)
	}
	if passed(f.checker, "n") {
		t.Error("failing node healthy on a follower")
	}
}

// value reads a gauge or counter.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
}

// series reports whether a collector has a series for node.
func series(t *testing.T, c prometheus.Collector, node string) bool {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.Label {
			if l.GetName() == "node" && l.GetValue() == node {
				return true
			}
		}
	}
	return false
}

// passed reports whether node passed its last check, whatever its address.
func passed(c *Checker, node string) bool {
	r, _ := c.Lookup(node)
	return r.OK
}
