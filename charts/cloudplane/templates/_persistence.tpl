{{/*
The PersistentVolumeClaim that holds the data directory, or nothing when that is an emptyDir.
Only the embedded event bus (no nats.url) keeps there what must outlive the pod: its event
log and its consumers' positions. With persistence enabled it gets a claim: yours
(existingClaim) or the chart's.
*/}}
{{- define "cloudplane.dataClaimName" -}}
{{- if and .Values.persistence.enabled (not .Values.nats.url) -}}
{{- .Values.persistence.existingClaim | default (printf "%s-data" (include "cloudplane.fullname" .)) -}}
{{- end -}}
{{- end -}}
