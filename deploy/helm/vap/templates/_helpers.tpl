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

{{/* The media workers' Secret: WORKER_TOKEN, the LiveKit keys and the fallback provider keys only. */}}
{{- define "vap.workerSecretName" -}}
{{- if .Values.secrets.existingSecret -}}
{{- required "secrets.existingWorkerSecret is required with secrets.existingSecret: the workers' own Secret (WORKER_TOKEN, LIVEKIT_API_KEY, LIVEKIT_API_SECRET, provider keys), without MASTER_KEY or database credentials" .Values.secrets.existingWorkerSecret -}}
{{- else -}}
{{- printf "%s-media-worker" (include "vap.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/*
The chart-made secret values (base64), as YAML: given in values, else read back from the cluster, else generated.
Computed once per render and kept in .Values, so the control plane's and the workers' Secrets get the same token
and LiveKit keys.
*/}}
{{- define "vap.secretValues" -}}
{{- if not (hasKey .Values "__vapSecretValues") -}}
{{- $old := (lookup "v1" "Secret" .Release.Namespace (include "vap.secretName" .)).data | default dict -}}
{{- $s := .Values.secrets -}}
{{- $v := dict -}}
{{- $_ := set $v "MASTER_KEY" (ternary ($s.masterKey | b64enc) (index $old "MASTER_KEY" | default (randBytes 32 | b64enc)) (not (empty $s.masterKey))) -}}
{{- $_ := set $v "WORKER_TOKEN" (ternary ($s.workerToken | b64enc) (index $old "WORKER_TOKEN" | default (randAlphaNum 48 | b64enc)) (not (empty $s.workerToken))) -}}
{{- $_ := set $v "LIVEKIT_API_KEY" (ternary ($s.livekitApiKey | b64enc) (index $old "LIVEKIT_API_KEY" | default (printf "API%s" (randAlphaNum 12) | b64enc)) (not (empty $s.livekitApiKey))) -}}
{{- $_ := set $v "LIVEKIT_API_SECRET" (ternary ($s.livekitApiSecret | b64enc) (index $old "LIVEKIT_API_SECRET" | default (randAlphaNum 48 | b64enc)) (not (empty $s.livekitApiSecret))) -}}
{{- $_ := set $v "POSTGRES_PASSWORD" (ternary ((.Values.postgresql.password | default "") | b64enc) (index $old "POSTGRES_PASSWORD" | default (randAlphaNum 32 | b64enc)) (not (empty .Values.postgresql.password))) -}}
{{- $_ := set $v "REDIS_PASSWORD" (ternary (($s.redisPassword | default "") | b64enc) (index $old "REDIS_PASSWORD" | default (randAlphaNum 32 | b64enc)) (not (empty $s.redisPassword))) -}}
{{- $_ := set .Values "__vapSecretValues" $v -}}
{{- end -}}
{{- toYaml (get .Values "__vapSecretValues") -}}
{{- end -}}

{{/* Whether Redis has a password (REDIS_PASSWORD in the Secret): the bundled one always; an external one when secrets.redisPassword is set. */}}
{{- define "vap.redisAuth" -}}
{{- if or (include "vap.deployRedis" .) .Values.secrets.redisPassword }}true{{ end -}}
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
{{- end -}}

{{/* The bundled database's URL, for the control plane and the migration job only (never the workers). */}}
{{- define "vap.databaseEnv" -}}
{{- if .Values.postgresql.deploy }}
- name: DATABASE_URL
  value: "postgres://vap:$(POSTGRES_PASSWORD)@{{ include "vap.fullname" . }}-postgresql:5432/vap"
{{- end }}
{{- end -}}

{{/* The control plane's Secret (the control plane and the migration job). */}}
{{- define "vap.envFrom" -}}
- secretRef:
    name: {{ include "vap.secretName" . }}
{{- end -}}

{{/* The media workers' Secret: no MASTER_KEY, no database credentials. */}}
{{- define "vap.workerEnvFrom" -}}
- secretRef:
    name: {{ include "vap.workerSecretName" . }}
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

{{/* What both the control plane and the workers reach: DNS, LiveKit's API, the internet on the listed ports
     (public addresses only: the private ranges are carved out, so a tenant's URL cannot reach the cluster even
     if the SSRF guard were bypassed), and the private ranges the operator lists (LLM_PRIVATE_HOSTS' LAN boxes,
     an external PostgreSQL, S3 endpoint or OTLP collector). */}}
{{- define "vap.egressCommon" -}}
{{- $eg := .np.egress -}}
- to:
    - namespaceSelector:
        matchLabels:
          {{- toYaml $eg.dnsNamespaceSelector | nindent 10 }}
      podSelector:
        matchLabels:
          {{- toYaml $eg.dnsPodSelector | nindent 10 }}
  ports:
    - { port: 53, protocol: UDP }
    - { port: 53, protocol: TCP }
- ports:
    - { port: {{ .lkPort }}, protocol: TCP }
{{- if $eg.internetPorts }}
- to:
    - ipBlock:
        cidr: 0.0.0.0/0
        except: [10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 169.254.0.0/16, 127.0.0.0/8, 0.0.0.0/8]
    - ipBlock:
        cidr: "::/0"
        except: ["fc00::/7", "fe80::/10", "::1/128", "::ffff:0:0/96"]
  ports:
    {{- range $eg.internetPorts }}
    - { port: {{ . }}, protocol: TCP }
    {{- end }}
{{- end }}
{{- range $eg.privateCidrs }}
- to:
    - ipBlock: { cidr: {{ . | quote }} }
{{- end }}
{{- end }}
