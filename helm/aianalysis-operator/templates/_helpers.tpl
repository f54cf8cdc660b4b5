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

{{/*
Settings of the bedrock, vertex and openai providers (credentials come from the platforms' own
chains; only the optional OpenAI-compatible API key is a Secret).
*/}}
{{- define "aianalysis-operator.platformEnv" -}}
{{- if and (eq .Values.provider "bedrock") (not .Values.bedrock.region) }}
{{- fail "provider bedrock needs bedrock.region (the AWS region of the Bedrock runtime)" }}
{{- end }}
{{- if and (eq .Values.provider "vertex") (not .Values.vertex.region) }}
{{- fail "provider vertex needs vertex.region (the Vertex AI region, e.g. us-east5)" }}
{{- end }}
{{- if and (eq .Values.provider "openai") (not .Values.openai.baseUrl) }}
{{- fail "provider openai needs openai.baseUrl (the OpenAI-compatible endpoint, e.g. http://vllm:8000/v1)" }}
{{- end }}
- name: AIANALYSIS_MODEL_CHECK
  value: {{ .Values.modelCheck | quote }}
{{- range $name, $value := dict "AIANALYSIS_AWS_REGION" .Values.bedrock.region "AIANALYSIS_BEDROCK_BASE_URL" .Values.bedrock.baseUrl "AIANALYSIS_VERTEX_REGION" .Values.vertex.region "AIANALYSIS_VERTEX_PROJECT_ID" .Values.vertex.projectId "AIANALYSIS_VERTEX_BASE_URL" .Values.vertex.baseUrl "AIANALYSIS_OPENAI_BASE_URL" .Values.openai.baseUrl }}
{{- if $value }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}
{{- if .Values.openai.apiKeySecret.name }}
- name: OPENAI_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.openai.apiKeySecret.name }}
      key: {{ .Values.openai.apiKeySecret.key }}
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

{{/* A map as comma-separated key=value pairs, keys sorted (AIANALYSIS_SIGNAL_TYPES). */}}
{{- define "aianalysis-operator.pairs" -}}
{{- $pairs := list -}}
{{- range $key, $value := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $key $value) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/*
Roles no remediation may bind besides the built-in ones (cluster-admin, admin, edit, system:*):
this release's own roles (binding its approver role is a self-approval) and privilegedRoles.
*/}}
{{- define "aianalysis-operator.privilegedRoles" -}}
{{- join "," (prepend .Values.privilegedRoles (printf "%s*" (include "aianalysis-operator.fullname" .))) -}}
{{- end }}
