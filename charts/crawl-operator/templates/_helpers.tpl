{{- define "crawl-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "crawl-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: crawl-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ include "crawl-operator.selectorLabels" . }}
{{- end -}}

{{- define "crawl-operator.selectorLabels" -}}
app.kubernetes.io/name: crawl-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "crawl-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "crawl-operator.crawlerImage" -}}
{{- default (include "crawl-operator.image" .) .Values.crawler.image -}}
{{- end -}}

{{- define "crawl-operator.resultsURL" -}}
{{- printf "http://%s-results.%s.svc:%d" (include "crawl-operator.fullname" .) .Release.Namespace (int .Values.service.resultsPort) -}}
{{- end -}}

{{/* Restricted Pod Security: the same for the manager and crawler Pods. */}}
{{- define "crawl-operator.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
