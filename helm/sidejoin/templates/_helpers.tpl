{{/*
Names and labels.
*/}}
{{- define "sidejoin.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sidejoin.fullname" -}}
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

{{- define "sidejoin.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sidejoin.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sidejoin.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sidejoin.labels" -}}
helm.sh/chart: {{ include "sidejoin.chart" . }}
{{ include "sidejoin.selectorLabels" . }}
app.kubernetes.io/version: {{ include "sidejoin.version" . | quote }}
app.kubernetes.io/component: stream-join
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "sidejoin.version" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "sidejoin.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sidejoin.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "sidejoin.headlessName" -}}
{{- printf "%s-headless" (include "sidejoin.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
A duration value ("30s", "5m", "250ms", "2h", "1d") in whole seconds, rounded up.
*/}}
{{- define "sidejoin.durationSeconds" -}}
{{- $d := toString . }}
{{- $m := regexFindAll "^([0-9]+)(ms|s|m|h|d)?$" $d -1 }}
{{- if not $m }}
{{- fail (printf "processing.shutdownTimeout: %q is not a duration like 30s or 2m" $d) }}
{{- end }}
{{- $n := regexReplaceAll "^([0-9]+)(ms|s|m|h|d)?$" $d "${1}" | int64 }}
{{- $unit := regexReplaceAll "^([0-9]+)(ms|s|m|h|d)?$" $d "${2}" }}
{{- if eq $unit "ms" }}{{ div (add $n 999) 1000 }}
{{- else if eq $unit "m" }}{{ mul $n 60 }}
{{- else if eq $unit "h" }}{{ mul $n 3600 }}
{{- else if eq $unit "d" }}{{ mul $n 86400 }}
{{- else }}{{ $n }}
{{- end }}
{{- end }}

{{/*
terminationGracePeriodSeconds: above the shutdown timeout, so that Kubernetes never kills a pod
that is still draining and committing (SIGKILL after the grace period).
*/}}
{{- define "sidejoin.terminationGracePeriodSeconds" -}}
{{- $shutdown := include "sidejoin.durationSeconds" (.Values.processing.shutdownTimeout | default "30s") | int64 }}
{{- $given := .Values.processing.terminationGracePeriodSeconds }}
{{- if or (kindIs "invalid" $given) (eq (toString $given) "") }}
{{- add $shutdown 15 }}
{{- else if le (int64 $given) $shutdown }}
{{- fail (printf "processing.terminationGracePeriodSeconds (%v) must be above processing.shutdownTimeout (%v), or Kubernetes kills sidejoin while it drains" $given .Values.processing.shutdownTimeout) }}
{{- else }}
{{- int64 $given }}
{{- end }}
{{- end }}

{{/*
Whether a value is set: neither null nor "" (false and 0 are set).
*/}}
{{- define "sidejoin.isSet" -}}
{{- if and (not (kindIs "invalid" .)) (ne (toString .) "") }}true{{ end }}
{{- end }}

{{/*
A value as an environment string. Helm reads YAML numbers as floats: 52428800 would print as
5.24288e+07, so whole numbers are printed as integers.
*/}}
{{- define "sidejoin.string" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) }}{{ int64 . }}{{ else }}{{ toString . }}{{ end }}
{{- end }}

{{/*
A librdkafka property name as a SIDEJOIN_KAFKA_* suffix: socket.keepalive.enable ->
SOCKET_KEEPALIVE_ENABLE.
*/}}
{{- define "sidejoin.kafkaPropertyVar" -}}
{{- . | upper | replace "." "_" | replace "-" "_" }}
{{- end }}

{{/*
The SIDEJOIN_* variables with plain values, as a dict NAME -> value (unset values left out).
*/}}
{{- define "sidejoin.plainEnv" -}}
{{- $v := .Values }}
{{- $k := $v.kafka }}
{{- $j := $v.join }}
{{- $iv := $j.interval | default dict }}
{{- $o := $v.output }}
{{- $p := $v.processing }}
{{- $s := $v.state | default dict }}
{{- $appId := $k.applicationId | default (include "sidejoin.fullname" .) }}
{{- $pairs := list
  (list "SIDEJOIN_BOOTSTRAP_SERVERS" $k.bootstrapServers)
  (list "SIDEJOIN_APPLICATION_ID" $appId)
  (list "SIDEJOIN_AUTO_OFFSET_RESET" $k.autoOffsetReset)
  (list "SIDEJOIN_KAFKA_SECURITY_PROTOCOL" $k.securityProtocol)
  (list "SIDEJOIN_KAFKA_SASL_MECHANISMS" $k.sasl.mechanism)
  (list "SIDEJOIN_SCHEMA_REGISTRY_URL" $v.schemaRegistry.url)
  (list "SIDEJOIN_SCHEMA_REGISTRY_USERNAME" $v.schemaRegistry.username)
  (list "SIDEJOIN_SCHEMA_REGISTRY_TIMEOUT" $v.schemaRegistry.timeout)
  (list "SIDEJOIN_LEFT_TOPIC" $j.left.topic)
  (list "SIDEJOIN_RIGHT_TOPIC" $j.right.topic)
  (list "SIDEJOIN_JOIN_TYPE" $j.type)
  (list "SIDEJOIN_LEFT_KEY" $j.left.key)
  (list "SIDEJOIN_RIGHT_KEY" $j.right.key)
  (list "SIDEJOIN_LEFT_PRIMARY_KEY" $j.left.primaryKey)
  (list "SIDEJOIN_RIGHT_PRIMARY_KEY" $j.right.primaryKey)
  (list "SIDEJOIN_LEFT_FORMAT" $j.left.format)
  (list "SIDEJOIN_RIGHT_FORMAT" $j.right.format)
  (list "SIDEJOIN_DEDUP_LEFT" $j.left.dedup)
  (list "SIDEJOIN_DEDUP_RIGHT" $j.right.dedup)
  (list "SIDEJOIN_LEFT_STATE_TTL" $j.left.stateTtl)
  (list "SIDEJOIN_RIGHT_STATE_TTL" $j.right.stateTtl)
  (list "SIDEJOIN_LEFT_TIME" $j.left.time)
  (list "SIDEJOIN_RIGHT_TIME" $j.right.time)
  (list "SIDEJOIN_LEFT_HASH_BY" $j.left.hashBy)
  (list "SIDEJOIN_RIGHT_HASH_BY" $j.right.hashBy)
  (list "SIDEJOIN_SELECT" $j.select)
  (list "SIDEJOIN_NULL_KEYS_MATCH" $j.nullKeysMatch)
  (list "SIDEJOIN_ALLOW_GENERATED_RETRACTS" $j.allowGeneratedRetracts)
  (list "SIDEJOIN_STATE_TTL" $j.stateTtl)
  (list "SIDEJOIN_BROADCAST" $j.broadcast)
  (list "SIDEJOIN_INTERVAL_LOWER" $iv.lower)
  (list "SIDEJOIN_INTERVAL_UPPER" $iv.upper)
  (list "SIDEJOIN_WATERMARK_DELAY" $iv.watermarkDelay)
  (list "SIDEJOIN_ALLOWED_LATENESS" $iv.allowedLateness)
  (list "SIDEJOIN_IDLE_TIMEOUT" $iv.idleTimeout)
  (list "SIDEJOIN_MAX_WAIT" $iv.maxWait)
  (list "SIDEJOIN_OUTPUT_TOPIC" $o.topic)
  (list "SIDEJOIN_OUTPUT_MODE" $o.mode)
  (list "SIDEJOIN_OUTPUT_KEY" $o.key)
  (list "SIDEJOIN_OUTPUT_FORMAT" $o.format)
  (list "SIDEJOIN_OUTPUT_AVRO_SCHEMA" $o.avroSchema)
  (list "SIDEJOIN_ON_ERROR" $o.onError)
  (list "SIDEJOIN_DLQ_TOPIC" $o.dlqTopic)
  (list "SIDEJOIN_PROCESSING_GUARANTEE" $p.guarantee)
  (list "SIDEJOIN_COMMIT_INTERVAL" $p.commitInterval)
  (list "SIDEJOIN_MAX_TASK_IDLE" $p.maxTaskIdle)
  (list "SIDEJOIN_ON_COPARTITION_VIOLATION" $p.onCopartitionViolation)
  (list "SIDEJOIN_WORKERS" $p.workers)
  (list "SIDEJOIN_SHUTDOWN_TIMEOUT" $p.shutdownTimeout)
  (list "SIDEJOIN_LOG_FORMAT" $p.logFormat)
  (list "SIDEJOIN_STATE_BLOCK_CACHE_MB" $s.blockCacheMb)
  (list "SIDEJOIN_STATE_WRITE_BUFFER_MB" $s.writeBufferMb)
  (list "SIDEJOIN_STATE_CACHE_MB" $s.cacheMb)
}}
{{- /* Star joins: join.dimensions[0] is dim2, [1] dim3, … up to dim7 (values.schema.json: maxItems 6). */}}
{{- $dims := $j.dimensions | default list }}
{{- if gt (len $dims) 6 }}
{{- fail (printf "join.dimensions: %d dimensions, at most 6 (dim2 … dim7; join.right is the first)" (len $dims)) }}
{{- end }}
{{- range $i, $d := $dims }}
{{- $n := add $i 2 }}
{{- /* A bare on: key is the boolean true to Helm's YAML 1.1 parser: taken as on. */}}
{{- $on := $d.on }}
{{- if not (include "sidejoin.isSet" $on) }}{{ $on = index $d "true" }}{{ end }}
{{- $pairs = concat $pairs (list
  (list (printf "SIDEJOIN_DIM%d_TOPIC" $n) $d.topic)
  (list (printf "SIDEJOIN_DIM%d_KEY" $n) $d.key)
  (list (printf "SIDEJOIN_DIM%d_ON" $n) $on)
  (list (printf "SIDEJOIN_DIM%d_JOIN_TYPE" $n) $d.joinType)
  (list (printf "SIDEJOIN_DIM%d_PRIMARY_KEY" $n) $d.primaryKey)
  (list (printf "SIDEJOIN_DIM%d_FORMAT" $n) $d.format)
  (list (printf "SIDEJOIN_DEDUP_DIM%d" $n) $d.dedup)
  (list (printf "SIDEJOIN_DIM%d_STATE_TTL" $n) $d.stateTtl)
  (list (printf "SIDEJOIN_DIM%d_HASH_BY" $n) $d.hashBy)
) }}
{{- end }}
{{- $env := dict "SIDEJOIN_HTTP_ADDR" (printf "0.0.0.0:%v" $v.metrics.port) "SIDEJOIN_STATE_DIR" "/var/lib/sidejoin/state" }}
{{- if and (include "sidejoin.isSet" $k.sasl.username) (not $k.sasl.usernameSecret.name) }}
{{- $_ := set $env "SIDEJOIN_KAFKA_SASL_USERNAME" $k.sasl.username }}
{{- end }}
{{- if $k.tls.caSecret.name }}
{{- $_ := set $env "SIDEJOIN_KAFKA_SSL_CA_LOCATION" (printf "/etc/sidejoin/kafka-ca/%s" $k.tls.caSecret.key) }}
{{- end }}
{{- with ($v.schemaRegistry.caSecret | default dict) }}{{- if .name }}
{{- $_ := set $env "SIDEJOIN_SCHEMA_REGISTRY_CA_LOCATION" (printf "/etc/sidejoin/registry-ca/%s" (required "schemaRegistry.caSecret.key is required with schemaRegistry.caSecret.name" .key)) }}
{{- end }}{{- end }}
{{- range $pairs }}
{{- if include "sidejoin.isSet" (index . 1) }}
{{- $_ := set $env (index . 0) (include "sidejoin.string" (index . 1)) }}
{{- end }}
{{- end }}
{{- range $prefix, $props := dict "SIDEJOIN_KAFKA_" $k.properties "SIDEJOIN_KAFKA_CONSUMER_" $k.consumerProperties "SIDEJOIN_KAFKA_PRODUCER_" $k.producerProperties }}
{{- range $prop, $val := $props }}
{{- $name := printf "%s%s" $prefix (include "sidejoin.kafkaPropertyVar" $prop) }}
{{- if hasKey $env $name }}
{{- fail (printf "kafka properties: %q gives %s, which the chart already sets from its own value" $prop $name) }}
{{- end }}
{{- $_ := set $env $name (include "sidejoin.string" $val) }}
{{- end }}
{{- end }}
{{- range $name, $val := $v.env }}
{{- if hasKey $env $name }}
{{- fail (printf "env.%s: already set by the chart from its own value; set that value instead" $name) }}
{{- end }}
{{- $_ := set $env $name (include "sidejoin.string" $val) }}
{{- end }}
{{- toYaml $env }}
{{- end }}

{{/*
The container's env: plain values, then the pod name as the static member id, then secrets,
only ever through secretKeyRef, then extraEnv.
*/}}
{{- define "sidejoin.env" -}}
{{- $v := .Values }}
{{- $plain := include "sidejoin.plainEnv" . | fromYaml }}
{{- range $name, $val := $plain }}
- name: {{ $name }}
  value: {{ $val | quote }}
{{- end }}
{{- if $v.processing.staticMembership }}
- name: SIDEJOIN_INSTANCE_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}
{{- with $v.kafka.sasl.usernameSecret }}
{{- if .name }}
- name: SIDEJOIN_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ required "kafka.sasl.usernameSecret.key is required with kafka.sasl.usernameSecret.name" .key }}
{{- end }}
{{- end }}
{{- with $v.kafka.sasl.passwordSecret }}
{{- if .name }}
- name: SIDEJOIN_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ required "kafka.sasl.passwordSecret.key is required with kafka.sasl.passwordSecret.name" .key }}
{{- end }}
{{- end }}
{{- with $v.schemaRegistry.passwordSecret }}
{{- if .name }}
- name: SIDEJOIN_SCHEMA_REGISTRY_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .name }}
      key: {{ required "schemaRegistry.passwordSecret.key is required with schemaRegistry.passwordSecret.name" .key }}
{{- end }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The sidejoin container. Include it in your own pod (see helm/examples/sidecar-app) with a
context holding this chart's values: (dict "Values" .Values.sidejoin "Release" .Release "Chart" .Chart).
The state volume it mounts is named "state": take it from sidejoin.volumes or bring your own.
*/}}
{{- define "sidejoin.container" -}}
{{- $v := .Values -}}
name: sidejoin
image: "{{ $v.image.repository }}:{{ $v.image.tag | default .Chart.AppVersion }}"
imagePullPolicy: {{ $v.image.pullPolicy }}
args: ["run"]
ports:
  - name: http-metrics
    containerPort: {{ $v.metrics.port }}
    protocol: TCP
env:
{{- include "sidejoin.env" . | trim | nindent 2 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: http-metrics
  {{- toYaml $v.probes.liveness | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: http-metrics
  {{- toYaml $v.probes.readiness | nindent 2 }}
{{- with $v.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $v.securityContext | nindent 2 }}
volumeMounts:
  - name: state
    mountPath: /var/lib/sidejoin
  - name: tmp
    mountPath: /tmp
{{- if $v.kafka.tls.caSecret.name }}
  - name: kafka-ca
    mountPath: /etc/sidejoin/kafka-ca
    readOnly: true
{{- end }}
{{- if ($v.schemaRegistry.caSecret | default dict).name }}
  - name: registry-ca
    mountPath: /etc/sidejoin/registry-ca
    readOnly: true
{{- end }}
{{- with $v.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The pod volumes the container needs besides "state" (and "state" itself as an emptyDir when
persistence is off).
*/}}
{{- define "sidejoin.volumes" -}}
{{- $v := .Values -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- if not $v.persistence.enabled }}
- name: state
  emptyDir: {}
{{- end }}
{{- if $v.kafka.tls.caSecret.name }}
- name: kafka-ca
  secret:
    secretName: {{ $v.kafka.tls.caSecret.name }}
    items:
      - key: {{ $v.kafka.tls.caSecret.key }}
        path: {{ $v.kafka.tls.caSecret.key }}
{{- end }}
{{- with ($v.schemaRegistry.caSecret | default dict) }}{{- if .name }}
- name: registry-ca
  secret:
    secretName: {{ .name }}
    items:
      - key: {{ .key }}
        path: {{ .key }}
{{- end }}{{- end }}
{{- with $v.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}
