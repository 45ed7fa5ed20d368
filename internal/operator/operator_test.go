package operator

import (
	"flag"
	"io"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// parse reads args with the manager's own flag set.
func parse(t *testing.T, args ...string) Options {
	t.Helper()
	o := Defaults()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// The crawler NetworkPolicy takes the results port from
// --results-bind-address and the egress IPs from --expected-egress-ips, so
// the flags that own them are the only place to set them.
func TestCrawlerNetworkPolicyTakesWhatOtherFlagsOwn(t *testing.T) {
	o := parse(t, "--manager-namespace=crawl-system", "--results-bind-address=:9443", "--expected-egress-ips=79.139.58.98,79.139.58.121")
	np, err := o.CrawlerNetworkPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if np.ResultsPort != 9443 || strings.Join(np.EgressIPs.List(), ",") != "79.139.58.98,79.139.58.121" {
		t.Errorf("results port %d, egress IPs %v: want 9443 and the expected egress IPs", np.ResultsPort, np.EgressIPs.List())
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func TestCrawlerNetworkPolicyRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = valid
	}{
		{[]string{"--manager-namespace=crawl-system"}, ""},
		{nil, "--crawler-network-policy needs --manager-namespace"},
		{[]string{"--manager-namespace=crawl-system", "--results-bind-address=127.0.0.1:0"}, `--results-bind-address "127.0.0.1:0" names no fixed port`},
		{[]string{"--manager-namespace=crawl-system", "--results-bind-address=results"}, `--results-bind-address "results" names no fixed port`},
		// Served nowhere by the manager: nothing to open.
		{[]string{"--manager-namespace=crawl-system", "--results-bind-address=0"}, "--results-bind-address must name one"},
		// A manager outside the cluster turns the policy off and needs none of it.
		{[]string{"--crawler-network-policy=false", "--results-bind-address=127.0.0.1:0"}, ""},
	} {
		err := parse(t, tc.args...).Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: Validate() = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestThroughputFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = valid
	}{
		{nil, ""},
		{[]string{"--max-concurrent-reconciles=1", "--kube-api-qps=0", "--kube-api-burst=0"}, ""},
		{[]string{"--max-concurrent-reconciles=0"}, "--max-concurrent-reconciles must be at least 1"},
		{[]string{"--max-concurrent-reconciles=-3"}, "--max-concurrent-reconciles must be at least 1"},
		{[]string{"--kube-api-qps=-1"}, "--kube-api-qps must not be negative"},
		{[]string{"--kube-api-qps=50", "--kube-api-burst=0"}, "--kube-api-burst must be at least 1"},
	} {
		args := append([]string{"--crawler-network-policy=false"}, tc.args...)
		err := parse(t, args...).Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: Validate() = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestRestConfigTakesTheRateLimits(t *testing.T) {
	given := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 7, Burst: 9}
	o := parse(t, "--kube-api-qps=120", "--kube-api-burst=240")
	got := o.Manager.restConfig(given)
	if got.QPS != 120 || got.Burst != 240 || got.Host != given.Host {
		t.Errorf("rest config QPS %v burst %d host %s, want 120, 240 and the given host", got.QPS, got.Burst, got.Host)
	}
	if given.QPS != 7 || given.Burst != 9 {
		t.Errorf("the given config was changed: QPS %v burst %d", given.QPS, given.Burst)
	}
	if kept := parse(t, "--kube-api-qps=0").Manager.restConfig(given); kept.QPS != 7 || kept.Burst != 9 {
		t.Errorf("--kube-api-qps=0: QPS %v burst %d, want the kubeconfig's 7 and 9", kept.QPS, kept.Burst)
	}
	if d := Defaults().Manager; d.KubeAPIQPS != 500 || d.KubeAPIBurst != 1000 || d.MaxConcurrentReconciles != 64 {
		t.Errorf("defaults = %+v", d)
	}
}
