{{/*
Environment of the Alertmanager intake and the LLM budget (added to the operator container).
*/}}
{{- define "aianalysis-operator.intakeEnv" -}}
- name: AIANALYSIS_LLM_BUDGET_CONVERSATIONS_PER_HOUR
  value: {{ if kindIs "invalid" .Values.llmBudget.conversationsPerHour }}"unlimited"{{ else }}{{ .Values.llmBudget.conversationsPerHour | int64 | quote }}{{ end }}
- name: AIANALYSIS_LLM_BUDGET_TOKENS_PER_DAY
  value: {{ if kindIs "invalid" .Values.llmBudget.tokensPerDay }}"unlimited"{{ else }}{{ .Values.llmBudget.tokensPerDay | int64 | quote }}{{ end }}
{{- if .Values.llmBudget.persist }}
- name: AIANALYSIS_LLM_BUDGET_NAMESPACE
  value: {{ .Release.Namespace | quote }}
{{- end }}
{{- if .Values.intake.enabled }}
{{- if not .Values.intake.tokenSecret.name }}
{{- fail "intake.enabled needs intake.tokenSecret.name: a Secret holding the bearer token Alertmanager sends (kubectl create secret generic aianalysis-intake --from-literal=token=...)" }}
{{- end }}
- name: AIANALYSIS_INTAKE_PORT
  value: {{ .Values.intake.port | quote }}
- name: AIANALYSIS_INTAKE_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .Values.intake.tokenSecret.name }}
      key: {{ .Values.intake.tokenSecret.key }}
- name: AIANALYSIS_INTAKE_COOLDOWN
  value: {{ .Values.intake.cooldown | quote }}
- name: AIANALYSIS_INTAKE_QUEUE_LIMIT
  value: {{ .Values.intake.queueLimit | quote }}
- name: AIANALYSIS_INTAKE_MAPPING_FILE
  value: /etc/aianalysis/intake/mapping.yaml
{{- if .Values.intake.tls.secretName }}
- name: AIANALYSIS_INTAKE_TLS_CERT_FILE
  value: /etc/aianalysis/intake-tls/tls.crt
- name: AIANALYSIS_INTAKE_TLS_KEY_FILE
  value: /etc/aianalysis/intake-tls/tls.key
{{- else if .Values.intake.tls.allowPlainHttp }}
- name: AIANALYSIS_INTAKE_ALLOW_PLAIN_HTTP
  value: "true"
{{- else }}
{{- fail "intake.enabled needs intake.tls.secretName: a kubernetes.io/tls Secret (tls.crt, tls.key; e.g. from cert-manager) the receiver serves HTTPS with, so the bearer token never crosses in the clear (intake.tls.allowPlainHttp: true for a development cluster)" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The mapping file: the values' overrides, with Node alerts analysed in the release namespace.
*/}}
{{- define "aianalysis-operator.intakeMapping" -}}
{{- $namespaces := .Values.intake.namespaces | default (.Values.intake.mapping.namespaces | default list) -}}
{{- if not $namespaces }}
{{- fail "intake.enabled needs intake.namespaces: the namespaces alerts may open analyses in (e.g. [shop, payments]), or [\"*\"] for any namespace" }}
{{- end }}
{{- $mapping := merge (dict "namespaces" $namespaces) (deepCopy .Values.intake.mapping) (dict "clusterScopedNamespace" .Release.Namespace) -}}
{{- toYaml $mapping }}
{{- end }}
