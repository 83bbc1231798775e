#!/usr/bin/env bash
# scripts/kafka.sh - a real single-node Apache Kafka 4.x broker (KRaft, combined
# broker+controller) for sidejoin's tests and CI, without Docker.
#
# The Kafka jars come from Maven Central through `mvn` (dependency plugin) and
# are cached per version; the broker runs from that class path with the local
# JDK (17+). Its configuration files are the templates in scripts/kafka/; the
# topic, produce and consume commands are examples/kafka_tool.rs (rdkafka).
#
# USAGE
#   scripts/kafka.sh fetch
#       Download the jars into $LOCAL_KAFKA_HOME/<version>/libs (default
#       $HOME/.cache/sidejoin-kafka/4.1.1/libs). Idempotent: a marker file is
#       written only after a complete download, so an interrupted one is retried.
#       scripts/kafka/pom.xml is copied next to libs/ and run there.
#
#   scripts/kafka.sh start DIR [broker.key=value ...]
#       Fetch if needed, pick two free loopback ports, write the config into DIR
#       (created if missing), format the storage, start the broker in the
#       background (its own session; pid in DIR/kafka.pid, stdout/stderr in
#       DIR/kafka.log, log4j output in DIR/logs/server.log), wait until it
#       answers metadata requests (timeout $LOCAL_KAFKA_START_TIMEOUT, 90 s),
#       write "127.0.0.1:PORT" to DIR/bootstrap and print it on stdout.
#       DIR/server.properties comes from scripts/kafka/server.properties; extra
#       key=value arguments are appended to it (they win).
#       Starting again in a DIR whose broker was stopped keeps its data and,
#       when they are still free, its ports (a broker restart).
#       On failure the tail of the logs goes to stderr and the exit code is 1.
#       With LOCAL_KAFKA_SASL_SSL=1 the broker also has a SASL_SSL listener
#       (SCRAM-SHA-512 over TLS) on a third port, beside the PLAINTEXT one: at the
#       first start a CA and a broker certificate (127.0.0.1, localhost) are made
#       with openssl into DIR/tls/, and the SCRAM user "sidejoin" with a random
#       password is created when the storage is formatted. Written for clients:
#       DIR/sasl/bootstrap ("127.0.0.1:PORT"), DIR/sasl/ca.pem (the CA to
#       trust), DIR/sasl/username and DIR/sasl/password (mode 600).
#
#   scripts/kafka.sh stop DIR
#       SIGTERM the broker of DIR, wait up to 20 s, then SIGKILL. Succeeds when
#       it is not running.
#
#   scripts/kafka.sh topic DIR NAME PARTITIONS [key=value ...]
#   scripts/kafka.sh produce DIR TOPIC  < "KEY<TAB>VALUE" lines
#   scripts/kafka.sh consume DIR TOPIC MAX_MESSAGES [TIMEOUT_MS]
#       examples/kafka_tool.rs against the broker of DIR (its doc comment says
#       what each does): create a topic (succeeds if it exists), produce one
#       record per line (an empty KEY or VALUE is null), print the records from
#       the beginning ("null" for null). The binary is
#       $CARGO_TARGET_DIR/release/examples/kafka_tool (default target dir
#       ~/.cache/sidejoin-target), built with cargo when it is missing.
#
#   scripts/kafka.sh with-broker -- CMD [ARGS...]
#       Start a broker in a fresh temp dir, export
#       TEST_KAFKA_BOOTSTRAP=127.0.0.1:PORT and TEST_KAFKA_DIR=<dir> (and, with
#       LOCAL_KAFKA_SASL_SSL=1, TEST_KAFKA_SASL_BOOTSTRAP, TEST_KAFKA_SASL_CA,
#       TEST_KAFKA_SASL_USERNAME and TEST_KAFKA_SASL_PASSWORD from DIR/sasl/),
#       run CMD in the foreground, then always stop the broker and delete the
#       dir (EXIT/INT/TERM trap) and exit with CMD's exit code. (Ctrl-C reaches
#       CMD and this script alike; a TERM sent to this script alone is acted on
#       once CMD has ended, as bash defers traps for a foreground child.)
#       e.g. scripts/kafka.sh with-broker -- cargo test --release --features broker-tests --test broker
#
# ENVIRONMENT
#   LOCAL_KAFKA_HOME           jar cache root (default $HOME/.cache/sidejoin-kafka)
#   LOCAL_KAFKA_VERSION        Kafka version (default 4.1.1; 4.x only)
#   LOCAL_KAFKA_HEAP_OPTS      broker heap flags (default "-Xms256m -Xmx768m")
#   LOCAL_KAFKA_JVM_OPTS       other broker JVM flags (default "-XX:+UseG1GC
#                                 -XX:MaxGCPauseMillis=20 -XX:TieredStopAtLevel=1";
#                                 C1-only JIT halves startup CPU; for benchmarks
#                                 against this broker drop TieredStopAtLevel)
#   LOCAL_KAFKA_CDS            1 (default): record/use AppCDS archives under
#                                 <version>/cds so JVMs start ~2x faster; 0: off
#   LOCAL_KAFKA_START_TIMEOUT  seconds to wait for readiness (default 90)
#   LOCAL_KAFKA_ISOLATION      consume isolation level (default read_committed)
#   LOCAL_KAFKA_SASL_SSL       1: add the SASL_SSL listener (see start; needs openssl)
#   CARGO_TARGET_DIR           where kafka_tool is (default ~/.cache/sidejoin-target)
#   JAVA_HOME                     JDK to use (else `java` on PATH)
#
# NOTES
#   - Linux only (uses /proc, setsid, flock); needs bash, mvn, java 17+ and
#     python3 (port picking, cluster ids).
#   - The broker listens on 127.0.0.1 only. Topics are never auto-created.
#   - The SASL_SSL listener authenticates but does not authorise (no authorizer):
#     it is there to prove the handshake, a wrong password, and TLS trust.
#   - Test-friendly defaults: 8 MiB segments, cleaner backoff 1 s, 4 partitions
#     for the internal offsets/transaction topics, no initial rebalance delay.
#   - Several brokers (different DIRs) can run at once; each gets its own ports.
#   - A second start after the first fetch takes only a few seconds. The very
#     first broker stop after a fetch takes ~5 s longer (it writes the broker's
#     class-data archive).
#   - Disk: ~43 MB of jars plus ~150 MB of class-data archives per version.

set -euo pipefail

readonly KAFKA_VERSION="${LOCAL_KAFKA_VERSION:-4.1.1}"
readonly LOG4J_VERSION="2.24.3"            # what Kafka 4.1 itself ships with (kafka/pom.xml)
readonly DEPENDENCY_PLUGIN_VERSION="3.8.1" # org.apache.maven.plugins:maven-dependency-plugin
readonly KAFKA_CACHE_ROOT="${LOCAL_KAFKA_HOME:-${HOME:-/tmp}/.cache/sidejoin-kafka}"
readonly VERSION_DIR="${KAFKA_CACHE_ROOT}/${KAFKA_VERSION}"
readonly LIBS_DIR="${VERSION_DIR}/libs"
readonly FETCH_MARKER="${VERSION_DIR}/.fetch-complete"
# Written once the jars were checked against Maven Central's published SHA-1s (lib/checksums.sh).
readonly SUMS_MARKER="${VERSION_DIR}/.sums-verified"
readonly START_TIMEOUT="${LOCAL_KAFKA_START_TIMEOUT:-90}"
readonly STOP_TIMEOUT=20

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
# shellcheck source=lib/local-service.sh
source "$(dirname "$SELF")/lib/local-service.sh"
# shellcheck source=lib/checksums.sh
source "$(dirname "$SELF")/lib/checksums.sh"
readonly SELF
# Configuration templates and the pom, beside this script.
readonly FILES="$(dirname "$SELF")/kafka"

if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
  JAVA="${JAVA_HOME}/bin/java"
else
  JAVA="java"
fi
readonly JAVA

# JVM flags for the short-lived CLI tools (storage format, readiness probe):
# small heap, fast startup; log4j's shutdown hook off so that errors logged while
# the JVM exits still reach stderr.
readonly TOOL_JVM_OPTS=(-Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Djava.awt.headless=true -Dlog4j2.shutdownHookEnabled=false)

log() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() {
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$SELF" >&2
  exit 2
}

# ---------------------------------------------------------------- fetch ----

fetch_complete() {
  [[ -f "$FETCH_MARKER" && -f "${LIBS_DIR}/kafka_2.13-${KAFKA_VERSION}.jar" ]]
}

cmd_fetch() {
  if fetch_complete; then
    verify_cache_once "$SUMS_MARKER" "$LIBS_DIR"/*.jar
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (needed to fetch the Kafka jars)"
  mkdir -p "$VERSION_DIR"
  # Serialise concurrent fetches (e.g. two brokers started at once).
  local lock_fd
  exec {lock_fd}>"${VERSION_DIR}/.lock"
  if command -v flock >/dev/null 2>&1; then
    flock "$lock_fd"
  fi
  if fetch_complete; then
    exec {lock_fd}>&-
    verify_cache_once "$SUMS_MARKER" "$LIBS_DIR"/*.jar
    return 0
  fi
  log "fetching Kafka ${KAFKA_VERSION} jars into ${LIBS_DIR} (one-time)"
  local tmp_libs="${VERSION_DIR}/libs.partial"
  rm -rf "$tmp_libs" "$FETCH_MARKER" "$SUMS_MARKER"
  cp "${FILES}/pom.xml" "${VERSION_DIR}/pom.xml"
  if ! mvn -B -q -C -Dstyle.color=never -f "${VERSION_DIR}/pom.xml" \
    -Dkafka.version="$KAFKA_VERSION" -Dlog4j.version="$LOG4J_VERSION" \
    -Ddependency.plugin.version="$DEPENDENCY_PLUGIN_VERSION" \
    "org.apache.maven.plugins:maven-dependency-plugin:${DEPENDENCY_PLUGIN_VERSION}:copy-dependencies" \
    -DincludeScope=runtime -DoutputDirectory="$tmp_libs" 2>&1 |
    sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d' >&2; then
    exec {lock_fd}>&-
    die "mvn failed to fetch the Kafka ${KAFKA_VERSION} jars"
  fi
  local jar
  for jar in "kafka_2.13-${KAFKA_VERSION}.jar" "kafka-tools-${KAFKA_VERSION}.jar" \
    "kafka-clients-${KAFKA_VERSION}.jar" "log4j-core-${LOG4J_VERSION}.jar" \
    "log4j-slf4j-impl-${LOG4J_VERSION}.jar"; do
    if [[ ! -s "${tmp_libs}/${jar}" ]]; then
      exec {lock_fd}>&-
      die "fetch incomplete: ${jar} missing in ${tmp_libs}"
    fi
  done
  verify_maven_files "$tmp_libs"/*.jar
  rm -rf "$LIBS_DIR" "${VERSION_DIR}/cds"
  mv "$tmp_libs" "$LIBS_DIR"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$SUMS_MARKER"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$FETCH_MARKER"
  exec {lock_fd}>&-
  log "fetched $(find "$LIBS_DIR" -name '*.jar' | wc -l) jars"
}

# ---------------------------------------------------------------- class-data sharing
# Every JVM here (broker and tools) starts ~2x faster with an AppCDS archive of
# the classes it loaded before. The first run of each main class records one
# (-XX:ArchiveClassesAtExit, written when that JVM exits; the broker's when it
# is stopped cleanly) under $VERSION_DIR/cds/<java>/; later runs map it. A stale
# or unusable archive is ignored by the JVM. LOCAL_KAFKA_CDS=0 turns it off.

CDS_FLAGS=()
CDS_PENDING=""
CDS_FINAL=""

# cds_flags MAIN_CLASS: set CDS_FLAGS (and CDS_PENDING/CDS_FINAL when this run
# is to record the archive).
cds_flags() {
  # JVM diagnostics to stderr (never stdout), and no CDS chatter.
  CDS_FLAGS=(-Xlog:disable "-Xlog:all=warning,cds*=off:stderr")
  CDS_PENDING=""
  CDS_FINAL=""
  [[ "${LOCAL_KAFKA_CDS:-1}" == 1 ]] || return 0
  local java_path java_id cds_dir
  java_path="$(command -v "$JAVA")" || return 0
  java_path="$(readlink -f "$java_path")" || return 0
  java_id="$(printf '%s' "$java_path" | cksum)"
  cds_dir="${VERSION_DIR}/cds/${java_id%% *}"
  if [[ -s "${cds_dir}/$1.jsa" ]]; then
    CDS_FLAGS+=("-XX:SharedArchiveFile=${cds_dir}/$1.jsa")
    return 0
  fi
  mkdir -p "$cds_dir" 2>/dev/null || return 0
  # Leftovers of JVMs that were killed while recording.
  find "$cds_dir" -maxdepth 1 -name '*.tmp' -mmin +120 -delete 2>/dev/null || true
  CDS_FINAL="${cds_dir}/$1.jsa"
  CDS_PENDING="${cds_dir}/$1.$$.${RANDOM}.tmp"
  CDS_FLAGS+=("-XX:ArchiveClassesAtExit=${CDS_PENDING}")
}

# cds_commit PENDING FINAL: publish a recorded archive (atomically).
cds_commit() {
  [[ -n "${1:-}" ]] || return 0
  if [[ -s "$1" ]]; then
    mv -f "$1" "$2" 2>/dev/null || rm -f "$1"
  else
    rm -f "$1"
  fi
}

# ---------------------------------------------------------------- helpers ---

check_java() {
  command -v "$JAVA" >/dev/null 2>&1 || die "java not found (set JAVA_HOME or put java on PATH)"
}

# Is PID the broker started for run dir $2 (guards against pid reuse)?
is_broker_of() {
  local pid="$1" dir="$2" cmdline
  is_alive "$pid" || return 1
  cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *"kafka.Kafka ${dir}/server.properties"* ]]
}

running_pid() {
  local dir="$1" pid
  [[ -f "${dir}/kafka.pid" ]] || return 1
  pid="$(<"${dir}/kafka.pid")"
  is_broker_of "$pid" "$dir" || return 1
  printf '%s\n' "$pid"
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Same shape as Kafka's Uuid.randomUuid().toString(): url-safe base64, no padding.
new_cluster_id() {
  python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s)
        break
'
}

# tool_cmd DIR CLASS: set TOOL_CMD to the java command line (up to the main
# class) for a Kafka CLI class run against the broker of DIR.
TOOL_CMD=()
tool_cmd() {
  cds_flags "$2"
  TOOL_CMD=("$JAVA" "${TOOL_JVM_OPTS[@]}" "${CDS_FLAGS[@]}"
    "-Dlog4j2.configurationFile=${1}/tools-log4j2.properties"
    -cp "${LIBS_DIR}/*" "$2")
}

# run_tool DIR CLASS ARGS... : run a Kafka CLI class against the broker of DIR.
run_tool() {
  local rc=0
  tool_cmd "$1" "$2"
  shift 2
  "${TOOL_CMD[@]}" "$@" || rc=$?
  cds_commit "$CDS_PENDING" "$CDS_FINAL"
  return "$rc"
}

# Bootstrap address of a running broker dir (after checking it is usable).
bootstrap_of() {
  local dir="$1"
  [[ -s "${dir}/bootstrap" ]] || die "no broker started in ${dir} (missing ${dir}/bootstrap)"
  running_pid "$dir" >/dev/null || log "warning: broker of ${dir} does not seem to be running"
  cat "${dir}/bootstrap"
}

# ---------------------------------------------------------------- config ----

# fill TEMPLATE DIR PORT CONTROLLER_PORT: a file of scripts/kafka/ with its
# @DIR@, @PORT@ and @CONTROLLER_PORT@ filled in, on stdout.
fill() {
  local text
  text="$(<"${FILES}/$1")"
  text="${text//@DIR@/$2}"
  text="${text//@CONTROLLER_PORT@/$4}"
  printf '%s\n' "${text//@PORT@/$3}"
}

write_configs() {
  local dir="$1" port="$2" cport="$3" sport="$4"
  shift 4
  local tmp="${dir}/server.properties.tmp"
  fill server.properties "$dir" "$port" "$cport" >"$tmp"
  if (($# > 0)); then
    printf '\n# Overrides given to "kafka.sh start".\n' >>"$tmp"
    local kv
    for kv in "$@"; do
      [[ "$kv" == *=* ]] || die "broker override must be key=value: ${kv}"
      printf '%s\n' "$kv" >>"$tmp"
    done
  fi
  mv "$tmp" "${dir}/server.properties"
  [[ -z "$sport" ]] || sasl_listener "$dir" "$port" "$cport" "$sport" >>"${dir}/server.properties"
  fill log4j2.properties "$dir" "$port" "$cport" >"${dir}/log4j2.properties"
  cp "${FILES}/tools-log4j2.properties" "${FILES}/admin.properties" "$dir/"
}

# ---------------------------------------------------------------- SASL_SSL --
# LOCAL_KAFKA_SASL_SSL=1: a SASL_SSL listener (SCRAM-SHA-512 over TLS) beside the PLAINTEXT one,
# with a private CA. What it needs is made once per DIR: DIR/tls/ holds the CA and the broker's
# key and certificate (a PKCS#12 keystore), DIR/sasl/ what a client needs.

sasl_ssl_on() { [[ "${LOCAL_KAFKA_SASL_SSL:-0}" == 1 ]]; }

# make_tls DIR: the CA, the broker certificate signed by it (for 127.0.0.1 and localhost) and
# the SCRAM user's credentials, unless DIR has them already (a restart keeps them).
make_tls() {
  local dir="$1" tls="$1/tls" sasl="$1/sasl"
  [[ -s "${tls}/broker.p12" && -s "${sasl}/password" ]] && return 0
  rm -rf "$tls" "$sasl"
  make_certs "$tls" "${dir}/kafka.log"
  mkdir -p "$sasl"
  chmod 700 "$sasl"
  (
    cd "$tls"
    openssl rand -hex 16 >keystore.password
    openssl pkcs12 -export -name broker -inkey server.key -in server.pem -certfile ca.pem \
      -passout "file:keystore.password" -out broker.p12
  ) >>"${dir}/kafka.log" 2>&1 || die "could not make the broker's keystore (see ${dir}/kafka.log)"
  cp "${tls}/ca.pem" "${sasl}/ca.pem"
  echo sidejoin >"${sasl}/username"
  (umask 077 && openssl rand -hex 16 >"${sasl}/password")
}

# sasl_listener DIR PORT CONTROLLER_PORT SASL_PORT: the server.properties lines that add the
# listener (appended after the template's, so they win).
sasl_listener() {
  local dir="$1" port="$2" cport="$3" sport="$4" pass
  pass="$(<"${dir}/tls/keystore.password")"
  cat <<EOF

# LOCAL_KAFKA_SASL_SSL=1: a SASL_SSL listener (SCRAM-SHA-512, the CA of ${dir}/tls).
listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${cport},SASL_SSL://127.0.0.1:${sport}
advertised.listeners=PLAINTEXT://127.0.0.1:${port},SASL_SSL://127.0.0.1:${sport}
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=${dir}/tls/broker.p12
listener.name.sasl_ssl.ssl.keystore.password=${pass}
listener.name.sasl_ssl.ssl.key.password=${pass}
EOF
}

# scram_args DIR: the StorageTool arguments that create the SCRAM user at format time.
SCRAM_ARGS=()
scram_args() {
  SCRAM_ARGS=()
  sasl_ssl_on || return 0
  SCRAM_ARGS=(--add-scram
    "SCRAM-SHA-512=[name=$(<"$1/sasl/username"),password=$(<"$1/sasl/password")]")
}

# ---------------------------------------------------------------- start -----

print_failure_logs() {
  local dir="$1" f
  for f in "${dir}/kafka.log" "${dir}/logs/server.log"; do
    if [[ -s "$f" ]]; then
      printf '\n----- tail of %s -----\n' "$f" >&2
      tail -n 60 "$f" >&2
    fi
  done
}

# Start the JVM; the pid file is written by the process itself (then exec'd
# into java) so it is right whether or not setsid had to fork.
launch_broker() {
  local dir="$1" heap_opts=() jvm_opts=()
  read -r -a heap_opts <<<"${LOCAL_KAFKA_HEAP_OPTS:--Xms256m -Xmx768m}"
  read -r -a jvm_opts <<<"${LOCAL_KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:TieredStopAtLevel=1}"
  rm -f "${dir}/kafka.pid" "${dir}/cds.pending"
  cds_flags kafka.Kafka
  if [[ -n "$CDS_PENDING" ]]; then
    printf '%s\n%s\n' "$CDS_PENDING" "$CDS_FINAL" >"${dir}/cds.pending"
  fi
  {
    printf '\n===== %s starting broker =====\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >>"${dir}/kafka.log"
  # shellcheck disable=SC2016 # expanded by the inner bash
  nohup setsid bash -c 'echo "$$" >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
    "${dir}/kafka.pid" \
    "$JAVA" "${heap_opts[@]}" "${jvm_opts[@]}" "${CDS_FLAGS[@]}" -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true -Dlog4j2.shutdownHookEnabled=false \
    -Dkafka.logs.dir="${dir}/logs" \
    -Dlog4j2.configurationFile="${dir}/log4j2.properties" \
    -cp "${LIBS_DIR}/*" \
    kafka.Kafka "${dir}/server.properties" \
    </dev/null >>"${dir}/kafka.log" 2>&1 &
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s "${dir}/kafka.pid" ]] && return 0
    sleep 0.05
  done
  return 1
}

# file_size FILE: its size in bytes (0 if missing).
file_size() {
  local n
  n="$(wc -c 2>/dev/null <"$1")" || n=0
  echo "$((n + 0))"
}

# logged_since FILE OFFSET TEXT: did FILE get a line with TEXT past OFFSET?
logged_since() {
  grep -qF -- "$3" <(tail -c "+$(($2 + 1))" "$1" 2>/dev/null)
}

# wait_ready DIR PORT KAFKA_LOG_OFFSET SERVER_LOG_OFFSET (sizes of the logs
# before the launch, so that lines of earlier runs are not looked at)
# 0: ready; 1: failed; 2: failed because a port was taken (worth a retry).
wait_ready() {
  local dir="$1" port="$2" klog_off="$3" slog_off="$4" pid deadline hint_deadline probe_rc
  pid="$(<"${dir}/kafka.pid")"
  deadline=$((SECONDS + START_TIMEOUT))
  hint_deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    if ! is_alive "$pid"; then
      if logged_since "${dir}/kafka.log" "$klog_off" 'Address already in use' ||
        logged_since "${dir}/logs/server.log" "$slog_off" 'Address already in use'; then
        return 2
      fi
      log "broker process ${pid} exited during startup"
      return 1
    fi
    # Probe with a real client once the broker says it is up (or, should that
    # log line ever change, once the port accepts connections after 30 s).
    if logged_since "${dir}/logs/server.log" "$slog_off" 'Kafka Server started' ||
      { ((SECONDS > hint_deadline)) && port_open "$port"; }; then
      tool_cmd "$dir" org.apache.kafka.tools.TopicCommand
      probe_rc=0
      timeout 30 "${TOOL_CMD[@]}" --bootstrap-server "127.0.0.1:${port}" \
        --command-config "${dir}/admin.properties" --list >/dev/null 2>&1 || probe_rc=$?
      cds_commit "$CDS_PENDING" "$CDS_FINAL"
      ((probe_rc != 0)) || return 0
    fi
    sleep 0.2
  done
  log "broker not ready after ${START_TIMEOUT}s"
  return 1
}

cmd_start() {
  (($# >= 1)) || usage
  local dir
  dir="$(abs_dir "$1" create)"
  shift
  check_java
  cmd_fetch

  local pid
  if pid="$(running_pid "$dir")"; then
    die "a broker (pid ${pid}) is already running in ${dir}; stop it first"
  fi
  rm -f "${dir}/bootstrap" "${dir}/kafka.pid" "${dir}/sasl/bootstrap"
  mkdir -p "${dir}/logs"
  if sasl_ssl_on; then
    make_tls "$dir"
  fi

  local attempt port cport sport ports rc
  for attempt in 1 2 3; do
    ports=""
    # Restart of a stopped broker: keep its address if still free.
    if [[ "$attempt" == 1 && -s "${dir}/ports" && -f "${dir}/data/meta.properties" ]]; then
      read -r port cport sport <"${dir}/ports" || true
      if [[ -n "${port:-}" && -n "${cport:-}" ]] && port_free "$port" && port_free "$cport" &&
        { ! sasl_ssl_on || { [[ -n "${sport:-}" ]] && port_free "$sport"; }; }; then
        ports="${port} ${cport} ${sport:-}"
      fi
    fi
    if [[ -z "$ports" ]]; then
      ports="$(pick_ports)"
      # The SASL_SSL listener's port: another pair's first (a clash is retried like any).
      if sasl_ssl_on; then
        read -r sport _ <<<"$(pick_ports)"
        ports="${ports} ${sport}"
      fi
    fi
    read -r port cport sport <<<"$ports"
    sasl_ssl_on || sport=""
    echo "$port $cport $sport" >"${dir}/ports"

    write_configs "$dir" "$port" "$cport" "$sport" "$@"

    if [[ ! -f "${dir}/data/meta.properties" ]]; then
      local cluster_id
      cluster_id="$(new_cluster_id)"
      echo "$cluster_id" >"${dir}/cluster.id"
      scram_args "$dir"
      if ! run_tool "$dir" kafka.tools.StorageTool format \
        -t "$cluster_id" -c "${dir}/server.properties" "${SCRAM_ARGS[@]}" >>"${dir}/kafka.log" 2>&1; then
        print_failure_logs "$dir"
        die "formatting the storage in ${dir}/data failed"
      fi
    fi

    local klog_off slog_off
    klog_off="$(file_size "${dir}/kafka.log")"
    slog_off="$(file_size "${dir}/logs/server.log")"
    launch_broker "$dir" || {
      print_failure_logs "$dir"
      die "the broker process did not start"
    }
    rc=0
    wait_ready "$dir" "$port" "$klog_off" "$slog_off" || rc=$?
    if ((rc == 0)); then
      echo "127.0.0.1:${port}" >"${dir}/bootstrap"
      [[ -z "$sport" ]] || echo "127.0.0.1:${sport}" >"${dir}/sasl/bootstrap"
      echo "127.0.0.1:${port}"
      return 0
    fi
    cmd_stop "$dir" >/dev/null 2>&1 || true
    if ((rc == 2 && attempt < 3)); then
      log "port ${port} or ${cport} was taken meanwhile; retrying with new ports"
      continue
    fi
    break
  done
  print_failure_logs "$dir"
  die "could not start the Kafka broker in ${dir}"
}

# ---------------------------------------------------------------- stop ------

cmd_stop() {
  (($# == 1)) || usage
  local dir pid i killed=0
  [[ -d "$1" ]] || return 0
  dir="$(abs_dir "$1")"
  if ! pid="$(running_pid "$dir")"; then
    rm -f "${dir}/kafka.pid"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    is_alive "$pid" || break
    sleep 0.1
  done
  if is_alive "$pid"; then
    log "broker ${pid} still alive after ${STOP_TIMEOUT}s; sending SIGKILL"
    killed=1
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      is_alive "$pid" || break
      sleep 0.1
    done
  fi
  is_alive "$pid" && die "could not stop broker ${pid}"
  rm -f "${dir}/kafka.pid"
  # A broker that exited on SIGTERM has written its class-data archive.
  if [[ -f "${dir}/cds.pending" ]]; then
    local pending final
    { read -r pending && read -r final; } <"${dir}/cds.pending" || true
    if [[ "$killed" == 0 ]]; then
      cds_commit "${pending:-}" "${final:-}"
    else
      rm -f "${pending:-}"
    fi
    rm -f "${dir}/cds.pending"
  fi
}

# ---------------------------------------------------------------- tools -----

# The kafka_tool example (built when missing; scripts that need it fresh build
# it themselves, as scripts/demo.sh does).
kafka_tool() {
  local target="${CARGO_TARGET_DIR:-${HOME:-/tmp}/.cache/sidejoin-target}"
  local bin="${target}/release/examples/kafka_tool"
  if [[ ! -x "$bin" ]]; then
    log "building examples/kafka_tool.rs (cargo build --release --example kafka_tool)"
    (cd "$(dirname "$SELF")/.." && CARGO_TARGET_DIR="$target" \
      cargo build --release --quiet --example kafka_tool) >&2 || die "could not build kafka_tool"
  fi
  printf '%s\n' "$bin"
}

cmd_tool() {
  local sub="$1" dir tool
  shift
  (($# >= 2)) || usage
  dir="$(abs_dir "$1")"
  shift
  tool="$(kafka_tool)"
  exec "$tool" "$sub" "$(bootstrap_of "$dir")" "$@"
}

# ---------------------------------------------------------------- with-broker

# with_service's hook: the SASL_SSL listener's address, CA and credentials, when it has one.
service_exports() {
  local sasl="$1/sasl"
  [[ -s "${sasl}/bootstrap" ]] || return 0
  export TEST_KAFKA_SASL_BOOTSTRAP="$(<"${sasl}/bootstrap")" TEST_KAFKA_SASL_CA="${sasl}/ca.pem" \
    TEST_KAFKA_SASL_USERNAME="$(<"${sasl}/username")" TEST_KAFKA_SASL_PASSWORD="$(<"${sasl}/password")"
}

cmd_with_broker() {
  with_service sidejoin-kafka TEST_KAFKA_BOOTSTRAP TEST_KAFKA_DIR broker "$@"
}

# ---------------------------------------------------------------- main ------

main() {
  (($# >= 1)) || usage
  local sub="$1"
  shift
  case "$sub" in
    fetch) cmd_fetch ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    topic | produce | consume) cmd_tool "$sub" "$@" ;;
    with-broker) cmd_with_broker "$@" ;;
    -h | --help | help) usage ;;
    *)
      log "unknown command: ${sub}"
      usage
      ;;
  esac
}

main "$@"
