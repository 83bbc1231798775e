#!/usr/bin/env bash
# scripts/flink.sh - Apache Flink 2.2 SQL as a peer of sidejoin in the Kafka benchmark
# (scripts/bench-kafka.sh), without a Flink distribution or Docker.
#
# USAGE
#   scripts/flink.sh fetch
#       Download Flink's lib/ once into $SIDEJOIN_FLINK_HOME/2.2.0/lib (default
#       $HOME/.cache/sidejoin-flink/2.2.0/lib): the jars of PyPI's
#       apache-flink-libraries==2.2.0 wheel (pip download --no-deps, ~310 MB) plus
#       org.apache.flink:flink-sql-connector-kafka:5.0.0-2.2 from Maven Central (mvn).
#       A marker file is written only after a complete download, so an interrupted
#       one is retried; concurrent fetches are serialised with flock.
#
#   scripts/flink.sh build
#       fetch, then compile every scripts/flink/*.java with javac -cp "lib/*" into
#       <cache>/classes/<hash of all the sources>/ (reused while no source changes).
#       Prints that directory.
#
#   scripts/flink.sh run LOG4J_PROPERTIES [JOB ARGS...]
#       build, then exec the job's JVM in the foreground (one JVM, a local
#       MiniCluster): java $FLINK_JVM_OPTS -cp classes:lib/* $FLINK_JOB_CLASS ARGS.
#       The exec keeps the pid: the caller's $! is the JVM. JOB ARGS are key=value
#       pairs, see scripts/flink/<job class>.java (or scripts/flink/README.md).
#
# ENVIRONMENT
#   SIDEJOIN_FLINK_HOME  cache root (default $HOME/.cache/sidejoin-flink)
#   FLINK_JOB_CLASS      the job run starts: SidejoinFlinkJoin (default, the two-way join)
#                        or SidejoinFlinkStar (the star join)
#   FLINK_JVM_OPTS       JVM flags for run (default "-Xms512m -Xmx2g -XX:+UseG1GC")
#   FLINK_TMPDIR         java.io.tmpdir of the job (Flink's io.tmp.dirs, RocksDB's local
#                        directories, the RPC jar and web upload dirs go there; default: the JVM's)
#   JAVA_HOME            JDK to use (else java/javac on PATH); JDK 17 or newer
set -euo pipefail

readonly FLINK_VERSION="2.2.0"
readonly KAFKA_CONNECTOR="org.apache.flink:flink-sql-connector-kafka:5.0.0-2.2"
readonly DEPENDENCY_PLUGIN_VERSION="3.8.1"
readonly CACHE_ROOT="${SIDEJOIN_FLINK_HOME:-${HOME:-/tmp}/.cache/sidejoin-flink}"
readonly VERSION_DIR="${CACHE_ROOT}/${FLINK_VERSION}"
readonly LIB_DIR="${VERSION_DIR}/lib"
readonly MARKER="${VERSION_DIR}/.fetch-complete"
SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/flink"
readonly SRC_DIR
readonly JOB_CLASS="${FLINK_JOB_CLASS:-SidejoinFlinkJoin}"

if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
  JAVA="${JAVA_HOME}/bin/java"
  JAVAC="${JAVA_HOME}/bin/javac"
else
  JAVA="java"
  JAVAC="javac"
fi

log() { printf 'flink.sh: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
# shellcheck source=lib/checksums.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/checksums.sh"

fetch_complete() {
  [[ -f "$MARKER" && -s "${LIB_DIR}/flink-dist-${FLINK_VERSION}.jar" ]]
}

cmd_fetch() {
  fetch_complete && return 0
  command -v pip >/dev/null 2>&1 || command -v pip3 >/dev/null 2>&1 || die "pip not found (needed to fetch Flink's lib/)"
  command -v mvn >/dev/null 2>&1 || die "mvn not found (needed to fetch the Kafka SQL connector)"
  command -v unzip >/dev/null 2>&1 || die "unzip not found"
  mkdir -p "$VERSION_DIR"
  local lock_fd
  exec {lock_fd}>"${VERSION_DIR}/.lock"
  flock "$lock_fd"
  if fetch_complete; then
    exec {lock_fd}>&-
    return 0
  fi
  log "fetching Flink ${FLINK_VERSION} lib/ and the Kafka SQL connector into ${LIB_DIR} (one-time, ~330 MB)"
  local tmp="${VERSION_DIR}/fetch.partial" pip_cmd=pip
  command -v pip >/dev/null 2>&1 || pip_cmd=pip3
  rm -rf "$tmp" "$MARKER"
  mkdir -p "$tmp/wheel" "$tmp/lib"
  # Pinned by the sha256 PyPI publishes (scripts/flink/requirements.txt; FLINK_VERSION must match).
  "$pip_cmd" download --quiet --no-deps --require-hashes --only-binary=:all: \
    -r "${SRC_DIR}/requirements.txt" -d "$tmp/wheel" >&2 ||
    die "pip download apache-flink-libraries==${FLINK_VERSION} failed (or its sha256 differs from scripts/flink/requirements.txt)"
  local wheel
  wheel="$(find "$tmp/wheel" -name 'apache_flink_libraries-*.whl' | head -1)"
  [[ -n "$wheel" ]] || die "no apache_flink_libraries wheel in ${tmp}/wheel"
  unzip -q -j -o "$wheel" 'pyflink/lib/*.jar' -d "$tmp/lib" || die "unzipping ${wheel} failed"
  rm -rf "$tmp/wheel"
  mvn -B -q -C -Dstyle.color=never \
    "org.apache.maven.plugins:maven-dependency-plugin:${DEPENDENCY_PLUGIN_VERSION}:copy" \
    -Dartifact="$KAFKA_CONNECTOR" -DoutputDirectory="$tmp/lib" 2>&1 |
    sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d' >&2
  local jar
  for jar in "flink-dist-${FLINK_VERSION}.jar" "flink-table-planner-loader-${FLINK_VERSION}.jar" \
    "flink-table-runtime-${FLINK_VERSION}.jar" "flink-json-${FLINK_VERSION}.jar" \
    "flink-table-api-java-uber-${FLINK_VERSION}.jar" "flink-sql-connector-kafka-5.0.0-2.2.jar"; do
    [[ -s "$tmp/lib/$jar" ]] || die "fetch incomplete: ${jar} missing in ${tmp}/lib"
  done
  verify_maven_files "$tmp/lib/flink-sql-connector-kafka-5.0.0-2.2.jar"
  rm -rf "$LIB_DIR" "${VERSION_DIR}/classes"
  mv "$tmp/lib" "$LIB_DIR"
  rm -rf "$tmp"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$MARKER"
  exec {lock_fd}>&-
  log "fetched $(find "$LIB_DIR" -name '*.jar' | wc -l) jars ($(du -sm "$LIB_DIR" | cut -f1) MB)"
}

cmd_build() {
  cmd_fetch
  local sources=() hash out
  mapfile -t sources < <(find "$SRC_DIR" -maxdepth 1 -name '*.java' | LC_ALL=C sort)
  ((${#sources[@]} > 0)) || die "no .java file in ${SRC_DIR}"
  # One directory per set of sources: the hash covers every file's name and content.
  hash="$(cd "$SRC_DIR" && sha256sum "${sources[@]##*/}" | sha256sum | cut -c1-16)"
  out="${VERSION_DIR}/classes/${hash}"
  if [[ ! -d "$out" ]]; then
    command -v "$JAVAC" >/dev/null 2>&1 || die "javac not found (a JDK 17+ is needed)"
    rm -rf "${out}.partial"
    mkdir -p "${out}.partial"
    "$JAVAC" -nowarn -encoding UTF-8 -cp "${LIB_DIR}/*" -d "${out}.partial" "${sources[@]}" >&2 ||
      die "javac ${sources[*]} failed"
    rm -rf "$out"
    mv "${out}.partial" "$out"
  fi
  echo "$out"
}

cmd_run() {
  (($# >= 1)) || die "usage: flink.sh run LOG4J_PROPERTIES [key=value ...]"
  local log4j="$1" classes jvm_opts=()
  shift
  classes="$(cmd_build)"
  [[ -f "${classes}/${JOB_CLASS}.class" ]] || die "no job class ${JOB_CLASS} in ${SRC_DIR} (FLINK_JOB_CLASS)"
  read -r -a jvm_opts <<<"${FLINK_JVM_OPTS:--Xms512m -Xmx2g -XX:+UseG1GC}"
  if [[ -n "${FLINK_TMPDIR:-}" ]]; then
    mkdir -p "$FLINK_TMPDIR"
    jvm_opts+=("-Djava.io.tmpdir=${FLINK_TMPDIR}")
  fi
  exec "$JAVA" "${jvm_opts[@]}" -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$log4j" -Dlog4j.configurationFile="$log4j" \
    -cp "${classes}:${LIB_DIR}/*" "$JOB_CLASS" "$@"
}

main() {
  local sub="${1:-}"
  shift || true
  case "$sub" in
    fetch) cmd_fetch ;;
    build) cmd_build ;;
    run) cmd_run "$@" ;;
    -h | --help | help | "") sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0" >&2 ;;
    *) die "unknown command: ${sub}" ;;
  esac
}

main "$@"
