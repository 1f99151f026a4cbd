{{/*
trove.name: the chart's name, or nameOverride.
*/}}
{{- define "trove.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
trove.fullname: the objects' name: fullnameOverride, else the release name
(when it already contains the chart's name), else release-chart; at most 63
characters (a DNS label).
*/}}
{{- define "trove.fullname" -}}
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

{{/*
trove.chart: name-version for the helm.sh/chart label.
*/}}
{{- define "trove.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
trove.selectorLabels: the labels that select the pods (never change them
between releases: a selector is immutable).
*/}}
{{- define "trove.selectorLabels" -}}
app.kubernetes.io/name: {{ include "trove.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
trove.labels: the standard app.kubernetes.io labels every object carries.
*/}}
{{- define "trove.labels" -}}
helm.sh/chart: {{ include "trove.chart" . }}
{{ include "trove.selectorLabels" . }}
app.kubernetes.io/version: {{ include "trove.tag" . | quote }}
app.kubernetes.io/component: server
app.kubernetes.io/part-of: trove
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
trove.tag: the image tag: image.tag, else the chart's appVersion.
*/}}
{{- define "trove.tag" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
trove.postgres: whether the release runs on PostgreSQL (several nodes).
Renders "true" or "".
*/}}
{{- define "trove.postgres" -}}
{{- if eq .Values.database.driver "postgres" }}true{{ end }}
{{- end }}

{{/*
trove.databaseSecret: the name of the Secret holding the PostgreSQL URL: the
existing one, else the one the chart makes from database.postgres.url.
*/}}
{{- define "trove.databaseSecret" -}}
{{- .Values.database.postgres.existingSecret | default (printf "%s-database" (include "trove.fullname" .)) }}
{{- end }}

{{/*
trove.secureCookie: whether the console's cookie is marked Secure: asked for,
or an Ingress terminates TLS in front.
*/}}
{{- define "trove.secureCookie" -}}
{{- if or .Values.console.secureCookie (and .Values.ingress.enabled .Values.ingress.tls) }}true{{ else }}false{{ end }}
{{- end }}

{{/*
trove.validate: refuses, with fail, the combinations values.schema.json cannot
express clearly; templates/validate.yaml includes it.
*/}}
{{- define "trove.validate" -}}
{{- $pg := .Values.database.postgres }}
{{- if eq .Values.database.driver "sqlite" }}
{{- if ne (int .Values.replicas) 1 }}
{{- fail (printf "replicas=%v needs database.driver=postgres: on SQLite Trove is one node (a StatefulSet of 1 with its volume at /data). Set replicas=1, or database.driver=postgres with database.postgres.existingSecret to run several nodes." .Values.replicas) }}
{{- end }}
{{- if or $pg.existingSecret $pg.url }}
{{- fail "database.postgres.existingSecret and database.postgres.url are for database.driver=postgres: set the driver, or remove them (SQLite needs no URL)" }}
{{- end }}
{{- else }}
{{- if and $pg.existingSecret $pg.url }}
{{- fail "set database.postgres.existingSecret or database.postgres.url, never both: the URL is read from one Secret" }}
{{- end }}
{{- if not (or $pg.existingSecret $pg.url) }}
{{- fail "database.driver=postgres needs the PostgreSQL URL: database.postgres.existingSecret (the name of a Secret holding it under database.postgres.secretKey) or database.postgres.url" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
trove.podSpec: the pod of either mode (the workload templates differ only
around it).
*/}}
{{- define "trove.podSpec" -}}
{{- $scheme := ternary "HTTPS" "HTTP" (not (empty .Values.tls.existingSecret)) -}}
automountServiceAccountToken: false
enableServiceLinks: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  fsGroupChangePolicy: OnRootMismatch
  seccompProfile:
    type: RuntimeDefault
containers:
  - name: trove
    image: "{{ .Values.image.repository }}:{{ include "trove.tag" . }}"
    imagePullPolicy: {{ .Values.image.pullPolicy }}
    args:
      - serve
      {{- with .Values.extraArgs }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    env:
      - name: TROVE_DATA
        value: /data
      - name: TROVE_ADDR
        value: "0.0.0.0:7007"
      - name: TROVE_CONSOLE
        value: {{ .Values.console.enabled | quote }}
      - name: TROVE_CONSOLE_SECURE_COOKIE
        value: {{ include "trove.secureCookie" . | quote }}
      {{- if include "trove.postgres" . }}
      - name: TROVE_DATABASE
        valueFrom:
          secretKeyRef:
            name: {{ include "trove.databaseSecret" . }}
            key: {{ .Values.database.postgres.secretKey }}
      {{- end }}
      {{- if .Values.tls.existingSecret }}
      - name: TROVE_TLS_CERT
        value: /tls/tls.crt
      - name: TROVE_TLS_KEY
        value: /tls/tls.key
      {{- end }}
      {{- if .Values.model.existingSecret }}
      - name: ANTHROPIC_API_KEY
        valueFrom:
          secretKeyRef:
            name: {{ .Values.model.existingSecret }}
            key: {{ .Values.model.secretKey }}
      {{- end }}
      {{- with .Values.model.baseURL }}
      - name: ANTHROPIC_BASE_URL
        value: {{ . | quote }}
      {{- end }}
      {{- with .Values.extraEnv }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    ports:
      - name: http
        containerPort: 7007
        protocol: TCP
    startupProbe:
      httpGet:
        path: /healthz
        port: http
        scheme: {{ $scheme }}
      periodSeconds: {{ .Values.probes.startup.periodSeconds }}
      failureThreshold: {{ .Values.probes.startup.failureThreshold }}
    # Liveness asks only whether the process accepts connections: /healthz
    # fails while the database is unreachable, and restarting every pod
    # during a PostgreSQL outage would not bring it back (readiness takes
    # them out of the Service meanwhile).
    livenessProbe:
      tcpSocket:
        port: http
      periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
      timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
      failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
    readinessProbe:
      httpGet:
        path: /healthz
        port: http
        scheme: {{ $scheme }}
      periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
      timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
      failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
    securityContext:
      runAsNonRoot: true
      runAsUser: 65532
      runAsGroup: 65532
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      privileged: false
      capabilities:
        drop:
          - ALL
      seccompProfile:
        type: RuntimeDefault
    {{- with .Values.resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      - name: data
        mountPath: /data
      - name: tmp
        mountPath: /tmp
      {{- if .Values.tls.existingSecret }}
      - name: tls
        mountPath: /tls
        readOnly: true
      {{- end }}
volumes:
  {{- if include "trove.postgres" . }}
  # PostgreSQL holds the data; /data keeps only the first API key a node
  # makes on an empty database (also printed in its log).
  - name: data
    emptyDir:
      sizeLimit: 16Mi
  {{- end }}
  - name: tmp
    emptyDir:
      sizeLimit: 256Mi
  {{- if .Values.tls.existingSecret }}
  - name: tls
    secret:
      secretName: {{ .Values.tls.existingSecret }}
      defaultMode: 0440  # group 65532 (fsGroup) reads it
  {{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
trove.podMetadata: the pod template's labels and annotations; a checksum of
the chart-made database Secret rolls the pods when the URL changes.
*/}}
{{- define "trove.podMetadata" -}}
labels:
  {{- include "trove.labels" . | nindent 2 }}
  {{- with .Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $ann := dict }}
{{- if and (include "trove.postgres" .) .Values.database.postgres.url }}
{{- $_ := set $ann "checksum/database-secret" (include (print $.Template.BasePath "/secret.yaml") . | sha256sum) }}
{{- end }}
{{- $ann = merge $ann (.Values.podAnnotations | default dict) }}
{{- with $ann }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
