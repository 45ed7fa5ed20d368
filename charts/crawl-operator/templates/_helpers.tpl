{{- /*
Every value a template writes is quoted (| quote) or written with toYaml,
so colons, " #", quotes, backslashes, leading dashes and words YAML reads
as booleans, null or numbers ("true", "no", "1e3", "012") reach the API
server exactly as given. test/chart/quoting_test.go checks each value.
*/ -}}

{{/* The chart's name: nameOverride or the chart's own. */}}
{{- define "crawl-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name: fullnameOverride, or the release
     name followed by the chart's name unless it already contains it.
     At most 50 characters, so suffixes such as -results keep Service names
     within 63. */}}
{{- define "crawl-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "crawl-operator.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "crawl-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | quote }}
app.kubernetes.io/part-of: crawl-operator
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ include "crawl-operator.selectorLabels" . }}
{{- end -}}

{{- define "crawl-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "crawl-operator.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{/* A map of labels as a manager flag: key=value,... sorted by key. */}}
{{- define "crawl-operator.labelsFlag" -}}
{{- $pairs := list -}}
{{- range $k, $v := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $k $v) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* The image by tag, and by digest too when the chart pins its own
(image.digest, with image.tag empty): the container runtime then pulls the
digest and the tag only names it. */}}
{{- define "crawl-operator.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- if and .Values.image.digest (not .Values.image.tag) -}}
{{- $ref = printf "%s@%s" $ref .Values.image.digest -}}
{{- end -}}
{{- $ref -}}
{{- end -}}

{{- define "crawl-operator.crawlerImage" -}}
{{- default (include "crawl-operator.image" .) .Values.crawler.image -}}
{{- end -}}

{{- define "crawl-operator.resultsURL" -}}
{{- printf "http://%s-results.%s.svc:%d" (include "crawl-operator.fullname" .) .Release.Namespace (int .Values.service.resultsPort) -}}
{{- end -}}
