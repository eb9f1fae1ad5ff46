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
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* ltiop's image: repository@digest when image.digest is set, else repository:tag (default: the appVersion). */}}
{{- define "ltiop.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
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

{{/* The ServiceAccount the pods run as: the chart's, or serviceAccount.name. */}}
{{- define "ltiop.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ltiop.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false: name the ServiceAccount ltiop runs as" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* True when the configuration turns dev mode on (http and loopback URLs accepted). */}}
{{- define "ltiop.devMode" -}}
{{- if (.Values.config | default dict).devMode }}true{{ end -}}
{{- end -}}

{{/*
ltiop.checkURL refuses, as the binary's configuration does (internal/urls.Check), a URL
that is not absolute https with a host and no user information (http only in dev mode).
Called with (list $ "publicUrl" value).
*/}}
{{- define "ltiop.checkURL" -}}
{{- $root := index . 0 -}}{{- $name := index . 1 -}}{{- $raw := index . 2 -}}
{{- $u := urlParse $raw -}}
{{- $scheme := lower $u.scheme -}}
{{- if and (eq $scheme "http") (not (include "ltiop.devMode" $root)) -}}
{{- fail (printf "%s %q must use https (http is accepted only with config.devMode: true)" $name $raw) -}}
{{- else if not (has $scheme (list "https" "http")) -}}
{{- fail (printf "%s %q must be an absolute https URL, e.g. https://lti.example.com" $name $raw) -}}
{{- else if or (not $u.host) $u.userinfo -}}
{{- fail (printf "%s %q must have a host and no user information" $name $raw) -}}
{{- end -}}
{{- end -}}

{{/* ltiop.validate refuses the values the binary would refuse at start (a crash loop). */}}
{{- define "ltiop.validate" -}}
{{- if not .Values.publicUrl -}}
{{- fail "publicUrl is required: the external https URL at which LMSs and browsers reach ltiop, e.g. --set publicUrl=https://lti.example.com" -}}
{{- end -}}
{{- include "ltiop.checkURL" (list . "publicUrl" .Values.publicUrl) -}}
{{- $pu := urlParse .Values.publicUrl -}}
{{- if or $pu.query $pu.fragment (contains "?" .Values.publicUrl) (contains "#" .Values.publicUrl) -}}
{{- fail (printf "publicUrl %q must not carry a query or fragment" .Values.publicUrl) -}}
{{- end -}}
{{- range $name := list "launchUrl" "deepLinkingUrl" "submissionReviewUrl" "noticeWebhookUrl" -}}
{{- with index $.Values $name -}}
{{- include "ltiop.checkURL" (list $ $name .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
