package runreport

import "strings"

// How a crawler Pod reaches the manager's results endpoint. The crawler,
// the Pod builder and the endpoint all import these, so the two sides of
// the boundary cannot drift apart.
const (
	// TokenEnv is the environment variable that hands the crawler its run
	// token, so the token never appears in the process's arguments.
	TokenEnv = "CRAWL_REPORT_TOKEN"
	// ExtraCACertsEnv hands the crawler PEM certificates of extra
	// certificate authorities to trust for HTTPS (--crawler-extra-ca-file).
	// CA certificates are public, and the Pod spec is the one channel that
	// needs no object in each crawler namespace.
	ExtraCACertsEnv = "LOHISOFTBOT_EXTRA_CA_CERTS"
	// PathPattern is the endpoint's route (net/http pattern syntax) for the
	// reports of one run: one path per run, so a token is only ever checked
	// against its own Pod.
	PathPattern = "/v1/runs/{namespace}/{pod}"
	// ExitBadInput is the crawler's exit code for input it refuses (a URL
	// it cannot crawl, a bad flag): running it again with the same input
	// fails the same way, so the operator does not retry on a timer.
	ExitBadInput = 2
	// ExitEgressUnverified is the crawler's exit code when the source
	// address sites would see could not be verified as the egress node's
	// published one (--egress-echo-url, --expect-egress-ip): it sent
	// nothing to the site. The fault is the node's, not the site's, so the
	// operator keeps crawls off the node and retries elsewhere at once.
	// The crawler's last log line carries the two addresses under
	// LogExpectedEgressIP and LogObservedEgressIP (absent when the echo
	// gave none).
	ExitEgressUnverified = 3
	LogExpectedEgressIP  = "expectedEgressIP"
	LogObservedEgressIP  = "observedEgressIP"
	// LogFormatFlag is the crawl command's flag choosing its log format;
	// crawler Pods pass LogFormatJSON, so one log pipeline reads manager
	// and crawler alike, and the operator reads the message of the last
	// line of a failed Pod's log.
	LogFormatFlag = "log-format"
	LogFormatJSON = "json"
	LogFormatText = "text"
)

// Path is the report path of run Pod pod in namespace: PathPattern filled in.
func Path(namespace, pod string) string {
	return strings.NewReplacer("{namespace}", namespace, "{pod}", pod).Replace(PathPattern)
}
