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
