package chart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// refusal is one way `helm install` and `helm upgrade` refuse values. The
// message must name the value (path: as the schema validator prints it,
// /manager/replicas, or as templates/validate.yaml writes it,
// manager.replicas) and say what is accepted or why (why).
type refusal struct {
	vals map[string]any
	path string
	why  string
	// The JSON pointers of the schema keywords that refuse the values;
	// none when templates/validate.yaml does.
	rules []string
}

const (
	defs   = "/definitions/"
	props  = "/properties/"
	mgr    = props + "manager/properties/"
	podSC  = defs + "podSecurityContext/properties/"
	ctrSC  = defs + "containerSecurityContext/properties/"
	spread = defs + "topologySpreadConstraint/properties/"
	thresh = props + "prometheusRule/properties/thresholds/properties/"
)

// vals builds values from dotted paths and their values, as --set does.
func vals(pathsAndValues ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i < len(pathsAndValues); i += 2 {
		keys := strings.Split(pathsAndValues[i].(string), ".")
		m := out
		for _, k := range keys[:len(keys)-1] {
			if m[k] == nil {
				m[k] = map[string]any{}
			}
			m = m[k].(map[string]any)
		}
		m[keys[len(keys)-1]] = pathsAndValues[i+1]
	}
	return out
}

// withPostgres is vals on top of a valid PostgreSQL setup, for the rules
// that need more than one replica.
func withPostgres(pathsAndValues ...any) map[string]any {
	return vals(append([]any{"storage.type", "postgres", "storage.postgres.existingSecret", "pg"}, pathsAndValues...)...)
}

// spreadWith is a valid topology spread constraint with one field changed.
func spreadWith(key string, v any) map[string]any {
	c := map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
	c[key] = v
	return vals("manager.topologySpreadConstraints", []any{c})
}

// refusals lists every refusal of the chart. The README's Refusals table
// says the same in words.
func refusals() map[string]refusal {
	pattern := func(p string) string { return "does not match pattern '" + p + "'" }
	dnsSubdomainOrEmpty := pattern(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`)
	label := pattern(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	digest := pattern(`^(sha256:[a-f0-9]{64})?$`)
	return map[string]refusal{
		// Anywhere: an unknown key, a wrong type.
		"unknown top-level key":           {vals("replicaCount", 2), "", "additional properties 'replicaCount' not allowed", []string{"/additionalProperties"}},
		"unknown nested key":              {vals("crawler.maxPages", 50), "/crawler", "additional properties 'maxPages' not allowed", []string{props + "crawler/additionalProperties"}},
		"wrong type":                      {vals("manager.replicas", "two"), "/manager/replicas", "got string, want integer", []string{mgr + "replicas/type"}},
		"watched namespaces a string":     {vals("watchNamespaces", "sites,shop"), "/watchNamespaces", "got string, want array", []string{props + "watchNamespaces/type"}},
		"readinessIncludesIndex a string": {vals("manager.readinessIncludesIndex", "yes"), "/manager/readinessIncludesIndex", "got string, want boolean", []string{mgr + "readinessIncludesIndex/type"}},

		// A key left empty in a values file is null, which deletes the
		// chart's default: the templates need these.
		"crawler left empty":                 {vals("crawler", nil), "", "missing property 'crawler'", []string{"/required"}},
		"watchNamespaces left empty":         {vals("watchNamespaces", nil), "", "missing property 'watchNamespaces'", []string{"/required"}},
		"podDisruptionBudget left empty":     {vals("manager.podDisruptionBudget", nil), "/manager", "missing property 'podDisruptionBudget'", []string{props + "manager/required"}},
		"readinessIncludesIndex left empty":  {vals("manager.readinessIncludesIndex", nil), "/manager", "missing property 'readinessIncludesIndex'", []string{props + "manager/required"}},
		"no container security context":      {vals("manager.securityContext", nil), "/manager", "missing property 'securityContext'", []string{props + "manager/required"}},
		"crawler resources left empty":       {vals("crawler.resources", nil), "/crawler", "missing property 'resources'", []string{props + "crawler/required"}},
		"leader election removed":            {vals("manager.leaderElection", nil), "/manager", "missing property 'leaderElection'", []string{props + "manager/required"}},
		"crawl delay removed":                {vals("crawler.minCrawlDelay", nil), "/crawler", "missing property 'minCrawlDelay'", []string{props + "crawler/required"}},
		"egress node label removed":          {vals("egress.nodeLabel", nil), "/egress", "missing property 'nodeLabel'", []string{props + "egress/required"}},
		"bot IPs URL removed":                {vals("bot.ipsURL", nil), "/bot", "missing property 'ipsURL'", []string{props + "bot/required"}},
		"metrics secure removed":             {vals("metrics.secure", nil), "/metrics", "missing property 'secure'", []string{props + "metrics/required"}},
		"runbook URL removed":                {vals("prometheusRule.runbookBaseURL", nil), "/prometheusRule", "missing property 'runbookBaseURL'", []string{props + "prometheusRule/required"}},
		"network policy switch removed":      {vals("networkPolicy.enabled", nil), "/networkPolicy", "missing property 'enabled'", []string{props + "networkPolicy/required"}},
		"storage type removed":               {vals("storage.type", nil), "/storage", "missing property 'type'", []string{props + "storage/required"}},
		"image repository removed":           {vals("image.repository", nil), "/image", "missing property 'repository'", []string{props + "image/required"}},
		"bot operator removed":               {vals("bot.operator", nil), "/bot", "missing property 'operator'", []string{props + "bot/required"}},
		"pull Secret without a name":         {vals("imagePullSecrets", []any{map[string]any{}}), "/imagePullSecrets/0", "missing property 'name'", []string{props + "imagePullSecrets/items/required"}},
		"crawler pull Secret without a name": {vals("crawler.imagePullSecrets", []any{map[string]any{}}), "/crawler/imagePullSecrets/0", "missing property 'name'", []string{props + "crawler/properties/imagePullSecrets/items/required"}},
		"topology spread without key":        {vals("manager.topologySpreadConstraints", []any{map[string]any{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}}), "/manager/topologySpreadConstraints/0", "missing property 'topologyKey'", []string{defs + "topologySpreadConstraint/required"}},
		"privilege escalation unset":         {vals("manager.securityContext.allowPrivilegeEscalation", nil), "/manager/securityContext", "missing property 'allowPrivilegeEscalation'", []string{defs + "containerSecurityContext/required"}},
		"capabilities without drop":          {vals("manager.securityContext.capabilities.drop", nil), "/manager/securityContext/capabilities", "missing property 'drop'", []string{ctrSC + "capabilities/required"}},
		"seccomp profile without a type":     {vals("manager.securityContext.seccompProfile.type", nil), "/manager/securityContext/seccompProfile", "missing property 'type'", []string{defs + "profile/required"}},

		// Names, durations, addresses.
		"bad duration":                 {vals("crawler.minCrawlDelay", "1 second"), "/crawler/minCrawlDelay", pattern(`^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$`), []string{defs + "duration/pattern"}},
		"IPv6 egress address":          {vals("egress.expectedIPs", []any{"2001:db8::1"}), "/egress/expectedIPs/0", "is not valid ipv4: expected four decimals", []string{defs + "ipv4/format"}},
		"egress address above 255":     {vals("egress.expectedIPs", []any{"79.139.58.256"}), "/egress/expectedIPs/0", "is not valid ipv4: decimal must be between 0 and 255", []string{defs + "ipv4/format"}},
		"egress address with a sign":   {vals("egress.expectedIPs", []any{"+79.139.58.98"}), "/egress/expectedIPs/0", pattern(`^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$`), []string{defs + "ipv4/pattern"}},
		"egress address twice":         {vals("egress.expectedIPs", []any{"79.139.58.98", "79.139.58.98"}), "/egress/expectedIPs", "items at 0 and 1 are equal", []string{props + "egress/properties/expectedIPs/uniqueItems"}},
		"port 0":                       {vals("service.indexPort", 0), "/service/indexPort", "minimum: got 0, want 1", []string{defs + "port/minimum"}},
		"port above 65535":             {vals("service.metricsPort", 65536), "/service/metricsPort", "maximum: got 65,536, want 65,535", []string{defs + "port/maximum"}},
		"watched namespace not a name": {vals("watchNamespaces", []any{"Sites"}), "/watchNamespaces/0", label, []string{defs + "dnsLabel/pattern"}},
		"watched namespace empty":      {vals("watchNamespaces", []any{""}), "/watchNamespaces/0", label, []string{defs + "dnsLabel/pattern"}},
		"watched namespace too long":   {vals("watchNamespaces", []any{strings.Repeat("a", 64)}), "/watchNamespaces/0", "maxLength: got 64, want 63", []string{defs + "dnsLabel/maxLength"}},
		"watched namespace twice":      {vals("watchNamespaces", []any{"sites", "sites"}), "/watchNamespaces", "items at 0 and 1 are equal", []string{props + "watchNamespaces/uniqueItems"}},
		"DNS namespace not a name":     {vals("networkPolicy.dnsNamespace", "Kube System"), "/networkPolicy/dnsNamespace", label, []string{defs + "dnsLabel/pattern"}},
		"crawler namespace twice":      {vals("networkPolicy.crawlerNamespaces", []any{"sites", "sites"}), "/networkPolicy/crawlerNamespaces", "items at 0 and 1 are equal", []string{props + "networkPolicy/properties/crawlerNamespaces/uniqueItems"}},
		"crawler pull Secret empty": {vals("crawler.imagePullSecrets", []any{map[string]any{"name": ""}}), "/crawler/imagePullSecrets/0/name", "minLength: got 0, want 1",
			[]string{defs + "dnsSubdomain/minLength", defs + "dnsSubdomain/pattern"}},
		"crawler pull Secret not a name": {vals("crawler.imagePullSecrets", []any{map[string]any{"name": "My Registry"}}), "/crawler/imagePullSecrets/0/name",
			pattern(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`), []string{defs + "dnsSubdomain/pattern"}},
		"crawler pull Secret too long": {vals("crawler.imagePullSecrets", []any{map[string]any{"name": strings.Repeat("a", 254)}}), "/crawler/imagePullSecrets/0/name", "maxLength: got 254, want 253", []string{defs + "dnsSubdomain/maxLength"}},
		"priorityClassName not a name": {vals("manager.priorityClassName", "High Priority"), "/manager/priorityClassName", dnsSubdomainOrEmpty, []string{defs + "dnsSubdomainOrEmpty/pattern"}},
		"priorityClassName too long":   {vals("crawler.priorityClassName", strings.Repeat("a", 254)), "/crawler/priorityClassName", "maxLength: got 254, want 253", []string{defs + "dnsSubdomainOrEmpty/maxLength"}},
		"Secret name not a name":       {postgres(map[string]any{"existingSecret": "pg dsn"}), "/storage/postgres/existingSecret", dnsSubdomainOrEmpty, []string{defs + "dnsSubdomainOrEmpty/pattern"}},
		"nameOverride not a name":      {vals("nameOverride", "Crawl Operator"), "/nameOverride", pattern(`^([a-z]([-a-z0-9]*[a-z0-9])?)?$`), []string{defs + "nameOrEmpty/pattern"}},
		"nameOverride too long":        {vals("nameOverride", strings.Repeat("a", 64)), "/nameOverride", "maxLength: got 64, want 63", []string{props + "nameOverride/maxLength"}},
		"fullnameOverride too long":    {vals("fullnameOverride", strings.Repeat("a", 51)), "/fullnameOverride", "maxLength: got 51, want 50", []string{props + "fullnameOverride/maxLength"}},

		// image
		"image repository empty":   {vals("image.repository", ""), "/image/repository", "minLength: got 0, want 1", []string{props + "image/properties/repository/minLength"}},
		"digest without algorithm": {vals("image.digest", strings.Repeat("a", 64)), "/image/digest", digest, []string{props + "image/properties/digest/pattern"}},
		"digest too short":         {vals("image.digest", "sha256:abc"), "/image/digest", digest, []string{props + "image/properties/digest/pattern"}},
		"digest with a tag":        {vals("image.digest", "v1@sha256:"+strings.Repeat("a", 64)), "/image/digest", digest, []string{props + "image/properties/digest/pattern"}},
		"bad pull policy":          {vals("image.pullPolicy", "Sometimes"), "/image/pullPolicy", "value must be one of 'Always', 'IfNotPresent', 'Never'", []string{props + "image/properties/pullPolicy/enum"}},

		// manager
		"zero replicas":              {vals("manager.replicas", 0), "/manager/replicas", "minimum: got 0, want 1", []string{mgr + "replicas/minimum"}},
		"unknown log level":          {vals("manager.logLevel", "trace"), "/manager/logLevel", "value must be one of 'debug', 'info', 'error'", []string{mgr + "logLevel/enum"}},
		"zero reconciles at once":    {vals("manager.maxConcurrentReconciles", 0), "/manager/maxConcurrentReconciles", "minimum: got 0, want 1", []string{mgr + "maxConcurrentReconciles/minimum"}},
		"negative API QPS":           {vals("manager.kubeAPIQPS", -1), "/manager/kubeAPIQPS", "minimum: got -1, want 0", []string{mgr + "kubeAPIQPS/minimum"}},
		"negative API burst":         {vals("manager.kubeAPIBurst", -1), "/manager/kubeAPIBurst", "minimum: got -1, want 0", []string{mgr + "kubeAPIBurst/minimum"}},
		"memory limit ratio above 1": {vals("manager.memoryLimitRatio", 1.5), "/manager/memoryLimitRatio", "maximum: got 1.5, want 1", []string{mgr + "memoryLimitRatio/maximum"}},
		"PDB minAvailable 0":         {vals("manager.podDisruptionBudget.minAvailable", 0), "/manager/podDisruptionBudget/minAvailable", "minimum: got 0, want 1", []string{mgr + "podDisruptionBudget/properties/minAvailable/minimum"}},
		"topology spread maxSkew 0":  {spreadWith("maxSkew", 0), "/manager/topologySpreadConstraints/0/maxSkew", "minimum: got 0, want 1", []string{spread + "maxSkew/minimum"}},
		"topology spread key empty":  {spreadWith("topologyKey", ""), "/manager/topologySpreadConstraints/0/topologyKey", "minLength: got 0, want 1", []string{spread + "topologyKey/minLength"}},
		"topology spread unknown when": {spreadWith("whenUnsatisfiable", "Maybe"), "/manager/topologySpreadConstraints/0/whenUnsatisfiable", "value must be one of 'DoNotSchedule', 'ScheduleAnyway'",
			[]string{spread + "whenUnsatisfiable/enum"}},
		"topology spread minDomains 0": {spreadWith("minDomains", 0), "/manager/topologySpreadConstraints/0/minDomains", "minimum: got 0, want 1", []string{spread + "minDomains/minimum"}},
		"topology spread node affinity policy": {spreadWith("nodeAffinityPolicy", "Always"), "/manager/topologySpreadConstraints/0/nodeAffinityPolicy", "value must be one of 'Honor', 'Ignore'",
			[]string{spread + "nodeAffinityPolicy/enum"}},
		"topology spread node taints policy": {spreadWith("nodeTaintsPolicy", "Always"), "/manager/topologySpreadConstraints/0/nodeTaintsPolicy", "value must be one of 'Honor', 'Ignore'",
			[]string{spread + "nodeTaintsPolicy/enum"}},

		// What breaks the restricted Pod Security level.
		"runAsNonRoot false":           {vals("manager.podSecurityContext.runAsNonRoot", false), "/manager/podSecurityContext/runAsNonRoot", "value must be true", []string{podSC + "runAsNonRoot/const"}},
		"container runAsNonRoot false": {vals("manager.securityContext.runAsNonRoot", false), "/manager/securityContext/runAsNonRoot", "value must be true", []string{ctrSC + "runAsNonRoot/const"}},
		"runAsNonRoot removed from both": {vals("manager.podSecurityContext.runAsNonRoot", nil, "manager.securityContext.runAsNonRoot", nil), "/manager/securityContext", "missing property 'runAsNonRoot'",
			[]string{props + "manager/allOf/0/anyOf", props + "manager/allOf/0/anyOf/0/properties/podSecurityContext/required", props + "manager/allOf/0/anyOf/1/properties/securityContext/required"}},
		"seccomp removed from both": {vals("manager.podSecurityContext.seccompProfile", nil, "manager.securityContext.seccompProfile", nil), "/manager/podSecurityContext", "missing property 'seccompProfile'",
			[]string{props + "manager/allOf/1/anyOf", props + "manager/allOf/1/anyOf/0/properties/podSecurityContext/required", props + "manager/allOf/1/anyOf/1/properties/securityContext/required"}},
		"root user":                       {vals("manager.podSecurityContext.runAsUser", 0), "/manager/podSecurityContext/runAsUser", "minimum: got 0, want 1", []string{podSC + "runAsUser/minimum"}},
		"root user in the container":      {vals("manager.securityContext.runAsUser", 0), "/manager/securityContext/runAsUser", "minimum: got 0, want 1", []string{ctrSC + "runAsUser/minimum"}},
		"negative group":                  {vals("manager.podSecurityContext.runAsGroup", -1), "/manager/podSecurityContext/runAsGroup", "minimum: got -1, want 0", []string{podSC + "runAsGroup/minimum"}},
		"negative group in the container": {vals("manager.securityContext.runAsGroup", -1), "/manager/securityContext/runAsGroup", "minimum: got -1, want 0", []string{ctrSC + "runAsGroup/minimum"}},
		"negative fsGroup":                {vals("manager.podSecurityContext.fsGroup", -1), "/manager/podSecurityContext/fsGroup", "minimum: got -1, want 0", []string{podSC + "fsGroup/minimum"}},
		"negative supplemental group":     {vals("manager.podSecurityContext.supplementalGroups", []any{-1}), "/manager/podSecurityContext/supplementalGroups/0", "minimum: got -1, want 0", []string{podSC + "supplementalGroups/items/minimum"}},
		"unknown fsGroupChangePolicy": {vals("manager.podSecurityContext.fsGroupChangePolicy", "Never"), "/manager/podSecurityContext/fsGroupChangePolicy", "value must be one of 'Always', 'OnRootMismatch'",
			[]string{podSC + "fsGroupChangePolicy/enum"}},
		"unknown supplementalGroupsPolicy": {vals("manager.podSecurityContext.supplementalGroupsPolicy", "Loose"), "/manager/podSecurityContext/supplementalGroupsPolicy", "value must be one of 'Merge', 'Strict'",
			[]string{podSC + "supplementalGroupsPolicy/enum"}},
		"unknown seLinuxChangePolicy": {vals("manager.podSecurityContext.seLinuxChangePolicy", "Never"), "/manager/podSecurityContext/seLinuxChangePolicy", "value must be one of 'Recursive', 'MountOption'",
			[]string{podSC + "seLinuxChangePolicy/enum"}},
		"privileged":           {vals("manager.securityContext.privileged", true), "/manager/securityContext/privileged", "value must be false", []string{ctrSC + "privileged/const"}},
		"privilege escalation": {vals("manager.securityContext.allowPrivilegeEscalation", true), "/manager/securityContext/allowPrivilegeEscalation", "value must be false", []string{ctrSC + "allowPrivilegeEscalation/const"}},
		"capability added": {vals("manager.securityContext.capabilities.add", []any{"SYS_ADMIN"}), "/manager/securityContext/capabilities/add/0", "value must be 'NET_BIND_SERVICE'",
			[]string{ctrSC + "capabilities/properties/add/items/const"}},
		"unmasked /proc": {vals("manager.securityContext.procMount", "Unmasked"), "/manager/securityContext/procMount", "value must be 'Default'", []string{ctrSC + "procMount/const"}},
		"seccomp unconfined": {vals("manager.podSecurityContext.seccompProfile.type", "Unconfined"), "/manager/podSecurityContext/seccompProfile/type", "value must be one of 'RuntimeDefault', 'Localhost'",
			[]string{defs + "profile/properties/type/enum"}},
		"AppArmor unconfined": {vals("manager.securityContext.appArmorProfile", map[string]any{"type": "Unconfined"}), "/manager/securityContext/appArmorProfile/type", "value must be one of 'RuntimeDefault', 'Localhost'",
			[]string{defs + "profile/properties/type/enum"}},
		"Localhost profile empty": {vals("manager.securityContext.seccompProfile", map[string]any{"type": "Localhost", "localhostProfile": ""}), "/manager/securityContext/seccompProfile/localhostProfile", "minLength: got 0, want 1",
			[]string{defs + "profile/properties/localhostProfile/minLength"}},
		"SELinux user": {vals("manager.podSecurityContext.seLinuxOptions", map[string]any{"user": "system_u"}), "/manager/podSecurityContext/seLinuxOptions", "additional properties 'user' not allowed",
			[]string{defs + "seLinuxOptions/additionalProperties"}},
		"SELinux type": {vals("manager.securityContext.seLinuxOptions", map[string]any{"type": "spc_t"}), "/manager/securityContext/seLinuxOptions/type",
			"value must be one of 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'", []string{defs + "seLinuxOptions/properties/type/enum"}},
		"sysctls": {vals("manager.podSecurityContext.sysctls", []any{map[string]any{"name": "kernel.msgmax", "value": "1"}}), "/manager/podSecurityContext", "additional properties 'sysctls' not allowed",
			[]string{defs + "podSecurityContext/additionalProperties"}},
		"Windows host process": {vals("manager.securityContext.windowsOptions", map[string]any{"hostProcess": true}), "/manager/securityContext", "additional properties 'windowsOptions' not allowed",
			[]string{defs + "containerSecurityContext/additionalProperties"}},

		// crawler
		"zero crawls per node":     {vals("crawler.maxCrawlsPerNode", 0), "/crawler/maxCrawlsPerNode", "minimum: got 0, want 1", []string{props + "crawler/properties/maxCrawlsPerNode/minimum"}},
		"over 100 crawls per node": {vals("crawler.maxCrawlsPerNode", 101), "/crawler/maxCrawlsPerNode", "maximum: got 101, want 100", []string{props + "crawler/properties/maxCrawlsPerNode/maximum"}},
		"crawler resource other than cpu and memory": {vals("crawler.resources.limits", map[string]any{"nvidia.com/gpu": 1}), "/crawler/resources/limits", "additional properties 'nvidia.com/gpu' not allowed",
			[]string{defs + "crawlerResourceList/additionalProperties"}},
		"crawler label value not a label": {vals("crawler.podLabels", map[string]any{"team": "two words"}), "/crawler/podLabels/team", pattern(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`),
			[]string{props + "crawler/properties/podLabels/additionalProperties/pattern"}},
		"crawler label value too long": {vals("crawler.podLabels", map[string]any{"team": strings.Repeat("a", 64)}), "/crawler/podLabels/team", "maxLength: got 64, want 63",
			[]string{props + "crawler/properties/podLabels/additionalProperties/maxLength"}},
		"comma in a crawler annotation": {vals("crawler.podAnnotations", map[string]any{"a": "b,c=d"}), "/crawler/podAnnotations/a", pattern(`^[^,]*$`),
			[]string{props + "crawler/properties/podAnnotations/additionalProperties/pattern"}},
		"extra CA certificates over 64 KiB": {vals("crawler.extraCACerts", strings.Repeat("a", 65537)), "/crawler/extraCACerts", "maxLength: got 65,537, want 65,536",
			[]string{props + "crawler/properties/extraCACerts/maxLength"}},

		// egress
		"label without value":  {vals("egress.nodeLabel", "egress"), "/egress/nodeLabel", pattern(`^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*$`), []string{props + "egress/properties/nodeLabel/pattern"}},
		"taint without effect": {vals("egress.nodeTaint", "dedicated=crawler"), "/egress/nodeTaint", pattern(`^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*:(NoSchedule|PreferNoSchedule|NoExecute)$`), []string{props + "egress/properties/nodeTaint/pattern"}},
		"echo URL not HTTP":    {vals("egress.echoURL", "ftp://echo.example.com/"), "/egress/echoURL", pattern(`^(https?://[^/?#@\\s]+([/?#]\\S*)?)?$`), []string{props + "egress/properties/echoURL/pattern"}},

		// storage
		"unknown storage":         {vals("storage.type", "mysql"), "/storage/type", "value must be one of 'sqlite', 'postgres'", []string{props + "storage/properties/type/enum"}},
		"volume size in words":    {vals("storage.sqlite.persistence.size", "1 GB"), "/storage/sqlite/persistence/size", pattern(`^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$`), []string{props + "storage/properties/sqlite/properties/persistence/properties/size/pattern"}},
		"Secret key with a slash": {postgres(map[string]any{"existingSecret": "pg", "secretKey": "a/b"}), "/storage/postgres/secretKey", pattern(`^[-._a-zA-Z0-9]+$`), []string{props + "storage/properties/postgres/properties/secretKey/pattern"}},
		"Secret key too long":     {postgres(map[string]any{"existingSecret": "pg", "secretKey": strings.Repeat("a", 254)}), "/storage/postgres/secretKey", "maxLength: got 254, want 253", []string{props + "storage/properties/postgres/properties/secretKey/maxLength"}},

		// bot
		"bot operator empty":           {vals("bot.operator", ""), "/bot/operator", "minLength: got 0, want 1", []string{props + "bot/properties/operator/minLength"}},
		"contact not an address":       {vals("bot.contact", "ACME: Bots #1"), "/bot/contact", pattern(`^[^\\s@]+@[^\\s@]+$`), []string{props + "bot/properties/contact/pattern"}},
		"user-agent without a product": {vals("bot.userAgent", "LohiSoftBot 1.0"), "/bot/userAgent", pattern(`^[A-Za-z][-_A-Za-z0-9]*/`), []string{props + "bot/properties/userAgent/pattern"}},
		"comma in a legacy user-agent": {vals("bot.legacyUserAgents", []any{"LohiSoftBot/0.9 (a, b)"}), "/bot/legacyUserAgents/0", pattern(`^[^,]+$`), []string{props + "bot/properties/legacyUserAgents/items/pattern"}},
		"hostname suffix without dot":  {vals("bot.hostnameSuffix", "bot.lohisoft.com"), "/bot/hostnameSuffix", pattern(`^\\.[a-z0-9.-]+$`), []string{props + "bot/properties/hostnameSuffix/pattern"}},
		"ips.json over plain HTTP":     {vals("bot.ipsURL", "http://lohisoft.com/bot/ips.json"), "/bot/ipsURL", pattern(`^https://`), []string{props + "bot/properties/ipsURL/pattern"}},

		// service, ingress, monitoring, network policy
		"ExternalName Service": {vals("service.type", "ExternalName"), "/service/type", "value must be one of 'ClusterIP', 'NodePort', 'LoadBalancer'", []string{props + "service/properties/type/enum"}},
		"Ingress host empty":   {vals("ingress.host", ""), "/ingress/host", "minLength: got 0, want 1", []string{props + "ingress/properties/host/minLength"}},
		"runbook URL relative": {vals("prometheusRule.runbookBaseURL", "ops.md#x"), "/prometheusRule/runbookBaseURL", pattern(`^https?://[^\\s#]+$`), []string{props + "prometheusRule/properties/runbookBaseURL/pattern"}},
		"queue wait under an hour": {vals("prometheusRule.thresholds.queueOldestWaitSeconds", 60), "/prometheusRule/thresholds/queueOldestWaitSeconds", "minimum: got 60, want 3,600",
			[]string{thresh + "queueOldestWaitSeconds/minimum"}},
		"crawl failure ratio negative": {vals("prometheusRule.thresholds.crawlFailureRatio", -0.1), "/prometheusRule/thresholds/crawlFailureRatio", "minimum: got -0.1, want 0", []string{thresh + "crawlFailureRatio/minimum"}},
		"crawl failure ratio above 1":  {vals("prometheusRule.thresholds.crawlFailureRatio", 1.5), "/prometheusRule/thresholds/crawlFailureRatio", "maximum: got 1.5, want 1", []string{thresh + "crawlFailureRatio/maximum"}},
		"zero crawl failures":          {vals("prometheusRule.thresholds.crawlFailuresMin", 0), "/prometheusRule/thresholds/crawlFailuresMin", "minimum: got 0, want 1", []string{thresh + "crawlFailuresMin/minimum"}},
		"report refusal ratio negative": {vals("prometheusRule.thresholds.reportRefusalRatio", -0.1), "/prometheusRule/thresholds/reportRefusalRatio", "minimum: got -0.1, want 0",
			[]string{thresh + "reportRefusalRatio/minimum"}},
		"report refusal ratio above 1": {vals("prometheusRule.thresholds.reportRefusalRatio", 2), "/prometheusRule/thresholds/reportRefusalRatio", "maximum: got 2, want 1", []string{thresh + "reportRefusalRatio/maximum"}},
		"zero report refusals":         {vals("prometheusRule.thresholds.reportRefusalsMin", 0), "/prometheusRule/thresholds/reportRefusalsMin", "minimum: got 0, want 1", []string{thresh + "reportRefusalsMin/minimum"}},
		"except CIDR without prefix": {vals("networkPolicy.extraExceptCIDRs", []any{"10.0.0.0"}), "/networkPolicy/extraExceptCIDRs/0", pattern(`^[0-9.]+/[0-9]{1,2}$`),
			[]string{props + "networkPolicy/properties/extraExceptCIDRs/items/pattern"}},
		"except CIDR twice": {vals("networkPolicy.extraExceptCIDRs", []any{"10.0.0.0/8", "10.0.0.0/8"}), "/networkPolicy/extraExceptCIDRs", "items at 0 and 1 are equal",
			[]string{props + "networkPolicy/properties/extraExceptCIDRs/uniqueItems"}},

		// templates/validate.yaml: the schema could not say why.
		"two replicas with SQLite": {vals("manager.replicas", 2), "manager.replicas=2",
			"needs storage.type=postgres: the default SQLite index is one file on one volume that only one manager Pod can open. Set storage.type=postgres and storage.postgres.existingSecret", nil},
		"two replicas without leader election": {withPostgres("manager.replicas", 2, "manager.leaderElection", false), "manager.replicas=2",
			"needs manager.leaderElection=true: without it every replica would start crawls and write results at once. Set manager.leaderElection=true", nil},
		"PDB keeps every replica": {withPostgres("manager.replicas", 2, "manager.podDisruptionBudget.minAvailable", 2), "manager.podDisruptionBudget.minAvailable=2",
			"needs manager.replicas above it (manager.replicas=2): a budget that keeps every replica available lets no node running a manager Pod be drained", nil},
		"postgres without secret": {vals("storage.type", "postgres"), "storage.postgres.existingSecret",
			"storage.type=postgres needs storage.postgres.existingSecret: the manager reads the PostgreSQL DSN from that Secret", nil},
		"postgres settings left empty": {vals("storage.type", "postgres", "storage.postgres", nil), "storage.postgres.existingSecret",
			"storage.type=postgres needs storage.postgres.existingSecret: the manager reads the PostgreSQL DSN from that Secret", nil},
		"SQLite settings left empty": {vals("storage.sqlite", nil), "storage.sqlite.persistence",
			"storage.type=sqlite needs storage.sqlite.persistence: the chart keeps the SQLite index on the volume it describes, and it is gone", nil},
		"SQLite persistence left empty": {vals("storage.sqlite.persistence", nil), "storage.sqlite.persistence",
			"storage.type=sqlite needs storage.sqlite.persistence: the chart keeps the SQLite index on the volume it describes, and it is gone", nil},
		"Localhost seccomp without a profile": {vals("manager.securityContext.seccompProfile", map[string]any{"type": "Localhost"}), "manager.securityContext.seccompProfile.localhostProfile",
			"manager.securityContext.seccompProfile.type=Localhost needs manager.securityContext.seccompProfile.localhostProfile: a Localhost profile is one the node provides", nil},
		"Localhost AppArmor without a profile": {vals("manager.podSecurityContext.appArmorProfile", map[string]any{"type": "Localhost"}), "manager.podSecurityContext.appArmorProfile.localhostProfile",
			"to the name of an AppArmor profile loaded on the nodes, or type=RuntimeDefault", nil},
		"capabilities not all dropped": {vals("manager.securityContext.capabilities.drop", []any{"NET_RAW"}), `manager.securityContext.capabilities.drop=["NET_RAW"]`,
			"needs ALL: the restricted Pod Security level admits only containers that drop every capability", nil},
		"no capability dropped": {vals("manager.securityContext.capabilities.drop", []any{}), "manager.securityContext.capabilities.drop=[]",
			"needs ALL: the restricted Pod Security level admits only containers that drop every capability", nil},
		"memory limit ratio 0": {vals("manager.memoryLimitRatio", 0), "manager.memoryLimitRatio=0",
			"must be above 0: it is the fraction of the memory limit the Go runtime keeps the manager's heap under (GOMEMLIMIT)", nil},
		"memory limit ratio negative": {vals("manager.memoryLimitRatio", -0.5), "manager.memoryLimitRatio=-0.5", "must be above 0", nil},
		"sync lag threshold 0": {vals("prometheusRule.thresholds.syncLagSeconds", 0), "prometheusRule.thresholds.syncLagSeconds=0",
			"must be above 0: CrawlOperatorIndexSyncLagHigh fires when the index lags behind its SiteIndexes by more than this many seconds", nil},
		"comma in a crawler label key": {vals("crawler.podLabels", map[string]any{"a,b": "x"}), `crawler.podLabels has the key "a,b"`,
			"one flag of comma-separated key=value pairs (--crawler-pod-labels), so a key must be non-empty and hold no ',' or '='", nil},
		"empty crawler label key": {vals("crawler.podLabels", map[string]any{"": "x"}), `crawler.podLabels has the key ""`, "a key must be non-empty", nil},
		"= in a crawler annotation key": {vals("crawler.podAnnotations", map[string]any{"a=b": "x"}), `crawler.podAnnotations has the key "a=b"`,
			"one flag of comma-separated key=value pairs (--crawler-pod-annotations)", nil},
	}
}

// Every refusal names the value and says what is accepted or why, in
// `helm install` and `helm template`; a schema refusal also in `helm lint
// --strict` (a template's fail is only logged there), and each schema
// keyword a case names takes part in the refusal.
func TestRefusals(t *testing.T) {
	chrt, schema := chartAndSchema(t)
	for name, tt := range refusals() {
		// Helm deletes the null keys of the values it is given: each step
		// gets its own.
		fresh := func() map[string]any { return refusals()[name].vals }
		t.Run(name, func(t *testing.T) {
			_, err := render(t, fresh())
			if err == nil {
				t.Fatalf("helm template accepted %v", tt.vals)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.why) {
				t.Errorf("error %q does not say %q", msg, tt.why)
			}
			if len(tt.rules) == 0 {
				if !strings.Contains(msg, "execution error at (crawl-operator/templates/validate.yaml") || !strings.Contains(msg, tt.path) {
					t.Errorf("error %q is not templates/validate.yaml's naming %s", msg, tt.path)
				}
				return
			}
			if !strings.Contains(msg, "values don't meet the specifications of the schema") || !strings.Contains(msg, "at '"+tt.path+"'") {
				t.Errorf("error %q is not the schema's at '%s'", msg, tt.path)
			}
			lint := action.NewLint()
			lint.Strict, lint.Namespace, lint.KubeVersion = true, releaseNamespace, kubeVersion(t)
			if res := lint.Run([]string{chartPath}, fresh()); !strings.Contains(fmt.Sprint(res.Errors), tt.why) {
				t.Errorf("helm lint: errors %v do not say %q", res.Errors, tt.why)
			}
			full := validateValues(t, chrt, schema, fresh())
			for _, rule := range tt.rules {
				if without := validateValues(t, chrt, withoutKeyword(t, schema, rule), fresh()); fmt.Sprint(without) == fmt.Sprint(full) {
					t.Errorf("%s takes no part in the refusal: without it the schema still says %v", rule, without)
				}
			}
		})
	}
}

// The rules of templates/validate.yaml and the schema's required keys
// refuse no more than they did as schema rules or as template errors:
// values just inside each of them render.
func TestRefusalsStopAtTheirEdge(t *testing.T) {
	for name, v := range map[string]map[string]any{
		"memory limit ratio 1":               vals("manager.memoryLimitRatio", 1),
		"memory limit ratio just above 0":    vals("manager.memoryLimitRatio", 0.0001),
		"sync lag threshold just above 0":    vals("prometheusRule.thresholds.syncLagSeconds", 0.001),
		"ALL dropped among others":           vals("manager.securityContext.capabilities.drop", []any{"NET_RAW", "ALL"}),
		"Localhost seccomp with a profile":   vals("manager.securityContext.seccompProfile", map[string]any{"type": "Localhost", "localhostProfile": "profiles/crawl.json"}),
		"Localhost AppArmor with a profile":  vals("manager.podSecurityContext.appArmorProfile", map[string]any{"type": "Localhost", "localhostProfile": "crawl"}),
		"label key with a prefix":            vals("crawler.podLabels", map[string]any{"example.com/team": "search"}, "crawler.podAnnotations", map[string]any{"example.com/team": "search"}),
		"SQLite without PostgreSQL settings": vals("storage.postgres", nil),
		"PostgreSQL without SQLite settings": withPostgres("storage.sqlite", nil),
		"PDB below the replicas":             withPostgres("manager.replicas", 3, "manager.podDisruptionBudget.minAvailable", 2),
		"PDB off":                            withPostgres("manager.replicas", 2, "manager.podDisruptionBudget.minAvailable", 2, "manager.podDisruptionBudget.enabled", false),
		"PDB above one replica":              vals("manager.podDisruptionBudget.minAvailable", 5),
		"no thresholds":                      vals("prometheusRule.thresholds", nil),
	} {
		if _, err := render(t, v); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Every constraint of values.schema.json has a case in refusals(), so a
// new one cannot come without a refusal shown to say what it wants. type
// and additionalProperties are left out: the validator's message for them
// ("got string, want integer", "additional properties 'x' not allowed") is
// the same and clear wherever they are; structural keywords (properties,
// items, $ref, allOf) refuse nothing themselves.
func TestEverySchemaConstraintHasARefusal(t *testing.T) {
	_, schema := chartAndSchema(t)
	constraints := map[string]bool{
		"pattern": true, "format": true, "enum": true, "const": true, "minimum": true, "maximum": true,
		"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true, "minLength": true, "maxLength": true,
		"minItems": true, "maxItems": true, "uniqueItems": true, "contains": true, "minProperties": true, "maxProperties": true,
		"required": true, "propertyNames": true, "dependencies": true, "if": true, "not": true, "anyOf": true, "oneOf": true,
	}
	var found []string
	// names: the keys of node are names of values or definitions, not keywords.
	var walk func(ptr string, node any, names bool)
	walk = func(ptr string, node any, names bool) {
		switch n := node.(type) {
		case map[string]any:
			for k, v := range n {
				switch {
				case names:
					walk(ptr+"/"+k, v, false)
				case constraints[k]:
					found = append(found, ptr+"/"+k)
					walk(ptr+"/"+k, v, false)
				case k == "properties" || k == "definitions":
					walk(ptr+"/"+k, v, true)
				case k != "description" && k != "$comment":
					walk(ptr+"/"+k, v, false)
				}
			}
		case []any:
			for i, v := range n {
				walk(fmt.Sprintf("%s/%d", ptr, i), v, false)
			}
		}
	}
	walk("", schema, false)
	if len(found) < 90 {
		t.Fatalf("found only %d constraints in the schema: the walk is broken", len(found))
	}
	covered := map[string]bool{}
	for _, tt := range refusals() {
		for _, rule := range tt.rules {
			covered[rule] = true
		}
	}
	sort.Strings(found)
	for _, ptr := range found {
		if !covered[ptr] {
			t.Errorf("no case in refusals() is refused by %s", ptr)
		}
		delete(covered, ptr)
	}
	for ptr := range covered {
		if !strings.HasSuffix(ptr, "/type") && !strings.HasSuffix(ptr, "/additionalProperties") {
			t.Errorf("refusals() names %s, which is no constraint of the schema", ptr)
		}
	}
}

// Every fail in the chart's templates has a case in refusals() whose
// error it wrote, but the one that guards the chart's own file of ranges,
// which no value can reach.
func TestEveryTemplateFailHasARefusal(t *testing.T) {
	elsewhere := map[string]string{
		"files/networkpolicy/forbidden-ipv4.yaml lists no ranges": "TestChartWithoutItsRangesRefusesToRender",
	}
	var errs []string
	for _, tt := range refusals() {
		if len(tt.rules) == 0 {
			_, err := render(t, tt.vals)
			errs = append(errs, fmt.Sprint(err))
		}
	}
	files, _ := filepath.Glob(filepath.Join(chartPath, "templates", "*"))
	failRE := regexp.MustCompile(`fail\s+(?:\(printf\s+)?"((?:[^"\\]|\\.)*)"`)
	verbRE := regexp.MustCompile(`%(?:\[\d+\])?[a-z]`)
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
	fails:
		for _, m := range failRE.FindAllStringSubmatch(string(b), -1) {
			n++
			format := m[1]
			for prefix := range elsewhere {
				if strings.HasPrefix(format, prefix) {
					continue fails
				}
			}
			parts := verbRE.Split(format, -1)
			for i := range parts {
				parts[i] = regexp.QuoteMeta(parts[i])
			}
			re := regexp.MustCompile(strings.Join(parts, ".*"))
			for _, e := range errs {
				if re.MatchString(e) {
					continue fails
				}
			}
			t.Errorf("%s: no case in refusals() meets fail %q", filepath.Base(f), format)
		}
	}
	if n < 10 {
		t.Fatalf("found only %d fails in the templates: the search is broken", n)
	}
}

// A key left empty in a values file (or --set KEY=null, Helm's documented
// way to remove a default) deletes the chart's default. For every key of
// values.yaml, alone and with every feature on, that either renders or is
// refused by the schema or templates/validate.yaml, never by a template
// failing on the missing value ("nil pointer evaluating interface
// {}.enabled"); and what renders holds no value made of Go's formatting of
// nothing (null manager.leaderElection, logLevel, crawler.minCrawlDelay
// and others rendered --leader-elect=%!t(<nil>) and the like, and the
// manager would not start).
func TestEmptyValuesAreRefusedClearly(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartPath, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]any
	if err := yaml.Unmarshal(b, &defaults); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			paths = append(paths, prefix+k)
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
			}
		}
	}
	walk("", defaults)
	sort.Strings(paths)
	for _, path := range paths {
		for base, features := range map[string]map[string]any{"defaults": nil, "all features": allFeatures()} {
			v := chartutil.MergeTables(vals(path, nil), features)
			objs, err := render(t, v)
			if err != nil && !strings.Contains(err.Error(), "values don't meet the specifications of the schema") &&
				!strings.Contains(err.Error(), "execution error at (crawl-operator/templates/validate.yaml") {
				t.Errorf("%s=null (%s): %v", path, base, err)
			}
			for _, o := range objs {
				if line := goFormatGarbage(t, o); line != "" {
					t.Errorf("%s=null (%s): %s %s renders %q: refuse a null %s, or treat it as unset", path, base, o.GetKind(), o.GetName(), line, path)
				}
			}
		}
	}
}

// goFormatGarbage returns the first line of o that holds what
// text/template and fmt write for a value that is not there.
func goFormatGarbage(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	y, err := yaml.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(y), "\n") {
		for _, g := range []string{"%!", "<nil>", "<no value>"} {
			if strings.Contains(line, g) {
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}

func chartAndSchema(t *testing.T) (*chart.Chart, map[string]any) {
	t.Helper()
	chrt, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	return chrt, loadSchema(t)
}

// validateValues is Helm's schema check of vals, merged with the chart's
// defaults, against schema.
func validateValues(t *testing.T, chrt *chart.Chart, schema map[string]any, vals map[string]any) error {
	t.Helper()
	merged, err := chartutil.CoalesceValues(chrt, vals)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	return chartutil.ValidateAgainstSingleSchema(merged, b)
}

// withoutKeyword is a copy of schema without the keyword at the JSON
// pointer ptr.
func withoutKeyword(t *testing.T, schema map[string]any, ptr string) map[string]any {
	t.Helper()
	b, _ := json.Marshal(schema)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	tokens := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var node any = out
	for _, tok := range tokens[:len(tokens)-1] {
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			var i int
			fmt.Sscan(tok, &i)
			node = n[i]
		}
	}
	parent, ok := node.(map[string]any)
	if _, has := parent[tokens[len(tokens)-1]]; !ok || !has {
		t.Fatalf("%s is not in the schema", ptr)
	}
	delete(parent, tokens[len(tokens)-1])
	return out
}
