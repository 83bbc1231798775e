#!/usr/bin/env bash
# scripts/setup.sh - the system packages every entry point needs (README "Try it"), checked in one
# place: scripts/demo.sh, scripts/test.sh and .ci/run call it first. Debian 12 (or derivatives):
# each missing package is installed with apt-get when this runs as root or with sudo without a
# password (apt-get update first when the install fails, e.g. on a fresh machine with no package
# lists); otherwise it stops at once and prints the one command that installs them.
#
#   scripts/setup.sh [build|demo|test|ci]...     (default: demo)
#
#   build          build-essential (cc, c++, make; RocksDB's C++), pkg-config, libclang-dev
#                  (bindgen for RocksDB), libssl-dev and zlib1g-dev (librdkafka), perl
#                  (librdkafka's configure), ca-certificates (cargo's downloads)
#   demo           as build, + Java 17+ (openjdk-17-jre-headless), maven (Kafka's jars), python3 (free
#                  ports, cluster ids), curl (metrics, readiness)
#   test           as demo, + procps (the tests signal processes with kill), openssl (the test
#                  CAs) and nginx (TLS and basic auth in front of the test registry)
#   ci             as test, + python3-venv (the deployment checks' tools); Go 1.24+ is checked,
#                  not installed (Debian 12's is too old: /usr/local/go, go.dev/dl)
#
# The Rust toolchain is not installed here (rustup, README); Java 17 is the oldest that runs
# Kafka 4 (scripts/kafka.sh) and the schema registry 2.6 (scripts/registry.sh runs 3.x when a
# Java 21+ is found). SIDEJOIN_SETUP=skip skips every check (a machine set up otherwise).
set -euo pipefail

[ "${SIDEJOIN_SETUP:-}" = skip ] && exit 0
log() { printf 'setup: %s\n' "$*" >&2; }

want_build=1 want_run=0 want_test=0 want_ci=0
[ $# -gt 0 ] || set -- demo
for a in "$@"; do
  case "$a" in
    build) ;;
    demo) want_run=1 ;;
    test) want_run=1 want_test=1 ;;
    ci) want_run=1 want_test=1 want_ci=1 ;;
    *) log "unknown entry point $a (build, demo, test, ci)"; exit 2 ;;
  esac
done

packages=()
((want_build)) && packages+=(build-essential pkg-config libclang-dev libssl-dev zlib1g-dev perl ca-certificates)
((want_run)) && packages+=(maven python3 curl)
((want_test)) && packages+=(procps openssl nginx)
((want_ci)) && packages+=(python3-venv)

# java_major: the major version of `java` on PATH (JAVA_HOME's first), 0 when there is none.
java_major() {
  local java=java
  [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java="$JAVA_HOME/bin/java"
  command -v "$java" >/dev/null 2>&1 || { echo 0; return; }
  "$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1 | grep . || echo 0
}

missing=()
if command -v dpkg-query >/dev/null; then
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((want_run)) && (($(java_major) < 17)); then
    missing+=(openjdk-17-jre-headless)
  fi
else
  # Not Debian: the commands only, and no installing.
  for c in cc c++ make pkg-config perl; do command -v "$c" >/dev/null || missing+=("$c"); done
  if ((want_run)); then
    for c in mvn python3 curl; do command -v "$c" >/dev/null || missing+=("$c"); done
    (($(java_major) >= 17)) || missing+=("java(17+)")
  fi
  if ((${#missing[@]})); then
    log "missing: ${missing[*]} (and libclang, OpenSSL and zlib headers); install them with your package manager"
    exit 1
  fi
fi

if ((${#missing[@]})); then
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      log "missing Debian packages: ${missing[*]}; install them with:"
      printf '  sudo apt-get update && sudo apt-get install -y --no-install-recommends %s\n' "${missing[*]}" >&2
      exit 1
    fi
  fi
  log "installing with apt-get: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  install=("${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}")
  if ! "${install[@]}" >&2; then
    log "apt-get install failed; apt-get update, then again"
    "${sudo[@]}" apt-get update >&2
    "${install[@]}" >&2
  fi
fi

if ((want_run)) && (($(java_major) < 17)); then
  log "java on PATH is older than 17 after the install: put a Java 17+ first on PATH or set JAVA_HOME"
  exit 1
fi
if ((want_ci)); then
  export PATH="$PATH:/usr/local/go/bin"
  command -v go >/dev/null || { log "go (1.24+) not found: needed to build helm for the deployment checks (go.dev/dl, /usr/local/go)"; exit 1; }
fi
if ! command -v cargo >/dev/null; then
  log "cargo not found: install Rust with rustup (https://rustup.rs), then run this again"
  exit 1
fi
exit 0
