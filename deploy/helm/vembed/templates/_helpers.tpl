{{/* Names and labels shared by the templates. */}}
{{- define "vembed.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "vembed.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/part-of: vembed
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "vembed.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "vembed.modelsClaim" -}}
{{- .Values.models.existingClaim | default (printf "%s-models" (include "vembed.fullname" .)) -}}
{{- end -}}

{{/* The shared cache's URL: the chart's Valkey, or cache.url. */}}
{{- define "vembed.cacheURL" -}}
{{- if .Values.valkey.enabled -}}
redis://{{ include "vembed.fullname" . }}-valkey:6379/0
{{- else -}}
{{- .Values.cache.url -}}
{{- end -}}
{{- end -}}

{{/*
The pod spec of a vembed server; dict: root (the chart's context), role
(lm or encoder), values (.Values.lm or .Values.encoder).
*/}}
{{- define "vembed.podSpec" -}}
{{- $root := .root -}}
{{- $v := .values -}}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- if $root.Values.model.pull }}
initContainers:
  - name: pull
    image: {{ include "vembed.image" $root }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args: ["pull", "--include", {{ $root.Values.model.file | quote }}, "--include", {{ $root.Values.model.mmproj | quote }}, {{ $root.Values.model.repo | quote }}]
    env:
      - name: HF_HOME
        value: /models/hf
      {{- if $root.Values.model.hfTokenSecret }}
      - name: HF_TOKEN
        valueFrom:
          secretKeyRef:
            name: {{ $root.Values.model.hfTokenSecret }}
            key: token
            optional: true
      {{- end }}
    securityContext:
      {{- toYaml $root.Values.containerSecurityContext | nindent 6 }}
    volumeMounts:
      - name: models
        mountPath: /models
{{- end }}
containers:
  - name: vembed
    image: {{ include "vembed.image" $root }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args:
      - serve
      - --addr=0.0.0.0:8080
      {{- if $root.Values.model.pull }}
      - --model=hf://{{ $root.Values.model.repo }}/{{ $root.Values.model.file }}
      - --mmproj=hf://{{ $root.Values.model.repo }}/{{ $root.Values.model.mmproj }}
      {{- else }}
      - --model=/models/{{ $root.Values.model.file }}
      - --mmproj=/models/{{ $root.Values.model.mmproj }}
      {{- end }}
      - --role={{ .role }}
      {{- with include "vembed.cacheURL" $root }}
      - --cache-url={{ . }}
      {{- end }}
      {{- with $root.Values.cache.ttl }}
      - --cache-ttl={{ . }}
      {{- end }}
      {{- if and (eq .role "lm") $root.Values.encoder.enabled }}
      - --encoder-url=http://{{ include "vembed.fullname" $root }}-encoder:8080
      - --encoder-timeout={{ $root.Values.encoder.timeout }}
      {{- end }}
      - --metrics-public
      {{- if $root.Values.apiKeysSecret }}
      - --api-key-file=/secrets/api-keys
      {{- end }}
      {{- range $v.extraArgs }}
      - {{ . }}
      {{- end }}
    env:
      - name: HF_HOME
        value: /models/hf
      - name: HF_HUB_OFFLINE
        value: "1"
      {{- if $root.Values.apiKeysSecret }}
      - name: VEMBED_ENCODER_API_KEY
        valueFrom:
          secretKeyRef:
            name: {{ $root.Values.apiKeysSecret }}
            key: encoder-key
            optional: true
      {{- end }}
    ports:
      - name: http
        containerPort: 8080
    # The model loads before the server listens: a startup probe gives it
    # ten minutes, then readiness and liveness take over.
    startupProbe:
      httpGet:
        path: /health
        port: http
      periodSeconds: 5
      failureThreshold: 120
    readinessProbe:
      httpGet:
        path: /health
        port: http
      periodSeconds: 5
    livenessProbe:
      httpGet:
        path: /health
        port: http
      periodSeconds: 20
      failureThreshold: 6
    resources:
      {{- toYaml $v.resources | nindent 6 }}
    securityContext:
      {{- toYaml $root.Values.containerSecurityContext | nindent 6 }}
    volumeMounts:
      - name: models
        mountPath: /models
        readOnly: true
      - name: tmp
        mountPath: /tmp
      {{- if $root.Values.apiKeysSecret }}
      - name: api-keys
        mountPath: /secrets
        readOnly: true
      {{- end }}
# Running requests get the server's 30 s shutdown grace.
terminationGracePeriodSeconds: 45
volumes:
  - name: models
    persistentVolumeClaim:
      claimName: {{ include "vembed.modelsClaim" $root }}
  - name: tmp
    emptyDir: {}
  {{- if $root.Values.apiKeysSecret }}
  - name: api-keys
    secret:
      secretName: {{ $root.Values.apiKeysSecret }}
  {{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A Deployment, its Service and its autoscaler; dict as podSpec. */}}
{{- define "vembed.server" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- $name := printf "%s-%s" (include "vembed.fullname" $root) .role -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  labels:
    {{- include "vembed.labels" $root | nindent 4 }}
    app.kubernetes.io/name: {{ $name }}
    app.kubernetes.io/component: {{ .role }}
spec:
  {{- if not $v.autoscaling.enabled }}
  replicas: {{ $v.replicas }}
  {{- end }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ $root.Release.Name }}
      app.kubernetes.io/name: {{ $name }}
  template:
    metadata:
      labels:
        {{- include "vembed.labels" $root | nindent 8 }}
        app.kubernetes.io/name: {{ $name }}
        app.kubernetes.io/component: {{ .role }}
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: "8080"
        prometheus.io/path: /metrics
    spec:
      {{- include "vembed.podSpec" . | nindent 6 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ if eq .role "lm" }}{{ include "vembed.fullname" $root }}{{ else }}{{ $name }}{{ end }}
  labels:
    {{- include "vembed.labels" $root | nindent 4 }}
spec:
  selector:
    app.kubernetes.io/instance: {{ $root.Release.Name }}
    app.kubernetes.io/name: {{ $name }}
  ports:
    - name: http
      port: {{ if eq .role "lm" }}80{{ else }}8080{{ end }}
      targetPort: http
{{- if $v.autoscaling.enabled }}
---
# Scales on the engine's queue depth (vembed_engine_queued_requests from
# /metrics), which the Prometheus adapter must serve as a per-pod custom
# metric of that name.
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $name }}
  labels:
    {{- include "vembed.labels" $root | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $name }}
  minReplicas: {{ $v.autoscaling.minReplicas }}
  maxReplicas: {{ $v.autoscaling.maxReplicas }}
  metrics:
    - type: Pods
      pods:
        metric:
          name: vembed_engine_queued_requests
        target:
          type: AverageValue
          averageValue: {{ $v.autoscaling.queuedRequestsPerPod | quote }}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 300
{{- end }}
{{- end -}}
