{{/* Names, labels and the pieces the worker and scheduler pods share. */}}

{{- define "graphq.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-<chart>, or the release name alone when it already contains the chart name. */}}
{{- define "graphq.fullname" -}}
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

{{- define "graphq.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "graphq.selectorLabels" -}}
app.kubernetes.io/name: {{ include "graphq.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "graphq.labels" -}}
helm.sh/chart: {{ include "graphq.chart" . }}
{{ include "graphq.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: graphq
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of one component: (dict "ctx" $ "component" "worker"). */}}
{{- define "graphq.componentLabels" -}}
{{ include "graphq.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "graphq.componentSelector" -}}
{{ include "graphq.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "graphq.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The worker Deployments, oldest first, as a JSON list (read it with fromJsonArray): one per entry of
worker.versions, else one unversioned. Each: name (the entry's; "" unversioned), deployment (its name),
image, workflowVersions ({} unless given), takeNewRuns (true unless given), and replicas, concurrency, resources, extraEnv (the entry's,
else worker.*'s). */}}
{{- define "graphq.workerVersions" -}}
{{- $fullname := include "graphq.fullname" . }}
{{- $workers := list }}
{{- range $entry := .Values.worker.versions | default (list (dict "name" "")) }}
{{- if $.Values.worker.versions }}{{/* what the schema says, for --skip-schema-validation */}}
{{- if not (and (kindIs "map" $entry) $entry.name (kindIs "string" $entry.name)) }}
{{- fail (printf "graphq: worker.versions: an entry has no name (each needs name and image.tag): %s" (toJson $entry)) }}
{{- end }}
{{- if not (dig "image" "tag" "" $entry) }}
{{- fail (printf "graphq: worker.versions: the entry %q has no image.tag" $entry.name) }}
{{- end }}
{{- end }}
{{- range $workers }}
{{- if eq .name $entry.name }}
{{- fail (printf "graphq: worker.versions: the name %q is given twice (each entry is its own Deployment, %s-worker-%s)" .name $fullname .name) }}
{{- end }}
{{- end }}
{{- $w := dict "name" $entry.name "deployment" (printf "%s-worker" $fullname) "image" (include "graphq.image" $) }}
{{- with $entry.name }}
{{- $_ := set $w "deployment" (printf "%s-worker-%s" $fullname .) }}
{{- $_ = set $w "image" (printf "%s:%s" ($entry.image.repository | default $.Values.image.repository) $entry.image.tag) }}
{{- end }}
{{- $_ := set $w "workflowVersions" ($entry.workflowVersions | default dict) }}
{{- $_ = set $w "takeNewRuns" (ternary $entry.takeNewRuns true (hasKey $entry "takeNewRuns")) }}
{{- range $field := list "replicas" "concurrency" "resources" "extraEnv" }}
{{- $_ := set $w $field (ternary (get $entry $field) (get $.Values.worker $field) (hasKey $entry $field)) }}
{{- end }}
{{- $workers = append $workers $w }}
{{- end }}
{{- toJson $workers }}
{{- end }}

{{/* The name of the worker.versions entry whose image a component runs, (dict "ctx" $ "component" C), C
"scheduler" or "console": <C>.version, else the last entry's (the newest); "" without worker.versions (it
runs image). */}}
{{- define "graphq.componentVersion" -}}
{{- $names := list }}
{{- range .ctx.Values.worker.versions }}{{ $names = append $names .name }}{{ end }}
{{- with index .ctx.Values .component "version" }}
{{- if not (has . $names) }}
{{- fail (printf "graphq: %s.version=%q names no entry of worker.versions (%s): name one, or leave it empty for the last" $.component . (join ", " ($names | default (list "it is empty")))) }}
{{- end }}
{{- . }}
{{- else }}
{{- $names | last | default "" }}
{{- end }}
{{- end }}

{{/* The image a component runs, (dict "ctx" $ "component" C): that of its graphq.componentVersion. */}}
{{- define "graphq.componentImage" -}}
{{- $version := include "graphq.componentVersion" . }}
{{- range include "graphq.workerVersions" .ctx | fromJsonArray }}
{{- if eq .name $version }}{{ .image }}{{ end }}
{{- end }}
{{- end }}

{{/* The labels of one worker Deployment and its companions, and their selector: (dict "ctx" $ "worker" W),
W an element of graphq.workerVersions; a versioned one adds graphq.io/worker-version: <name>. */}}
{{- define "graphq.workerLabels" -}}
{{ include "graphq.componentLabels" (dict "ctx" .ctx "component" "worker") }}
{{- with .worker.name }}
graphq.io/worker-version: {{ . }}
{{- end }}
{{- end }}

{{- define "graphq.workerSelector" -}}
{{ include "graphq.componentSelector" (dict "ctx" .ctx "component" "worker") }}
{{- with .worker.name }}
graphq.io/worker-version: {{ . }}
{{- end }}
{{- end }}

{{- define "graphq.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "graphq.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "graphq.redisName" -}}
{{- printf "%s-redis" (include "graphq.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Where GRAPHQ_REDIS_URL comes from: the bundled Redis, else redis.url, else redis.existingSecret. */}}
{{- define "graphq.checkRedis" -}}
{{- if and .Values.redis.bundled.enabled .Values.redis.url }}
{{- fail "graphq: redis.url and redis.bundled.enabled=true are both set: the bundled Redis has its own URL, leave redis.url empty" }}
{{- end }}
{{- if not (or .Values.redis.bundled.enabled .Values.redis.url .Values.redis.existingSecret) }}
{{- fail "graphq: no Redis: set redis.existingSecret (a Secret holding the URL), redis.url, or redis.bundled.enabled=true" }}
{{- end }}
{{- end }}

{{/* True (non-empty) when the chart makes the URL Secret itself. */}}
{{- define "graphq.makesRedisSecret" -}}
{{- if or .Values.redis.bundled.enabled .Values.redis.url }}true{{ end }}
{{- end }}

{{- define "graphq.redisSecretName" -}}
{{- if include "graphq.makesRedisSecret" . }}
{{- printf "%s-redis-url" (include "graphq.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- .Values.redis.existingSecret }}
{{- end }}
{{- end }}

{{- define "graphq.redisSecretKey" -}}
{{- if include "graphq.makesRedisSecret" . }}redis-url{{ else }}{{ .Values.redis.existingSecretKey }}{{ end }}
{{- end }}

{{- define "graphq.redisUrl" -}}
{{- if .Values.redis.bundled.enabled }}
{{- printf "redis://%s:6379/0" (include "graphq.redisName" .) }}
{{- else }}
{{- .Values.redis.url }}
{{- end }}
{{- end }}

{{/* At most one worker autoscaler. */}}
{{- define "graphq.checkAutoscaling" -}}
{{- if and .Values.autoscaling.hpa.enabled .Values.autoscaling.keda.enabled }}
{{- fail "graphq: autoscaling.hpa.enabled and autoscaling.keda.enabled are both true: turn one off (KEDA makes its own HPA for the worker Deployment)" }}
{{- end }}
{{- if and .Values.autoscaling.keda.enabled (not .Values.autoscaling.keda.workflows) }}
{{- fail "graphq: autoscaling.keda.workflows is empty: list the workflows whose queues KEDA measures" }}
{{- end }}
{{- if and .Values.autoscaling.keda.enabled (not .Values.autoscaling.keda.address) (not .Values.redis.bundled.enabled) (not .Values.redis.url) }}
{{- fail "graphq: autoscaling.keda.address is empty: give host:port of Redis as KEDA reaches it (only the bundled Redis's and redis.url's are known)" }}
{{- end }}
{{- end }}

{{/* The worker pods' grace period: above the drain timeout by at least the 5 s a worker needs to end. */}}
{{- define "graphq.workerGrace" -}}
{{- $drain := .Values.worker.drainTimeoutSeconds | float64 }}
{{- $grace := .Values.worker.terminationGracePeriodSeconds }}
{{- if kindIs "invalid" $grace }}
{{- $grace = addf $drain .Values.worker.terminationGraceMarginSeconds | ceil }}
{{- end }}
{{- if lt ($grace | float64) (addf $drain 5) }}
{{- fail (printf "graphq: worker.terminationGracePeriodSeconds=%v must be at least worker.drainTimeoutSeconds + 5 = %v (a worker ends within its drain timeout plus about 4 s; a pod killed sooner loses the step it was finishing)" $grace (addf $drain 5)) }}
{{- end }}
{{- $grace | int64 }}
{{- end }}

{{/* A setting's value as the environment gets it: a whole number without exponent (values that came
through JSON, such as --set, are float64: 1000000 would print as 1e+06). */}}
{{- define "graphq.settingValue" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) }}{{ . | int64 }}{{ else }}{{ . | toString }}{{ end }}
{{- end }}

{{/* Environment of the graphq containers: the settings ConfigMap and the URL Secret. */}}
{{- define "graphq.envFrom" -}}
envFrom:
  - configMapRef:
      name: {{ include "graphq.fullname" . }}-config
{{- end }}

{{- define "graphq.redisEnv" -}}
- name: GRAPHQ_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "graphq.redisSecretName" . }}
      key: {{ include "graphq.redisSecretKey" . }}
{{- end }}

{{/* Pod annotations whose change restarts the pods: the settings and the URL the chart makes. */}}
{{- define "graphq.checksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if include "graphq.makesRedisSecret" . }}
checksum/redis-url: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end }}

{{/* prometheus.io annotations on a pod whose metrics listen on port (dict "ctx" $ "port" P). */}}
{{- define "graphq.scrapeAnnotations" -}}
{{- if .ctx.Values.metrics.podAnnotations -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/* A probe running `graphq health ARGS...`: (dict "args" (list ...) "probe" .Values.worker.livenessProbe). */}}
{{- define "graphq.healthProbe" -}}
exec:
  command:
    - graphq
    - health
    {{- range .args }}
    - {{ . }}
    {{- end }}
{{ toYaml .probe }}
{{- end }}

{{- define "graphq.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- end }}

{{/* The rules between settings that graphq checks at start (graphcore/settings.py Settings.check, the
scheduler's check_settings): a render that breaks one would crash every pod. Unset values take graphq's
defaults (graphq.settingDefaults; tests/test_chart_settings.py checks them against Settings). */}}
{{- define "graphq.settingDefaults" -}}
GRAPHQ_LEASE_TTL_S: 20
GRAPHQ_HEARTBEAT_INTERVAL_S: 5
GRAPHQ_RUN_TIMEOUT_S: 86400
GRAPHQ_MAX_RUN_TIMEOUT_S: 604800
GRAPHQ_SCHEDULER_INTERVAL_S: 1
GRAPHQ_SCHEDULER_GRACE_S: 60
GRAPHQ_ENABLE_CHECKPOINTING: true
GRAPHQ_RESUME_INTERRUPTED_RUNS: true
{{- end }}

{{- define "graphq.checkSettings" -}}
{{- $s := include "graphq.settingDefaults" . | fromYaml }}
{{- range $name, $value := .Values.config.settings }}{{ $_ := set $s $name $value }}{{ end }}
{{- $lease := float64 (toString $s.GRAPHQ_LEASE_TTL_S) }}
{{- with $s.GRAPHQ_THREAD_TTL_S }}
{{- if lt (float64 (toString .)) $lease }}
{{- fail (printf "graphq: config.settings: GRAPHQ_THREAD_TTL_S=%v must be at least GRAPHQ_LEASE_TTL_S=%v (a thread's keys must outlive the lease of its step)" . $s.GRAPHQ_LEASE_TTL_S) }}
{{- end }}
{{- end }}
{{- if ge (float64 (toString $s.GRAPHQ_HEARTBEAT_INTERVAL_S)) $lease }}
{{- fail (printf "graphq: config.settings: GRAPHQ_HEARTBEAT_INTERVAL_S=%v must be below GRAPHQ_LEASE_TTL_S=%v" $s.GRAPHQ_HEARTBEAT_INTERVAL_S $s.GRAPHQ_LEASE_TTL_S) }}
{{- end }}
{{- if gt (float64 (toString $s.GRAPHQ_RUN_TIMEOUT_S)) (float64 (toString $s.GRAPHQ_MAX_RUN_TIMEOUT_S)) }}
{{- fail (printf "graphq: config.settings: GRAPHQ_RUN_TIMEOUT_S=%v must not exceed GRAPHQ_MAX_RUN_TIMEOUT_S=%v" $s.GRAPHQ_RUN_TIMEOUT_S $s.GRAPHQ_MAX_RUN_TIMEOUT_S) }}
{{- end }}
{{- if and $s.GRAPHQ_MAX_CONCURRENT_RUNS $s.GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT }}
{{- if gt (float64 (toString $s.GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT)) (float64 (toString $s.GRAPHQ_MAX_CONCURRENT_RUNS)) }}
{{- fail (printf "graphq: config.settings: GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT=%v must not exceed GRAPHQ_MAX_CONCURRENT_RUNS=%v" $s.GRAPHQ_MAX_CONCURRENT_RUNS_PER_TENANT $s.GRAPHQ_MAX_CONCURRENT_RUNS) }}
{{- end }}
{{- end }}
{{- $off := list "false" "0" "no" "off" "f" "n" }}
{{- if and (has (lower (toString $s.GRAPHQ_ENABLE_CHECKPOINTING)) $off) (not (has (lower (toString $s.GRAPHQ_RESUME_INTERRUPTED_RUNS)) $off)) }}
{{- fail "graphq: config.settings: GRAPHQ_ENABLE_CHECKPOINTING=false cannot be combined with GRAPHQ_RESUME_INTERRUPTED_RUNS=true (its default): resuming an interrupted run needs its checkpoint history (set one of them the other way)" }}
{{- end }}
{{- if lt (float64 (toString $s.GRAPHQ_SCHEDULER_GRACE_S)) (float64 (toString $s.GRAPHQ_SCHEDULER_INTERVAL_S)) }}
{{- fail (printf "graphq: config.settings: GRAPHQ_SCHEDULER_GRACE_S=%v is below GRAPHQ_SCHEDULER_INTERVAL_S=%v: fires found on time by the next pass would count missed; make the grace at least the interval" $s.GRAPHQ_SCHEDULER_GRACE_S $s.GRAPHQ_SCHEDULER_INTERVAL_S) }}
{{- end }}
{{- end }}
