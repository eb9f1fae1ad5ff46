{{/* The base name of every object: the release name, with "-ltiop" unless it says ltiop already. */}}
{{- define "ltiop.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labels that select ltiop's pods. */}}
{{- define "ltiop.selectorLabels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{- define "ltiop.labels" -}}
{{ include "ltiop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ltiop.apiKeySecret" -}}
{{- default (printf "%s-api-key" (include "ltiop.fullname" .)) .Values.apiKey.existingSecret -}}
{{- end -}}

{{- define "ltiop.redisName" -}}
{{- printf "%s-redis" (include "ltiop.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* True when the bundled Redis is the replay store. */}}
{{- define "ltiop.bundledRedis" -}}
{{- if and .Values.replayStore.redis.enabled (not .Values.replayStore.url) }}true{{ end -}}
{{- end -}}

{{/* A Secret value that survives upgrades: the one in the cluster, else a new random one. */}}
{{- define "ltiop.keepRandom" -}}
{{- $existing := lookup "v1" "Secret" .ns .name -}}
{{- if and $existing (index $existing.data .key) -}}
{{- index $existing.data .key -}}
{{- else -}}
{{- randAlphaNum 48 | b64enc -}}
{{- end -}}
{{- end -}}
