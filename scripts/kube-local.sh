#!/usr/bin/env bash
# scripts/kube-local.sh - installs the Helm chart on a real Kubernetes control plane on loopback
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok's fake node; no
# container runtime: kwok marks the pods Running) and checks what the chart promises. Run before
# resolving a change to helm/ (docs/src/operations/kubernetes.md#checks-before-resolving); not part of .ci/run.
#
#   scripts/kube-local.sh build    build the binaries once from Go modules (~10 min on 2 cores,
#                                  3 GB peak) into $SIDEJOIN_TOOLS_HOME/kube-<version>
#   scripts/kube-local.sh test     (default) build if needed, start the control plane in a temp
#                                  dir, run the checks below, always stop everything
#   scripts/kube-local.sh up DIR   start the control plane in DIR and leave it running
#                                  (DIR/kubeconfig); scripts/kube-local.sh down DIR stops it
#
# The checks (test): the ServiceMonitor CRD is installed; `helm install --wait` with
# helm/examples/minimal.yaml and with helm/examples/every-setting.yaml succeeds, the StatefulSet's
# pods are Running on the kwok node, the PVCs, Services, PodDisruptionBudget and (every-setting)
# ServiceMonitor exist; `helm upgrade` with a changed setting rolls the pods (new controller
# revision, pods recreated); `helm uninstall` removes the release; every file in
# helm/examples/invalid/ is refused by `helm install` with the message it names.
#
# Recipe and measurements: /work/shared/kube-local.md (wrapper module replacing
# k8s.io/kubernetes' staging modules with the published v0.x versions). Needs Go 1.24+, openssl,
# python3, curl; helm comes from scripts/check-deploy.sh's cache.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

KUBE_VERSION=v1.37.2
KUBE_STAGING_VERSION=v0.37.2
KWOK_VERSION=v0.8.0
TOOLS="${SIDEJOIN_TOOLS_HOME:-$HOME/.cache/sidejoin-tools}"
KBIN="$TOOLS/kube-$KUBE_VERSION/bin"
HELM="$TOOLS/helm-v3.22.0/helm"

log() { printf 'kube-local: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

build() {
  mkdir -p "$TOOLS"
  exec 7>"$TOOLS/.kube.lock"
  flock 7
  if [ -f "$KBIN/.complete" ]; then return 0; fi
  command -v go >/dev/null || die "go (1.24+) not found: needed to build the control plane"
  local w="$TOOLS/kube-$KUBE_VERSION/src"
  rm -rf "$w" "$KBIN"
  mkdir -p "$w/etcd" "$KBIN"
  local t0=$SECONDS
  log "building etcd, kube-apiserver, kube-controller-manager, kube-scheduler $KUBE_VERSION and kwok $KWOK_VERSION (one-time, ~10 min)"
  (
    cd "$w"
    export GOFLAGS=-mod=mod
    go mod download "k8s.io/kubernetes@$KUBE_VERSION"
    local mod
    mod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$KUBE_VERSION.mod"
    {
      printf 'module kas\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
      grep -E '^\s*k8s.io/.* => ./staging' "$mod" | awk -v v="$KUBE_STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
      printf ')\n'
    } >go.mod
    printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' >etcd/main.go
    printf '//go:build tools\n\npackage kas\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n)\n' >tools.go
    go mod tidy
    nice -n 15 go build -o "$KBIN/etcd" ./etcd
    # The version the binaries report (/version: helm's .Capabilities.KubeVersion); without it
    # they say v0.0.0-master+$Format:%H$, which no semver comparison in a chart accepts.
    local v=k8s.io/component-base/version minor=${KUBE_VERSION#v1.}
    minor=${minor%%.*}
    local ldflags="-X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
    for c in kube-apiserver kube-controller-manager kube-scheduler; do
      nice -n 15 go build -ldflags "$ldflags" -o "$KBIN/$c" "k8s.io/kubernetes/cmd/$c"
    done
    GOBIN="$KBIN" nice -n 15 go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
    # kwok's stage files (fast node and pod lifecycles) ship in its module.
    local d
    d="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
    for f in "$d"/node/fast/node-initialize.yaml "$d"/pod/fast/pod-*.yaml; do echo ---; cat "$f"; done >"$KBIN/kwok-stages.yaml"
  )
  rm -rf "$w"
  touch "$KBIN/.complete"
  log "built in $((SECONDS - t0)) s"
}

# The Prometheus Operator's CRDs (ServiceMonitor, PodMonitor) from its Go module, cached.
PROMETHEUS_OPERATOR_VERSION=v0.85.0
crds() {
  local d="$TOOLS/kube-$KUBE_VERSION/crds-prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
  if [ ! -f "$d/.complete" ]; then
    local mod
    mod=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" \
      | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
    mkdir -p "$d"
    cp "$mod"/example/prometheus-operator-crd/monitoring.coreos.com_{servicemonitors,podmonitors}.yaml "$d/"
    touch "$d/.complete"
  fi
  echo "$d"
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start DIR NAME CMD...: a background process in its own session, pid in DIR/NAME.pid.
start() {
  local dir=$1 name=$2; shift 2
  setsid "$@" >"$dir/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

# api METHOD PATH [FILE]: the API server's REST API with the admin token (FILE: a YAML body).
api() {
  local args=(-sS -k -H "Authorization: Bearer devtoken" -X "$1" "$(cat "$KDIR/server")$2")
  [ $# -ge 3 ] && args+=(-H "Content-Type: application/yaml" --data-binary "@$3")
  curl "${args[@]}"
}

up() {
  KDIR=$1
  mkdir -p "$KDIR/pki" "$KDIR/certs"
  [ -f "$KBIN/.complete" ] || build
  local etcd_port etcd_peer api_port
  etcd_port=$(free_port) etcd_peer=$(free_port) api_port=$(free_port)
  start "$KDIR" etcd "$KBIN/etcd" --name kube-local --data-dir "$KDIR/etcd" --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "kube-local=http://127.0.0.1:$etcd_peer" --listen-metrics-urls ""
  openssl genrsa -out "$KDIR/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$KDIR/pki/sa.key" -pubout -out "$KDIR/pki/sa.pub" 2>/dev/null
  echo 'devtoken,admin,1,"system:masters"' >"$KDIR/pki/tokens.csv"
  local _
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null && break; sleep 0.1; done
  start "$KDIR" kube-apiserver "$KBIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
    --secure-port="$api_port" --cert-dir="$KDIR/certs" \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$KDIR/pki/sa.pub" \
    --service-account-signing-key-file="$KDIR/pki/sa.key" --token-auth-file="$KDIR/pki/tokens.csv" \
    --authorization-mode=RBAC --service-cluster-ip-range=10.96.0.0/16
  echo "https://127.0.0.1:$api_port" >"$KDIR/server"
  cat >"$KDIR/kubeconfig" <<EOT
apiVersion: v1
kind: Config
clusters:
- name: kube-local
  cluster: {server: "https://127.0.0.1:$api_port", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: devtoken}
contexts:
- name: kube-local
  context: {cluster: kube-local, user: admin}
current-context: kube-local
EOT
  chmod 600 "$KDIR/kubeconfig"
  for _ in $(seq 1 300); do [ "$(api GET /readyz 2>/dev/null)" = ok ] && break; sleep 0.2; done
  [ "$(api GET /readyz)" = ok ] || { tail -20 "$KDIR/kube-apiserver.log" >&2; die "kube-apiserver not ready"; }
  local kc="$KDIR/kubeconfig"
  start "$KDIR" kube-controller-manager "$KBIN/kube-controller-manager" --kubeconfig="$kc" \
    --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" --bind-address=127.0.0.1 \
    --secure-port="$(free_port)" --leader-elect=false --service-account-private-key-file="$KDIR/pki/sa.key" \
    --use-service-account-credentials=false --controllers='*'
  start "$KDIR" kube-scheduler "$KBIN/kube-scheduler" --kubeconfig="$kc" --authentication-kubeconfig="$kc" \
    --authorization-kubeconfig="$kc" --bind-address=127.0.0.1 --secure-port="$(free_port)" --leader-elect=false
  start "$KDIR" kwok "$KBIN/kwok" --kubeconfig="$kc" -c "$KBIN/kwok-stages.yaml" --manage-all-nodes=true \
    --node-ip=127.0.0.1 --cidr=10.244.0.0/24 --server-address="127.0.0.1:$(free_port)"
  cat >"$KDIR/node.yaml" <<'EOT'
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: kwok-node-0, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
EOT
  api POST /api/v1/nodes "$KDIR/node.yaml" >/dev/null
  for _ in $(seq 1 300); do
    api GET /api/v1/nodes/kwok-node-0 | python3 -c '
import json, sys
n = json.load(sys.stdin)
sys.exit(0 if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", [])) else 1)' && break
    sleep 0.2
  done
  log "control plane up in $KDIR (KUBECONFIG=$KDIR/kubeconfig), node kwok-node-0 Ready"
}

down() {
  local dir=$1 name pid
  # The API server before etcd (it then exits cleanly on SIGTERM).
  for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    [ -f "$dir/$name.pid" ] || continue
    pid=$(cat "$dir/$name.pid")
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$dir/$name.pid"
  done
}

# check NS RELEASE REPLICAS [servicemonitor]: the release's objects, as the chart promises.
check() {
  local ns=$1 rel=$2 replicas=$3 sm=${4:-}
  {
    echo "{"
    echo "\"pods\": $(api GET "/api/v1/namespaces/$ns/pods")," 
    echo "\"pvcs\": $(api GET "/api/v1/namespaces/$ns/persistentvolumeclaims"),"
    echo "\"services\": $(api GET "/api/v1/namespaces/$ns/services"),"
    echo "\"pdbs\": $(api GET "/apis/policy/v1/namespaces/$ns/poddisruptionbudgets"),"
    echo "\"sts\": $(api GET "/apis/apps/v1/namespaces/$ns/statefulsets"),"
    echo "\"sms\": $(api GET "/apis/monitoring.coreos.com/v1/namespaces/$ns/servicemonitors")"
    echo "}"
  } >"$KDIR/state-$ns.json"
  python3 - "$KDIR/state-$ns.json" "$rel" "$replicas" "$sm" <<'EOT'
import json, sys
s = json.load(open(sys.argv[1]))
rel, replicas, want_sm = sys.argv[2], int(sys.argv[3]), sys.argv[4] == "servicemonitor"
name = f"{rel}-sidejoin"
problems = []
sts = [x for x in s["sts"]["items"] if x["metadata"]["name"] == name]
if not sts:
    problems.append(f"no StatefulSet {name}")
pods = [p for p in s["pods"]["items"] if p["metadata"]["name"].startswith(name + "-")]
running = [p for p in pods if p["status"].get("phase") == "Running" and p["spec"].get("nodeName") == "kwok-node-0"]
if len(running) != replicas:
    problems.append(f"{len(running)} of {replicas} pods Running on kwok-node-0: "
                    + ", ".join(f"{p['metadata']['name']}={p['status'].get('phase')}@{p['spec'].get('nodeName')}" for p in pods))
pvcs = {p["metadata"]["name"]: p["status"].get("phase") for p in s["pvcs"]["items"]}
for i in range(replicas):
    if pvcs.get(f"state-{name}-{i}") != "Bound":
        problems.append(f"PVC state-{name}-{i}: {pvcs.get(f'state-{name}-{i}', 'missing')}")
svcs = {x["metadata"]["name"] for x in s["services"]["items"]}
for want in (f"{name}-headless", f"{name}-metrics"):
    if want not in svcs:
        problems.append(f"no Service {want} (have {sorted(svcs)})")
if not any(x["metadata"]["name"] == name for x in s["pdbs"]["items"]):
    problems.append(f"no PodDisruptionBudget {name}")
sms = [x["metadata"]["name"] for x in s["sms"].get("items", [])]
if want_sm and name not in sms:
    problems.append(f"no ServiceMonitor {name} (have {sms})")
if problems:
    print("kube-local: FAIL: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"kube-local: ok: {name}: {replicas} pod(s) Running on kwok-node-0, PVCs Bound "
      f"({', '.join(sorted(pvcs))}), Services {', '.join(sorted(svcs))}, PodDisruptionBudget"
      + (f", ServiceMonitor {name}" if want_sm else ""), file=sys.stderr)
EOT
}

# pods_of NS RELEASE: "name uid controller-revision-hash" per pod.
pods_of() {
  api GET "/api/v1/namespaces/$1/pods" | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    if p["metadata"]["name"].startswith(sys.argv[1] + "-sidejoin-"):
        print(p["metadata"]["name"], p["metadata"]["uid"], p["metadata"]["labels"].get("controller-revision-hash"), p["status"].get("phase"))
' "$2" | sort
}

# pvs N: N more hostPath PersistentVolumes of 10Gi (no provisioner here; the controller binds them).
PV_COUNT=0
pvs() {
  local _
  for _ in $(seq 1 "$1"); do
    PV_COUNT=$((PV_COUNT + 1))
    printf 'apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-%d}\nspec:\n  capacity: {storage: 10Gi}\n  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Retain\n  hostPath: {path: /tmp/kube-local-pv-%d}\n' \
      "$PV_COUNT" "$PV_COUNT" >"$KDIR/pv.yaml"
    api POST /api/v1/persistentvolumes "$KDIR/pv.yaml" >/dev/null
  done
}

secret() { # secret NS NAME KEY
  printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\nstringData: {%s: not-a-real-secret}\n' "$2" "$1" "$3" >"$KDIR/secret.yaml"
  api POST "/api/v1/namespaces/$1/secrets" "$KDIR/secret.yaml" >/dev/null
}
namespace() {
  printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n' "$1" >"$KDIR/ns.yaml"
  api POST /api/v1/namespaces "$KDIR/ns.yaml" >/dev/null
}

run_test() {
  [ -x "$HELM" ] || scripts/check-deploy.sh --install-only
  [ -f "$KBIN/.complete" ] || build
  local crd_dir
  crd_dir=$(crds)
  KDIR=$(mktemp -d "${TMPDIR:-/tmp}/sidejoin-kube-local.XXXXXX")
  trap 'down "$KDIR"; rm -rf "$KDIR"' EXIT INT TERM
  local t0=$SECONDS
  up "$KDIR"
  export KUBECONFIG="$KDIR/kubeconfig"
  local h=("$HELM" --kubeconfig "$KDIR/kubeconfig")
  local chart=helm/sidejoin ex=helm/examples

  log "installing the Prometheus Operator's CRDs ($PROMETHEUS_OPERATOR_VERSION: ServiceMonitor, PodMonitor)"
  for f in "$crd_dir"/*.yaml; do api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$f" >/dev/null; done
  for _ in $(seq 1 100); do
    api GET /apis/monitoring.coreos.com/v1 2>/dev/null | grep -q '"servicemonitors"' && break
    sleep 0.2
  done

  log "helm install --wait with $ex/minimal.yaml"
  pvs 1
  "${h[@]}" install min "$chart" -n min --create-namespace -f "$ex/minimal.yaml" --wait --timeout 120s >"$KDIR/helm-min.log" \
    || { cat "$KDIR/helm-min.log" >&2; die "helm install (minimal) failed"; }
  check min min 1

  log "helm upgrade --wait with a changed setting (processing.commitInterval=500ms): the pods roll"
  local before after
  before=$(pods_of min min)
  "${h[@]}" upgrade min "$chart" -n min -f "$ex/minimal.yaml" --set processing.commitInterval=500ms --wait --timeout 120s \
    >"$KDIR/helm-upgrade.log" || { cat "$KDIR/helm-upgrade.log" >&2; die "helm upgrade failed"; }
  for _ in $(seq 1 100); do
    after=$(pods_of min min)
    [ "$(echo "$after" | awk '$4 == "Running"' | wc -l)" = 1 ] && [ "$(echo "$after" | awk '{print $2}')" != "$(echo "$before" | awk '{print $2}')" ] && break
    sleep 0.2
  done
  log "  before: $before"
  log "  after:  $after"
  [ "$(echo "$before" | awk '{print $3}')" != "$(echo "$after" | awk '{print $3}')" ] || die "the upgrade did not change the pods' controller revision"
  [ "$(echo "$before" | awk '{print $2}')" != "$(echo "$after" | awk '{print $2}')" ] || die "the upgrade did not recreate the pod"
  api GET /apis/apps/v1/namespaces/min/statefulsets/min-sidejoin | python3 -c '
import json, sys
sts = json.load(sys.stdin)
env = {e["name"]: e.get("value") for c in sts["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
sys.exit(0 if env.get("SIDEJOIN_COMMIT_INTERVAL") == "500ms" else 1)' || die "the upgraded StatefulSet does not set SIDEJOIN_COMMIT_INTERVAL=500ms"
  check min min 1

  log "helm uninstall"
  "${h[@]}" uninstall min -n min --wait --timeout 120s >/dev/null || die "helm uninstall failed"
  for _ in $(seq 1 100); do [ -z "$(pods_of min min)" ] && break; sleep 0.2; done
  [ -z "$(pods_of min min)" ] || die "pods left after helm uninstall: $(pods_of min min)"
  [ "$(api GET /apis/apps/v1/namespaces/min/statefulsets | grep -c '"name": "min-sidejoin"')" = 0 ] || die "StatefulSet left after uninstall"
  api GET /api/v1/namespaces/min/persistentvolumeclaims | grep -q '"name": "state-min-sidejoin-0"' \
    || die "the PVC was deleted (persistence.retention says Retain)"
  log "ok: release gone, its pods and StatefulSet deleted, the PVC retained (persistence.retention: Retain)"

  log "helm install --wait with $ex/every-setting.yaml (2 replicas, ServiceMonitor and dashboard on; its Secrets created first)"
  namespace every
  secret every kafka-credentials password
  secret every kafka-ca ca.crt
  secret every registry-credentials password
  secret every registry-ca ca.pem
  pvs 2
  "${h[@]}" install every "$chart" -n every -f "$ex/every-setting.yaml" --set replicaCount=2 \
    --set metrics.serviceMonitor.enabled=true --set metrics.dashboard.enabled=true --wait --timeout 120s >"$KDIR/helm-every.log" \
    || { cat "$KDIR/helm-every.log" >&2; die "helm install (every-setting) failed"; }
  check every every 2 servicemonitor
  api GET /api/v1/namespaces/every/configmaps | grep -q '"name": "every-sidejoin-dashboard' || log "note: no dashboard ConfigMap named every-sidejoin-dashboard*"
  "${h[@]}" uninstall every -n every --wait --timeout 120s >/dev/null || die "helm uninstall (every-setting) failed"

  log "invalid values (helm/examples/invalid/): helm install refuses each with the chart's message"
  local f base expects e out n=0
  for f in "$ex"/invalid/*.yaml; do
    base=(-f "$ex/minimal.yaml")
    grep -q '^# base: none$' "$f" && base=()
    if out=$("${h[@]}" install bad "$chart" -n invalid --create-namespace "${base[@]}" -f "$f" 2>&1); then
      die "$f: accepted by helm install"
    fi
    mapfile -t expects < <(sed -n 's/^# expect: //p' "$f")
    for e in "${expects[@]}"; do
      [[ "$out" == *"$e"* ]] || die "$f: refused, but the message does not name '$e': $out"
    done
    n=$((n + 1))
  done
  [ -z "$("${h[@]}" list -n invalid -a -q)" ] || die "a release was left by a refused install"
  log "ok: $n invalid values files refused, each naming what it expects; no release left"
  log "PASS in $((SECONDS - t0)) s"
}

case "${1:-test}" in
  build) build ;;
  test) run_test ;;
  up)
    [ $# -ge 2 ] || die "usage: scripts/kube-local.sh up DIR"
    [ -f "$KBIN/.complete" ] || build
    up "$(realpath -m "$2")"
    ;;
  down)
    [ $# -ge 2 ] || die "usage: scripts/kube-local.sh down DIR"
    down "$(realpath -m "$2")"
    ;;
  *) die "unknown command ${1:-} (build, test, up DIR, down DIR)" ;;
esac
