#!/usr/bin/env bash
# scripts/registry.sh - a real Confluent-compatible Schema Registry (Apicurio
# Registry, in-memory storage) for sidejoin's Avro tests, demo and CI, without
# Docker. Its Confluent API is at http://127.0.0.1:PORT/apis/ccompat/v7.
#
# The registry is Apicurio's ready-to-run Quarkus bundle from Maven Central
# (io.apicurio:apicurio-registry-app:VERSION:tar.gz:all, ~150 MB), fetched with
# `mvn dependency:copy` and unpacked once per version under
# $LOCAL_REGISTRY_HOME/<version> (default ~/.cache/sidejoin-registry, beside
# the Kafka jars of scripts/kafka.sh).
#
# Version: 3.x needs Java 21+. The script looks for one (REGISTRY_JAVA_HOME,
# JAVA_HOME, `java` on PATH, then /usr/lib/jvm/*) and runs 3.3.3 with it; with
# only Java 17 it runs 2.6.13.Final (the last 2.x, same ccompat v7 API).
# LOCAL_REGISTRY_VERSION forces a version (then a fitting Java must exist).
#
# USAGE
#   scripts/registry.sh fetch
#       Download and unpack the bundle (idempotent; a marker is written only
#       after a complete unpack).
#   scripts/registry.sh start DIR
#       Fetch if needed, pick two free loopback ports (API and management),
#       start the registry in the background (own session; pid in
#       DIR/registry.pid, output in DIR/registry.log), wait until
#       /health/ready answers and the ccompat API lists subjects (timeout
#       $LOCAL_REGISTRY_START_TIMEOUT, 120 s), write its base URL
#       "http://127.0.0.1:PORT/apis/ccompat/v7" to DIR/url and print it.
#       Starting again in DIR reuses its ports when free (the data, in
#       memory, is gone: that is a registry restart, as the tests want).
#       With LOCAL_REGISTRY_TLS=1 it is also served over https with basic auth
#       by scripts/registry-tls.sh (nginx) in DIR/tls: DIR/tls/url, ca.pem,
#       username and password.
#   scripts/registry.sh stop DIR
#       SIGTERM, wait up to 20 s, then SIGKILL. Succeeds when not running.
#   scripts/registry.sh with-registry -- CMD [ARGS...]
#       Start one in a fresh temp dir, export TEST_REGISTRY_URL (the ccompat
#       base URL) and TEST_REGISTRY_DIR (with LOCAL_REGISTRY_TLS=1 also
#       TEST_REGISTRY_TLS_URL, _CA, _USERNAME and _PASSWORD, the https
#       endpoint), run CMD, always stop it and delete the
#       dir, exit with CMD's code. Composes with kafka.sh with-broker:
#       scripts/kafka.sh with-broker -- scripts/registry.sh with-registry -- cargo test
#
# ENVIRONMENT
#   LOCAL_REGISTRY_HOME           cache root (default $HOME/.cache/sidejoin-registry)
#   LOCAL_REGISTRY_VERSION        force a version (3.3.3 or 2.6.13.Final)
#   LOCAL_REGISTRY_HEAP_OPTS      JVM heap flags (default "-Xms64m -Xmx384m")
#   LOCAL_REGISTRY_START_TIMEOUT  seconds to wait for readiness (default 120)
#   REGISTRY_JAVA_HOME            the JDK to run it with (then the only one considered)
#   LOCAL_REGISTRY_TLS            1: also serve it over https with basic auth (nginx)
#
# NOTES
#   - Linux only; needs bash, mvn, tar, curl, python3 (port picking) and Java 17+.
#   - Listens on 127.0.0.1 only (the management port too: Quarkus would
#     otherwise open 0.0.0.0:9000).
#   - Compatibility checks are off (Apicurio's default, NONE), ids are global
#     content ids.

set -euo pipefail

readonly NEW_VERSION="3.3.3"
readonly OLD_VERSION="2.6.13.Final"
readonly DEPENDENCY_PLUGIN_VERSION="3.8.1"
readonly CACHE_ROOT="${LOCAL_REGISTRY_HOME:-${HOME:-/tmp}/.cache/sidejoin-registry}"
readonly START_TIMEOUT="${LOCAL_REGISTRY_START_TIMEOUT:-120}"
readonly STOP_TIMEOUT=20

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
# shellcheck source=lib/local-service.sh
source "$(dirname "$SELF")/lib/local-service.sh"
# shellcheck source=lib/checksums.sh
source "$(dirname "$SELF")/lib/checksums.sh"
readonly SELF

log() { printf 'registry.sh: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() {
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$SELF" >&2
  exit 2
}

# ---------------------------------------------------------------- java / version

# Major version of the java binary $1 (empty when it does not run).
java_major() {
  local v
  v="$("$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')" || true
  printf '%s\n' "${v%%.*}"
}

# Candidates, in order of preference.
java_candidates() {
  # An explicit choice is the only candidate.
  if [[ -n "${REGISTRY_JAVA_HOME:-}" ]]; then
    printf '%s\n' "${REGISTRY_JAVA_HOME}/bin/java"
    return 0
  fi
  [[ -n "${JAVA_HOME:-}" ]] && printf '%s\n' "${JAVA_HOME}/bin/java"
  command -v java 2>/dev/null || true
  local d
  for d in /usr/lib/jvm/*/; do
    printf '%s\n' "${d}bin/java"
  done
}

# Sets JAVA and VERSION: the newest registry a Java here can run.
JAVA=""
VERSION=""
choose() {
  local j major best="" best_major=0
  while IFS= read -r j; do
    [[ -x "$j" ]] || continue
    major="$(java_major "$j")"
    [[ "$major" =~ ^[0-9]+$ ]] || continue
    if ((major > best_major)); then
      best="$j"
      best_major="$major"
    fi
  done < <(java_candidates)
  ((best_major >= 17)) || die "no Java 17+ found (set REGISTRY_JAVA_HOME)"
  JAVA="$best"
  if [[ -n "${LOCAL_REGISTRY_VERSION:-}" ]]; then
    VERSION="$LOCAL_REGISTRY_VERSION"
  elif ((best_major >= 21)); then
    VERSION="$NEW_VERSION"
  else
    VERSION="$OLD_VERSION"
  fi
  if [[ "$VERSION" == 3.* ]] && ((best_major < 21)); then
    die "Apicurio Registry ${VERSION} needs Java 21+, found only Java ${best_major} (${JAVA})"
  fi
}

# ---------------------------------------------------------------- fetch ----

version_dir() { printf '%s/%s\n' "$CACHE_ROOT" "$VERSION"; }

# The command line's jar, relative to the version dir.
main_jar() {
  if [[ "$VERSION" == 2.* ]]; then
    printf 'apicurio-registry-app-%s-runner.jar\n' "$VERSION"
  else
    printf 'quarkus-run.jar\n'
  fi
}

fetch_complete() {
  local dir
  dir="$(version_dir)"
  [[ -f "${dir}/.fetch-complete" && -f "${dir}/app/$(main_jar)" ]]
}

# The bundle as Maven keeps it (what an existing cache was unpacked from).
bundle_in_maven_repo() {
  printf '%s/io/apicurio/apicurio-registry-app/%s/apicurio-registry-app-%s-all.tar.gz\n' \
    "$(maven_repo)" "$VERSION" "$VERSION"
}

cmd_fetch() {
  [[ -n "$VERSION" ]] || choose
  if fetch_complete; then
    verify_cache_once "$(version_dir)/.sums-verified" "$(bundle_in_maven_repo)"
    return 0
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found on PATH (needed to fetch Apicurio Registry)"
  local dir lock_fd
  dir="$(version_dir)"
  mkdir -p "$dir"
  exec {lock_fd}>"${dir}/.lock"
  command -v flock >/dev/null 2>&1 && flock "$lock_fd"
  if fetch_complete; then
    exec {lock_fd}>&-
    verify_cache_once "${dir}/.sums-verified" "$(bundle_in_maven_repo)"
    return 0
  fi
  log "fetching Apicurio Registry ${VERSION} into ${dir} (one-time, ~150 MB)"
  rm -rf "${dir}/download" "${dir}/app.partial"
  mkdir -p "${dir}/download" "${dir}/app.partial"
  if ! mvn -B -q -C -Dstyle.color=never \
    "org.apache.maven.plugins:maven-dependency-plugin:${DEPENDENCY_PLUGIN_VERSION}:copy" \
    -Dartifact="io.apicurio:apicurio-registry-app:${VERSION}:tar.gz:all" \
    -DoutputDirectory="${dir}/download" 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d' >&2; then
    exec {lock_fd}>&-
    die "mvn failed to fetch io.apicurio:apicurio-registry-app:${VERSION}:tar.gz:all"
  fi
  verify_maven_files "${dir}/download/apicurio-registry-app-${VERSION}-all.tar.gz"
  date -u +%Y-%m-%dT%H:%M:%SZ >"${dir}/.sums-verified"
  tar xzf "${dir}/download/apicurio-registry-app-${VERSION}-all.tar.gz" -C "${dir}/app.partial" ||
    die "could not unpack the registry bundle"
  # Some bundles have one top-level directory: flatten it.
  local entries
  entries=("${dir}/app.partial"/*)
  if ((${#entries[@]} == 1)) && [[ -d "${entries[0]}" ]]; then
    mv "${entries[0]}" "${dir}/app.flat" && rmdir "${dir}/app.partial" && mv "${dir}/app.flat" "${dir}/app.partial"
  fi
  [[ -f "${dir}/app.partial/$(main_jar)" ]] || die "the bundle has no $(main_jar)"
  rm -rf "${dir}/app" "${dir}/download"
  mv "${dir}/app.partial" "${dir}/app"
  date -u +%Y-%m-%dT%H:%M:%SZ >"${dir}/.fetch-complete"
  exec {lock_fd}>&-
  log "fetched Apicurio Registry ${VERSION}"
}

# ---------------------------------------------------------------- helpers ---

# The pid of DIR's registry, if it runs (the command line names DIR: no pid reuse).
running_pid() {
  pid_of "$1/registry.pid" "-Dsidejoin.registry.dir=$1 "
}

# ---------------------------------------------------------------- start -----

cmd_start() {
  (($# == 1)) || usage
  choose
  cmd_fetch
  local dir pid port mport
  dir="$(abs_dir "$1" create)"
  if pid="$(running_pid "$dir")"; then
    die "a registry (pid ${pid}) is already running in ${dir}"
  fi
  port=""
  if [[ -s "${dir}/ports" ]]; then
    read -r port mport <"${dir}/ports" || true
    { port_free "${port:-0}" && port_free "${mport:-0}"; } || port=""
  fi
  [[ -n "$port" ]] || read -r port mport <<<"$(pick_ports)"
  echo "$port $mport" >"${dir}/ports"
  rm -f "${dir}/url"
  local heap=()
  read -r -a heap <<<"${LOCAL_REGISTRY_HEAP_OPTS:--Xms64m -Xmx384m}"
  local app
  app="$(version_dir)/app"
  printf '\n===== %s starting Apicurio Registry %s (%s) =====\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$VERSION" "$JAVA" >>"${dir}/registry.log"
  # The working directory is the bundle's (Quarkus resolves lib/ from it). Every descriptor of
  # the background job is redirected, so a caller reading our stdout is not held open by it.
  # shellcheck disable=SC2016 # expanded by the inner bash
  (cd "$app" && exec setsid bash -c 'echo "$$" >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
    "${dir}/registry.pid" "$JAVA" "${heap[@]}" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    "-Dsidejoin.registry.dir=${dir}" \
    -Dquarkus.http.host=127.0.0.1 "-Dquarkus.http.port=${port}" \
    -Dquarkus.management.host=127.0.0.1 "-Dquarkus.management.port=${mport}" \
    -Dquarkus.log.level=WARN -Dquarkus.banner.enabled=false \
    -jar "$app/$(main_jar)") </dev/null >>"${dir}/registry.log" 2>&1 &
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -s "${dir}/registry.pid" ]] && break
    sleep 0.05
  done
  pid="$(<"${dir}/registry.pid")"
  local url="http://127.0.0.1:${port}/apis/ccompat/v7" deadline=$((SECONDS + START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if ! is_alive "$pid"; then
      tail -n 40 "${dir}/registry.log" >&2
      die "the registry exited during startup (log: ${dir}/registry.log)"
    fi
    # 2.x serves health on the API port; 3.x on the management port.
    if { curl -fsS -o /dev/null "http://127.0.0.1:${mport}/health/ready" 2>/dev/null ||
      curl -fsS -o /dev/null "http://127.0.0.1:${port}/health/ready" 2>/dev/null; } &&
      curl -fsS -o /dev/null "${url}/subjects" 2>/dev/null; then
      echo "$url" >"${dir}/url"
      if [[ "${LOCAL_REGISTRY_TLS:-0}" == 1 ]]; then
        "$(dirname "$SELF")/registry-tls.sh" start "${dir}/tls" "$url" >/dev/null || {
          cmd_stop "$dir" || true
          die "could not put TLS and basic auth in front of the registry"
        }
      fi
      echo "$url"
      return 0
    fi
    sleep 0.2
  done
  tail -n 40 "${dir}/registry.log" >&2
  cmd_stop "$dir" || true
  die "the registry was not ready after ${START_TIMEOUT}s"
}

# ---------------------------------------------------------------- stop ------

cmd_stop() {
  (($# == 1)) || usage
  [[ -d "$1" ]] || return 0
  local dir pid i
  dir="$(abs_dir "$1")"
  "$(dirname "$SELF")/registry-tls.sh" stop "${dir}/tls"
  pid="$(running_pid "$dir")" || {
    rm -f "${dir}/registry.pid"
    return 0
  }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    is_alive "$pid" || break
    sleep 0.1
  done
  if is_alive "$pid"; then
    log "registry ${pid} still alive after ${STOP_TIMEOUT}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "${dir}/registry.pid"
}

# ---------------------------------------------------------------- with-registry

# with_service's hook: the https endpoint, its CA and credentials, when there is one.
service_exports() {
  local tls="$1/tls"
  [[ -s "${tls}/url" ]] || return 0
  export TEST_REGISTRY_TLS_URL="$(<"${tls}/url")" TEST_REGISTRY_TLS_CA="${tls}/ca.pem" \
    TEST_REGISTRY_TLS_USERNAME="$(<"${tls}/username")" TEST_REGISTRY_TLS_PASSWORD="$(<"${tls}/password")"
}

cmd_with_registry() {
  with_service sidejoin-registry TEST_REGISTRY_URL TEST_REGISTRY_DIR registry "$@"
}

main() {
  (($# >= 1)) || usage
  local sub="$1"
  shift
  case "$sub" in
    fetch) cmd_fetch ;;
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    with-registry) cmd_with_registry "$@" ;;
    -h | --help | help) usage ;;
    *)
      log "unknown command: ${sub}"
      usage
      ;;
  esac
}

main "$@"
