{{/* Chart name, truncated to the 63 characters of a label value. */}}
{{- define "aianalysis-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's objects. A release named like the chart (the usual
`helm install aianalysis-operator ...`) is not repeated: objects are named `aianalysis-operator`.
*/}}
{{- define "aianalysis-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "aianalysis-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "aianalysis-operator.labels" -}}
helm.sh/chart: {{ include "aianalysis-operator.chart" . }}
{{ include "aianalysis-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: aianalysis-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the operator's Pod (immutable in a Deployment: keep them few). */}}
{{- define "aianalysis-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "aianalysis-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "aianalysis-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "aianalysis-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "aianalysis-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
ANTHROPIC_API_KEY from the Secret. Required with provider anthropic (the operator refuses to start
without a key); optional with provider offline, so a missing Secret does not block the Pod.
*/}}
{{- define "aianalysis-operator.apiKeyEnv" -}}
{{- if and (eq .Values.provider "anthropic") (not .Values.apiKeySecret.name) }}
{{- fail "provider anthropic needs apiKeySecret.name: a Secret holding the Anthropic API key (kubectl create secret generic aianalysis-anthropic --from-literal=api-key=...)" }}
{{- end }}
{{- if .Values.apiKeySecret.name -}}
- name: ANTHROPIC_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.apiKeySecret.name }}
      key: {{ .Values.apiKeySecret.key }}
      optional: {{ ne .Values.provider "anthropic" }}
{{- end }}
{{- end }}

{{/* Labels on the executor's objects (its own component). */}}
{{- define "aianalysis-operator.executorLabels" -}}
helm.sh/chart: {{ include "aianalysis-operator.chart" . }}
app.kubernetes.io/name: {{ include "aianalysis-operator.name" . | trunc 54 }}-executor
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: executor
app.kubernetes.io/part-of: aianalysis-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
