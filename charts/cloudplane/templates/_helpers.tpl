{{/* The chart's name, at most 63 characters (a DNS label). */}}
{{- define "cloudplane.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of the release's objects: the release name, with the chart name unless it already holds it. */}}
{{- define "cloudplane.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator's pods; they never change across upgrades. */}}
{{- define "cloudplane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cloudplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object of the release. */}}
{{- define "cloudplane.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "cloudplane.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "cloudplane.serviceAccountName" -}}
{{- default (include "cloudplane.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The Secret holding the bootstrap API key. */}}
{{- define "cloudplane.secretName" -}}
{{- include "cloudplane.fullname" . -}}
{{- end -}}

{{- define "cloudplane.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Plural names of the chart's CRDs (group cloudplane.dev), read from crds/ so RBAC follows the generated files. */}}
{{- define "cloudplane.crdPlurals" -}}
{{- range $path, $_ := .Files.Glob "crds/*.yaml" }}
- {{ (($.Files.Get $path | fromYaml).spec.names.plural) }}
{{- end }}
{{- end -}}
