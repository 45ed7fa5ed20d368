package operator

import (
	"flag"
	"io"
	"strings"
	"testing"
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
