#!/usr/bin/env bash
# scripts/kafka.sh - a real single-node Apache Kafka 4.x broker (KRaft, combined
# broker+controller) for sidejoin's tests and CI, without Docker.
#
# The Kafka jars come from Maven Central through `mvn` (dependency plugin) and
# are cached per version; the broker and the CLI tools run from that class path
# with the local JDK (17+).
#
# USAGE
#   scripts/kafka.sh fetch
#       Download the jars into $LOCAL_KAFKA_HOME/<version>/libs (default
#       $HOME/.cache/sidejoin-kafka/4.1.1/libs). Idempotent: a marker file is
#       written only after a complete download, so an interrupted one is retried.
#       The generated pom.xml lives next to libs/, never in the repo.
#
#   scripts/kafka.sh start DIR [broker.key=value ...]
#       Fetch if needed, pick two free loopback ports, write the config into DIR
#       (created if missing), format the storage, start the broker in the
#       background (its own session; pid in DIR/kafka.pid, stdout/stderr in
#       DIR/kafka.log, log4j output in DIR/logs/server.log), wait until it
#       answers metadata requests (timeout $LOCAL_KAFKA_START_TIMEOUT, 90 s),
#       write "127.0.0.1:PORT" to DIR/bootstrap and print it on stdout.
#       Extra key=value arguments are appended to server.properties (they win).
#       Starting again in a DIR whose broker was stopped keeps its data and,
#       when they are still free, its ports (a broker restart).
#       On failure the tail of the logs goes to stderr and the exit code is 1.
#
#   scripts/kafka.sh stop DIR
#       SIGTERM the broker of DIR, wait up to 20 s, then SIGKILL. Succeeds when
#       it is not running.
#
#   scripts/kafka.sh topic DIR NAME PARTITIONS [key=value ...]
#       Create a topic (replication factor 1) with optional topic configs, e.g.
#       cleanup.policy=compact. Succeeds if the topic already exists (its
#       partition count and configs are then left as they are).
#
#   scripts/kafka.sh produce DIR TOPIC  < lines
#       Produce one record per stdin line "KEY<TAB>VALUE" (acks=all).
#         - an empty KEY (line starts with TAB) gives a null key;
#         - an empty VALUE (line ends with the TAB) gives a null value, i.e. a
#           tombstone for compacted topics;
#         - a line without any TAB is a null-key record whose value is the line;
#         - everything after the first TAB is the value (it may contain TABs).
#       There is no way to produce an empty (non-null) key or value.
#       Exits non-zero if any record failed to be sent.
#
#   scripts/kafka.sh consume DIR TOPIC MAX_MESSAGES [TIMEOUT_MS]
#       Print up to MAX_MESSAGES records of TOPIC from the beginning, one
#       "KEY<TAB>VALUE" line each, "null" for a null key or value. Stops after
#       TIMEOUT_MS (default 10000) without a new record; exits 0 even if fewer
#       records came (count the lines). Records of different partitions are
#       interleaved in no fixed order. Isolation level read_committed (override
#       with LOCAL_KAFKA_ISOLATION=read_uncommitted). Group: a fresh random
#       console-consumer-NNNN group each time.
#
#   scripts/kafka.sh with-broker -- CMD [ARGS...]
#       Start a broker in a fresh temp dir, export
#       TEST_KAFKA_BOOTSTRAP=127.0.0.1:PORT and TEST_KAFKA_DIR=<dir>,
#       run CMD in the foreground, then always stop the broker and delete the
#       dir (EXIT/INT/TERM trap) and exit with CMD's exit code. (Ctrl-C reaches
#       CMD and this script alike; a TERM sent to this script alone is acted on
#       once CMD has ended, as bash defers traps for a foreground child.)
#       e.g. scripts/kafka.sh with-broker -- cargo test --test integration
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
#   JAVA_HOME                     JDK to use (else `java` on PATH)
#
# NOTES
#   - Linux only (uses /proc, setsid, flock); needs bash, mvn, java 17+;
#     python3 is used for port picking and cluster ids when present.
#   - The broker listens on 127.0.0.1 only. Topics are never auto-created.
#   - Test-friendly defaults: 8 MiB segments, cleaner backoff 1 s, 4 partitions
#     for the internal offsets/transaction topics, no initial rebalance delay.
#   - Several brokers (different DIRs) can run at once; each gets its own ports.
#   - A second start after the first fetch takes only a few seconds. The very
#     first broker stop after a fetch takes ~5 s longer (it writes the broker's
#     class-data archive).
#   - Tool JVMs (topic/produce/consume) each take ~1-2 s to start.
#   - Disk: ~43 MB of jars plus ~150 MB of class-data archives per version.

set -euo pipefail

readonly KAFKA_VERSION="${LOCAL_KAFKA_VERSION:-4.1.1}"
readonly LOG4J_VERSION="2.24.3"            # what Kafka 4.1 itself ships with
readonly DEPENDENCY_PLUGIN_VERSION="3.8.1" # org.apache.maven.plugins:maven-dependency-plugin
readonly KAFKA_CACHE_ROOT="${LOCAL_KAFKA_HOME:-${HOME:-/tmp}/.cache/sidejoin-kafka}"
readonly VERSION_DIR="${KAFKA_CACHE_ROOT}/${KAFKA_VERSION}"
readonly LIBS_DIR="${VERSION_DIR}/libs"
readonly FETCH_MARKER="${VERSION_DIR}/.fetch-complete"
readonly START_TIMEOUT="${LOCAL_KAFKA_START_TIMEOUT:-90}"
readonly STOP_TIMEOUT=20

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
readonly SELF

if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
  JAVA="${JAVA_HOME}/bin/java"
else
  JAVA="java"
fi
readonly JAVA

# JVM flags for the short-lived CLI tools: small heap, fast startup.
readonly TOOL_JVM_OPTS=(-Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
  -Djava.awt.headless=true -Dlog4j2.shutdownHookEnabled=false)
# (log4j's own shutdown hook is off so that errors logged while the JVM exits,
# e.g. by the console producer's send callbacks, still reach stderr.)

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

write_pom() {
  cat >"$1" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by sidejoin scripts/kafka.sh; only used to fetch jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.sidejoin</groupId>
  <artifactId>sidejoin-kafka-runtime</artifactId>
  <version>${KAFKA_VERSION}</version>
  <packaging>pom</packaging>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <!-- broker: core pulls server, storage, metadata, raft, coordinators, clients -->
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <!-- CLI tools (TopicCommand, ConsoleProducer, ConsoleConsumer); the Connect
         runtime it drags in (Jetty, Jersey, ...) is not needed for those. -->
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>${KAFKA_VERSION}</version>
      <exclusions>
        <exclusion><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId></exclusion>
        <exclusion><groupId>com.fasterxml.jackson.jakarta.rs</groupId><artifactId>jackson-jakarta-rs-json-provider</artifactId></exclusion>
      </exclusions>
    </dependency>
    <!-- logging backend: Kafka 4.x logs through SLF4J 1.7 to Log4j 2 -->
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>${LOG4J_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>${LOG4J_VERSION}</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>${DEPENDENCY_PLUGIN_VERSION}</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF
}

fetch_complete() {
  [[ -f "$FETCH_MARKER" && -f "${LIBS_DIR}/kafka_2.13-${KAFKA_VERSION}.jar" ]]
}

cmd_fetch() {
  if fetch_complete; then
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
    return 0
  fi
  log "fetching Kafka ${KAFKA_VERSION} jars into ${LIBS_DIR} (one-time)"
  local tmp_libs="${VERSION_DIR}/libs.partial"
  rm -rf "$tmp_libs" "$FETCH_MARKER"
  write_pom "${VERSION_DIR}/pom.xml"
  if ! mvn -B -q -Dstyle.color=never -f "${VERSION_DIR}/pom.xml" \
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
  rm -rf "$LIBS_DIR" "${VERSION_DIR}/cds"
  mv "$tmp_libs" "$LIBS_DIR"
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

# Absolute path of DIR (created when $2 is "create").
abs_dir() {
  if [[ "${2:-}" == create ]]; then
    mkdir -p "$1"
  fi
  [[ -d "$1" ]] || die "no such directory: $1"
  (cd "$1" && pwd)
}

# Alive and not a zombie.
is_alive() {
  local pid="$1" state
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/${pid}/stat" ]] || return 1
  state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/${pid}/stat" 2>/dev/null)" || return 1
  [[ "$state" != Z && "$state" != X ]]
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

# Print two distinct free TCP ports on 127.0.0.1.
pick_ports() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c '
import socket
socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
'
    return
  fi
  local a b
  while :; do
    a=$((20000 + RANDOM % 30000))
    b=$((20000 + RANDOM % 30000))
    if [[ "$a" != "$b" ]] && port_free "$a" && port_free "$b"; then
      echo "$a $b"
      return
    fi
  done
}

port_free() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
' "$1"
  else
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
      return 1
    fi
    return 0
  fi
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

new_cluster_id() {
  if command -v python3 >/dev/null 2>&1; then
    # Same shape as Kafka's Uuid.randomUuid().toString(): url-safe base64, no padding.
    python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s)
        break
'
  else
    run_tool "$1" kafka.tools.StorageTool random-uuid
  fi
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

write_configs() {
  local dir="$1" port="$2" cport="$3"
  shift 3
  local tmp="${dir}/server.properties.tmp"
  cat >"$tmp" <<EOF
# Generated by scripts/kafka.sh - single-node KRaft test broker.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:${cport}
listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${cport}
advertised.listeners=PLAINTEXT://127.0.0.1:${port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=${dir}/data

num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
delete.topic.enable=true

offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=4
group.initial.rebalance.delay.ms=0

# Small machine (2 cores): few threads.
num.network.threads=2
num.io.threads=4
background.threads=4
num.recovery.threads.per.data.dir=1
num.replica.fetchers=1

# Test-sized logs: small segments and indexes, quick retention checks and
# compaction, a bounded cleaner buffer.
log.segment.bytes=8388608
log.index.size.max.bytes=1048576
log.retention.hours=24
log.retention.check.interval.ms=10000
log.segment.delete.delay.ms=1000
log.cleaner.enable=true
log.cleaner.threads=1
log.cleaner.backoff.ms=1000
log.cleaner.dedupe.buffer.size=16777216
log.cleaner.io.buffer.size=524288
file.delete.delay.ms=1000
EOF
  if (($# > 0)); then
    printf '\n# Overrides given to "kafka.sh start".\n' >>"$tmp"
    local kv
    for kv in "$@"; do
      [[ "$kv" == *=* ]] || die "broker override must be key=value: ${kv}"
      printf '%s\n' "$kv" >>"$tmp"
    done
  fi
  mv "$tmp" "${dir}/server.properties"

  cat >"${dir}/log4j2.properties" <<EOF
# Broker logging: everything to logs/server.log, only errors to the console
# (which is kafka.log).
status = warn
name = sidejoin-kafka-broker
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = ${dir}/logs/server.log
appender.file.filePattern = ${dir}/logs/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 20MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
appender.console.filter.threshold.type = ThresholdFilter
appender.console.filter.threshold.level = error
rootLogger.level = info
rootLogger.appenderRef.file.ref = FILE
rootLogger.appenderRef.console.ref = STDERR
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.clients.name = org.apache.kafka.clients
logger.clients.level = warn
EOF

  cat >"${dir}/tools-log4j2.properties" <<'EOF'
# CLI tools: warnings and errors to stderr only.
status = error
name = sidejoin-kafka-tools
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.console.ref = STDERR
# The console consumer logs its normal --timeout-ms stop as an ERROR.
logger.consoleconsumer.name = org.apache.kafka.tools.consumer.ConsoleConsumer
logger.consoleconsumer.level = off
EOF

  cat >"${dir}/admin.properties" <<'EOF'
request.timeout.ms=5000
default.api.timeout.ms=15000
EOF
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
  rm -f "${dir}/bootstrap" "${dir}/kafka.pid"
  mkdir -p "${dir}/logs"

  local attempt port cport ports rc
  for attempt in 1 2 3; do
    ports=""
    # Restart of a stopped broker: keep its address if still free.
    if [[ "$attempt" == 1 && -s "${dir}/ports" && -f "${dir}/data/meta.properties" ]]; then
      read -r port cport <"${dir}/ports" || true
      if [[ -n "${port:-}" && -n "${cport:-}" ]] && port_free "$port" && port_free "$cport"; then
        ports="${port} ${cport}"
      fi
    fi
    [[ -n "$ports" ]] || ports="$(pick_ports)"
    read -r port cport <<<"$ports"
    echo "$ports" >"${dir}/ports"

    write_configs "$dir" "$port" "$cport" "$@"

    if [[ ! -f "${dir}/data/meta.properties" ]]; then
      local cluster_id
      cluster_id="$(new_cluster_id "$dir")"
      echo "$cluster_id" >"${dir}/cluster.id"
      if ! run_tool "$dir" kafka.tools.StorageTool format \
        -t "$cluster_id" -c "${dir}/server.properties" >>"${dir}/kafka.log" 2>&1; then
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

# Kafka 4.2 renamed the console tools' options (KIP-1147); the old names still
# work there but print deprecation warnings (the consumer's on stdout).
new_console_options() {
  local major minor
  IFS=. read -r major minor _ <<<"$KAFKA_VERSION"
  ((major > 4 || (major == 4 && minor >= 2)))
}

cmd_topic() {
  (($# >= 3)) || usage
  local dir name="$2" partitions="$3" bootstrap kv
  dir="$(abs_dir "$1")"
  shift 3
  [[ "$partitions" =~ ^[1-9][0-9]*$ ]] || die "PARTITIONS must be a positive integer: ${partitions}"
  check_java
  bootstrap="$(bootstrap_of "$dir")"
  local args=(--bootstrap-server "$bootstrap" --command-config "${dir}/admin.properties"
    --create --if-not-exists --topic "$name" --partitions "$partitions" --replication-factor 1)
  for kv in "$@"; do
    [[ "$kv" == *=* ]] || die "topic config must be key=value: ${kv}"
    args+=(--config "$kv")
  done
  run_tool "$dir" org.apache.kafka.tools.TopicCommand "${args[@]}"
}

cmd_produce() {
  (($# == 2)) || usage
  local dir topic="$2" bootstrap errfile rc=0 rp=--property cp=--producer-property
  dir="$(abs_dir "$1")"
  if new_console_options; then
    rp=--reader-property
    cp=--command-property
  fi
  check_java
  bootstrap="$(bootstrap_of "$dir")"
  errfile="$(mktemp "${TMPDIR:-/tmp}/sidejoin-produce.XXXXXX")"
  # Lines without a TAB become null-key records; null.marker="" turns an
  # empty key or value into null. Async sends only *log* failures, so the
  # tool's stderr is checked for errors afterwards.
  sed -u -e '/\t/!s/^/\t/' |
    run_tool "$dir" org.apache.kafka.tools.ConsoleProducer \
      --bootstrap-server "$bootstrap" --topic "$topic" \
      "$rp" parse.key=true \
      "$rp" "key.separator=$(printf '\t')" \
      "$rp" null.marker= \
      "$cp" acks=all \
      "$cp" max.block.ms=20000 \
      "$cp" delivery.timeout.ms=30000 \
      "$cp" request.timeout.ms=10000 \
      "$cp" linger.ms=5 \
      2>"$errfile" || rc=$?
  cat "$errfile" >&2
  if ((rc == 0)) && grep -qE '^(ERROR|FATAL) ' "$errfile"; then
    rc=1
  fi
  rm -f "$errfile"
  ((rc == 0)) || die "producing to ${topic} failed"
}

cmd_consume() {
  (($# == 3 || $# == 4)) || usage
  local dir topic="$2" max="$3" timeout_ms="${4:-10000}" bootstrap
  local fp=--property cp=--consumer-property
  dir="$(abs_dir "$1")"
  if new_console_options; then
    fp=--formatter-property
    cp=--command-property
  fi
  [[ "$max" =~ ^[0-9]+$ ]] || die "MAX_MESSAGES must be a number: ${max}"
  [[ "$timeout_ms" =~ ^[0-9]+$ ]] || die "TIMEOUT_MS must be a number: ${timeout_ms}"
  check_java
  bootstrap="$(bootstrap_of "$dir")"
  run_tool "$dir" org.apache.kafka.tools.consumer.ConsoleConsumer \
    --bootstrap-server "$bootstrap" --topic "$topic" \
    --from-beginning --max-messages "$max" --timeout-ms "$timeout_ms" \
    --isolation-level "${LOCAL_KAFKA_ISOLATION:-read_committed}" \
    "$fp" print.key=true \
    "$fp" "key.separator=$(printf '\t')" \
    "$cp" enable.auto.commit=false \
    2> >(grep -v '^Processed a total of ' >&2)
}

# ---------------------------------------------------------------- with-broker

cmd_with_broker() {
  [[ "${1:-}" == "--" ]] && shift
  (($# >= 1)) || usage
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/sidejoin-kafka.XXXXXX")"
  # shellcheck disable=SC2064 # expand $tmp now
  trap "'${SELF}' stop '${tmp}' >/dev/null 2>&1 || true; rm -rf '${tmp}'" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local bootstrap
  bootstrap="$("$SELF" start "$tmp")" || exit 1
  export TEST_KAFKA_BOOTSTRAP="$bootstrap"
  export TEST_KAFKA_DIR="$tmp"
  log "broker ${bootstrap} up (dir ${tmp}); running: $*"
  local rc=0
  "$@" || rc=$?
  exit "$rc"
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
    topic) cmd_topic "$@" ;;
    produce) cmd_produce "$@" ;;
    consume) cmd_consume "$@" ;;
    with-broker) cmd_with_broker "$@" ;;
    -h | --help | help) usage ;;
    *)
      log "unknown command: ${sub}"
      usage
      ;;
  esac
}

main "$@"
