package runreport

// How a crawler Pod reaches the manager's results endpoint. The crawler,
// the Pod builder and the endpoint all import these, so the two sides of
// the boundary cannot drift apart.
const (
	// TokenEnv is the environment variable that hands the crawler its run
	// token, so the token never appears in the process's arguments.
	TokenEnv = "CRAWL_REPORT_TOKEN"
	// PathPattern is the endpoint's route (net/http pattern syntax) for the
	// reports of one run: one path per run, so a token is only ever checked
	// against its own Pod.
	PathPattern = "/v1/runs/{namespace}/{pod}"
)

// Path is the report path of run Pod pod in namespace: PathPattern filled in.
func Path(namespace, pod string) string {
	return "/v1/runs/" + namespace + "/" + pod
}
