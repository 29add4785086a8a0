{{- define "vap.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 50 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "vap.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "vap.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* image: repository:tag, or repository@digest when a digest pins it */}}
{{- define "vap.image" -}}
{{- if .image.digest -}}{{ .image.repository }}@{{ .image.digest }}{{- else -}}{{ .image.repository }}:{{ .image.tag | default .root.Chart.AppVersion }}{{- end -}}
{{- end -}}

{{- define "vap.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "vap.fullname" .)) -}}
{{- end -}}

{{- define "vap.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ .Values.serviceAccount.name | default (include "vap.fullname" .) }}{{- else -}}{{ .Values.serviceAccount.name | default "default" }}{{- end -}}
{{- end -}}

{{- define "vap.redisAddress" -}}
{{- .Values.redis.address | default (printf "%s-redis:6379" (include "vap.fullname" .)) -}}
{{- end -}}

{{- define "vap.deployRedis" -}}
{{- if and (or .Values.livekit.deploy .Values.sip.deploy) (not .Values.redis.address) }}true{{ end -}}
{{- end -}}

{{/* The LiveKit API URL the control plane and workers use, and the one browsers get. */}}
{{- define "vap.livekitUrl" -}}
{{- if .Values.livekit.deploy -}}http://{{ include "vap.fullname" . }}-livekit:{{ .Values.livekit.port }}{{- else -}}{{ required "livekit.url is required when livekit.deploy is false" .Values.livekit.url }}{{- end -}}
{{- end -}}

{{/* Environment shared by the control plane, the migration job and the workers (secrets come from envFrom). */}}
{{- define "vap.commonEnv" -}}
- name: NODE_ENV
  value: production
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: AGENT_NAME
  value: {{ .Values.agentName | quote }}
- name: LIVEKIT_URL
  value: {{ include "vap.livekitUrl" . | quote }}
{{- if .Values.postgresql.deploy }}
- name: DATABASE_URL
  value: "postgres://vap:$(POSTGRES_PASSWORD)@{{ include "vap.fullname" . }}-postgresql:5432/vap"
{{- end }}
{{- end -}}

{{/* Secret keys every pod reads. */}}
{{- define "vap.envFrom" -}}
- secretRef:
    name: {{ include "vap.secretName" . }}
{{- end -}}

{{- define "vap.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "vap.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}
