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

{{/* The ClusterRole of the operator's rights in a team namespace: bound there by the operator, never cluster-wide. */}}
{{- define "cloudplane.teamNamespaceRole" -}}
{{- printf "%s-team-namespace" (include "cloudplane.fullname" .) -}}
{{- end -}}

{{- define "cloudplane.serviceAccountName" -}}
{{- default (include "cloudplane.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The chart's own Secret (the generated or given bootstrap key, the S3 keys). */}}
{{- define "cloudplane.secretName" -}}
{{- include "cloudplane.fullname" . -}}
{{- end -}}

{{/* The Secret the operator reads the bootstrap API key from: yours (bootstrapApiKeySecret.existingSecret) or the chart's. */}}
{{- define "cloudplane.bootstrapSecretName" -}}
{{- .Values.bootstrapApiKeySecret.existingSecret | default (include "cloudplane.secretName" .) -}}
{{- end -}}

{{/* The key of the bootstrap API key in that Secret. */}}
{{- define "cloudplane.bootstrapSecretKey" -}}
{{- ternary .Values.bootstrapApiKeySecret.key "bootstrap-api-key" (ne .Values.bootstrapApiKeySecret.existingSecret "") -}}
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

{{/* Labels of the chart's `helm test` Pod (not the operator's selector: the Service must not send it traffic). */}}
{{- define "cloudplane.testSelectorLabels" -}}
app.kubernetes.io/name: {{ include "cloudplane.name" . }}-test
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
