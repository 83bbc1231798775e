#!/usr/bin/env bash
# scripts/image.sh - builds the container image from the unchanged Dockerfile with podman and runs
# its binary, without Docker and without pulling anything (docs/src/operations/kubernetes.md#checks-before-resolving). Run it
# before resolving a change to the Dockerfile, Cargo.toml or Cargo.lock; not part of .ci/run
# (a cold build compiles RocksDB and librdkafka once more: ~20-30 min on 2 cores).
#
#   scripts/image.sh base    the local stand-ins for the Dockerfile's FROM images:
#                            docker.io/library/debian:<DEBIAN_VERSION>-slim is a debootstrap
#                            --variant=minbase bookworm root file system (scripts/lib/debian-root.sh);
#                            docker.io/library/rust:<RUST_VERSION>-bookworm is that base plus
#                            ca-certificates (with this machine's own CAs from
#                            /usr/local/share/ca-certificates), curl, netbase and this machine's Rust toolchain
#                            (rustup's <RUST_VERSION> toolchain copied to /usr/local/rustup,
#                            RUSTUP_HOME, CARGO_HOME and PATH as the official image sets them)
#   scripts/image.sh build   base, then `podman build --isolation chroot --pull=never` of the
#                            Dockerfile, tagged localhost/sidejoin:<version> (layers cached)
#   scripts/image.sh smoke   the image's root file system exported (podman create + export) and
#                            its /usr/local/bin/sidejoin run with `chroot --userspec=65532:65532`,
#                            the root read-only apart from a writable state volume on
#                            /var/lib/sidejoin, against a local broker (scripts/kafka.sh): the
#                            seed 000 join (demo/left_join.env, demo/user_info_and_score.jsonl's
#                            rows), its output rows checked; also `sidejoin check`
#   scripts/image.sh         build, then smoke
#
# Podman runs with the vfs storage driver and its storage in $SIDEJOIN_TOOLS_HOME/podman (default
# ~/.cache/sidejoin-tools/podman), so the stand-ins and layers survive between runs. Containers
# cannot run on these machines (crun cannot set rlimits), hence chroot. Needs root, podman and
# debootstrap (installed with apt-get when missing), Java 17 and Maven for the broker.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${SIDEJOIN_TOOLS_HOME:-$HOME/.cache/sidejoin-tools}"
# shellcheck source=scripts/lib/debian-root.sh
. scripts/lib/debian-root.sh

log() { printf 'image.sh: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (podman's vfs storage, chroot, mounts)"
if ! command -v podman >/dev/null; then
  log "installing podman"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends podman >&2 \
    || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends podman >&2; }
fi

P=(podman --root "$TOOLS/podman/storage" --runroot "${XDG_RUNTIME_DIR:-/run}/sidejoin-podman" --storage-driver vfs)
arg() { sed -n "s/^ARG $1=//p" Dockerfile | head -1; }
RUST_VERSION=$(arg RUST_VERSION)
DEBIAN_VERSION=$(arg DEBIAN_VERSION)
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
DEBIAN_IMAGE="docker.io/library/debian:${DEBIAN_VERSION}-slim"
RUST_IMAGE="docker.io/library/rust:${RUST_VERSION}-bookworm"
IMAGE="localhost/sidejoin:$VERSION"
STD_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

cmd_base() {
  mkdir -p "$TOOLS/podman"
  exec 6>"$TOOLS/podman/.lock"
  flock 6
  if ! "${P[@]}" image exists "$DEBIAN_IMAGE"; then
    local tar
    tar=$(debian_root_tarball)
    log "importing $tar as $DEBIAN_IMAGE"
    "${P[@]}" import --change "ENV PATH=$STD_PATH" --change 'CMD ["bash"]' "$tar" "$DEBIAN_IMAGE" >/dev/null
  fi
  if ! "${P[@]}" image exists "$RUST_IMAGE"; then
    local tc="$HOME/.rustup/toolchains/$RUST_VERSION-x86_64-unknown-linux-gnu"
    [ -x "$tc/bin/cargo" ] || die "no Rust $RUST_VERSION toolchain at $tc (rustup toolchain install $RUST_VERSION)"
    local ctx="$TOOLS/podman/rust-context"
    rm -rf "$ctx"
    mkdir -p "$ctx/rustup/toolchains" "$ctx/cargo/bin" "$ctx/local-ca"
    # This machine's own CAs (/usr/local/share/ca-certificates: here, the TLS-intercepting egress
    # proxy's), so cargo can fetch crates in the build stage, as on the host.
    cp /usr/local/share/ca-certificates/*.crt "$ctx/local-ca/" 2>/dev/null || true
    log "making $RUST_IMAGE from $DEBIAN_IMAGE and $tc"
    cp -aL "$tc" "$ctx/rustup/toolchains/$RUST_VERSION-x86_64-unknown-linux-gnu"
    rm -rf "$ctx/rustup/toolchains/$RUST_VERSION-x86_64-unknown-linux-gnu/share/doc"
    printf 'version = "12"\ndefault_toolchain = "%s-x86_64-unknown-linux-gnu"\nprofile = "minimal"\nauto_self_update = "disable"\n' \
      "$RUST_VERSION" >"$ctx/rustup/settings.toml"
    cp -L "$HOME/.cargo/bin/rustup" "$ctx/cargo/bin/rustup"
    for b in cargo rustc rustdoc cargo-clippy clippy-driver cargo-fmt rustfmt; do ln -s rustup "$ctx/cargo/bin/$b"; done
    cat >"$ctx/Containerfile" <<EOT
FROM $DEBIAN_IMAGE
COPY local-ca /usr/local/share/ca-certificates
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl netbase && rm -rf /var/lib/apt/lists/*
COPY rustup /usr/local/rustup
COPY cargo /usr/local/cargo
ENV RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo PATH=/usr/local/cargo/bin:$STD_PATH RUST_VERSION=$RUST_VERSION
RUN cargo --version && rustc --version
EOT
    nice -n 15 "${P[@]}" build --isolation chroot --pull=never -t "$RUST_IMAGE" -f "$ctx/Containerfile" "$ctx" >&2
    rm -rf "$ctx"
  fi
  exec 6>&-
}

cmd_build() {
  cmd_base
  exec 6>"$TOOLS/podman/.lock"
  flock 6
  # An interrupted build leaves buildah's working containers (each a full copy with vfs).
  local stale
  mapfile -t stale < <("${P[@]}" ps -a --external -q)
  ((${#stale[@]} == 0)) || "${P[@]}" rm -f "${stale[@]}" >/dev/null
  log "podman build of the Dockerfile -> $IMAGE"
  local t0=$SECONDS
  nice -n 15 "${P[@]}" build --isolation chroot --pull=never --layers -t "$IMAGE" -f Dockerfile . >&2
  log "built $IMAGE in $((SECONDS - t0)) s"
  exec 6>&-
}

# A Kafka CLI class (the broker's own jars, scripts/kafka.sh fetch) against the broker of $work/kafka.
kafka_cli() {
  local class=$1; shift
  java -Xms32m -Xmx256m -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile="$work/kafka/tools-log4j2.properties" \
    -cp "${LOCAL_KAFKA_HOME:-$HOME/.cache/sidejoin-kafka}/${LOCAL_KAFKA_VERSION:-4.1.1}/libs/*" "$class" "$@"
}

# in_image USERSPEC ENV... -- CMD...: CMD in the exported root file system $work/rootfs, mounted
# read-only, with the writable $work/volume on /var/lib/sidejoin (the image's VOLUME), /proc and
# /dev, as USERSPEC, with only the environment ENV (a private mount namespace: nothing stays
# mounted). IN_IMAGE_PIDFILE: where to write CMD's pid.
in_image() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  unshare -m --propagation private bash -c '
    set -e
    r=$1 vol=$2 user=$3; shift 3
    [ -z "${IN_IMAGE_PIDFILE:-}" ] || echo $$ >"$IN_IMAGE_PIDFILE" # unshare, bash, env, chroot: one process
    mount --bind "$r" "$r"
    mount --bind "$vol" "$r/var/lib/sidejoin"
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    mount -o remount,bind,ro "$r"
    env=()
    while [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    exec env -i "${env[@]}" "$(command -v chroot)" --userspec="$user" "$r" "$@"' in_image "$work/rootfs" "$work/volume" "$@"
}

cmd_smoke() {
  "${P[@]}" image exists "$IMAGE" || die "no image $IMAGE: run scripts/image.sh build first"
  work=$(mktemp -d "${TMPDIR:-/var/tmp}/sidejoin-image-smoke.XXXXXX")
  sj_pid=""
  smoke_cleanup() {
    if [ -n "$sj_pid" ]; then
      kill "$(cat "$work/sidejoin.pid" 2>/dev/null)" 2>/dev/null || true
      wait "$sj_pid" 2>/dev/null || true
    fi
    scripts/kafka.sh stop "$work/kafka" >/dev/null 2>&1 || true
    rm -rf --one-file-system "$work"
  }
  trap smoke_cleanup EXIT INT TERM
  local t0=$SECONDS

  log "exporting the root file system of $IMAGE (podman create + podman export)"
  mkdir -p "$work/rootfs" "$work/volume"
  local cid
  cid=$("${P[@]}" create "$IMAGE")
  "${P[@]}" export "$cid" | tar -C "$work/rootfs" -xf -
  "${P[@]}" rm "$cid" >/dev/null
  local user
  user=$("${P[@]}" image inspect --format '{{.Config.User}}' "$IMAGE")
  [ "$user" = 65532:65532 ] || die "the image's USER is '$user', not 65532:65532"
  mapfile -t image_env < <("${P[@]}" image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE" | grep .)
  # The volume as a fresh one: owned by the image's user (Kubernetes: fsGroup), nothing else.
  chown 65532:65532 "$work/volume"
  chmod 0750 "$work/volume"

  # The root is read-only, the volume writable, for the image's user.
  if in_image 0:0 PATH=/usr/bin:/bin -- /bin/sh -c 'touch /usr/local/bin/probe' 2>/dev/null; then
    die "the root file system is writable in the chroot"
  fi
  in_image "$user" PATH=/usr/bin:/bin -- /bin/sh -c 'touch /var/lib/sidejoin/probe && rm /var/lib/sidejoin/probe' \
    || die "the volume /var/lib/sidejoin is not writable for $user"
  log "root file system read-only, /var/lib/sidejoin writable for $user"
  local sj_version
  sj_version=$(in_image "$user" "${image_env[@]}" -- /usr/local/bin/sidejoin --version 2>&1) \
    || die "the image's binary does not start: $sj_version"
  log "the image's binary runs: $sj_version"

  # The seed 000 join: demo/left_join.env's settings, demo/user_info_and_score.jsonl's rows.
  local join_env=()
  mapfile -t join_env < <(set -a; . demo/left_join.env; set +a; env | grep '^SIDEJOIN_')
  # The rows keyed by user_id (as scripts/demo.sh produces them): $work/input.tsv for the
  # broker, $work/input.jsonl (the same key and value bytes) for `sidejoin replay`.
  python3 - demo/user_info_and_score.jsonl "$work" <<'EOT'
import json, sys
c = lambda v: json.dumps(v, separators=(",", ":"))
with open(sys.argv[2] + "/input.tsv", "w") as tsv, open(sys.argv[2] + "/input.jsonl", "w") as jl:
    for line in open(sys.argv[1]):
        r = json.loads(line)
        r["key"] = {"user_id": r["value"]["user_id"]}
        tsv.write(r["side"] + "\t" + c(r["key"]) + "\t" + c(r["value"]) + "\n")
        jl.write(c(r) + "\n")
EOT
  in_image "$user" "${image_env[@]}" "${join_env[@]}" SIDEJOIN_ALLOW_GENERATED_RETRACTS=false -- \
    /usr/local/bin/sidejoin replay --records <"$work/input.jsonl" >"$work/replay.jsonl" 2>"$work/replay.log" \
    || { cat "$work/replay.log" >&2; die "sidejoin replay failed in the image"; }
  # The records the join must write: its replay's, one "key<TAB>value" line each, in order.
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(json.dumps(r["key"]) + "\t" + json.dumps(r["value"]))
' "$work/replay.jsonl" >"$work/expected.txt"

  log "starting a local broker (scripts/kafka.sh)"
  local bootstrap
  bootstrap=$(scripts/kafka.sh start "$work/kafka")
  for t in user_info user_score user_info_score; do
    kafka_cli org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --command-config "$work/kafka/admin.properties" \
      --create --topic "$t" --partitions 3 --replication-factor 1 >/dev/null
  done

  log "running the image's sidejoin as $user on the read-only root (state on the volume)"
  IN_IMAGE_PIDFILE="$work/sidejoin.pid" in_image "$user" "${image_env[@]}" "${join_env[@]}" SIDEJOIN_ALLOW_GENERATED_RETRACTS=false \
    SIDEJOIN_BOOTSTRAP_SERVERS="$bootstrap" SIDEJOIN_APPLICATION_ID=sidejoin-image-smoke \
    SIDEJOIN_LEFT_TOPIC=user_info SIDEJOIN_RIGHT_TOPIC=user_score SIDEJOIN_OUTPUT_TOPIC=user_info_score \
    SIDEJOIN_HTTP_ADDR=127.0.0.1:0 -- /usr/local/bin/sidejoin run 2>"$work/sidejoin.log" &
  sj_pid=$!
  for _ in $(seq 1 100); do [ -s "$work/sidejoin.pid" ] && break; sleep 0.1; done
  local addr=""
  for _ in $(seq 1 600); do
    addr=$(sed -n 's/.*http listening on \([0-9.:]*\).*/\1/p' "$work/sidejoin.log" | head -1)
    [ -n "$addr" ] && curl -sf "http://$addr/readyz" >/dev/null && break
    kill -0 "$sj_pid" 2>/dev/null || { cat "$work/sidejoin.log" >&2; die "sidejoin exited"; }
    sleep 0.1
  done
  curl -sf "http://$addr/readyz" >/dev/null || { tail -20 "$work/sidejoin.log" >&2; die "sidejoin not ready"; }
  consumed() { curl -s "http://$addr/metrics" | awk 'index($0, "sidejoin_records_in_total") == 1 {s += $2} END {print s + 0}'; }

  # One record at a time, in the file's order (each waits until sidejoin has consumed it: the
  # order between the two topics is the file's), keyed by user_id.
  local n=0 side key value topic
  while IFS=$'\t' read -r side key value; do
    topic=user_info; [ "$side" = right ] && topic=user_score
    printf '%s\t%s\n' "$key" "$value" | kafka_cli org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$bootstrap" \
      --topic "$topic" --property parse.key=true --property key.separator=$'\t' >/dev/null
    n=$((n + 1))
    for _ in $(seq 1 300); do [ "$(consumed)" -ge "$n" ] && break; sleep 0.1; done
    [ "$(consumed)" -ge "$n" ] || { tail -20 "$work/sidejoin.log" >&2; die "sidejoin did not consume record $n"; }
  done <"$work/input.tsv"
  log "sidejoin consumed $(consumed) records"

  local want
  want=$(wc -l <"$work/expected.txt")
  kafka_cli org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$bootstrap" --topic user_info_score \
    --from-beginning --max-messages "$want" --timeout-ms 20000 --isolation-level read_committed \
    --property print.key=true --property key.separator=$'\t' 2>/dev/null >"$work/out.txt" || true
  kill -TERM "$(cat "$work/sidejoin.pid")"
  local rc=0
  wait "$sj_pid" || rc=$?
  sj_pid=""
  echo "== the output topic (key <TAB> value):"
  cat "$work/out.txt"
  ((rc == 0)) || { tail -20 "$work/sidejoin.log" >&2; die "sidejoin exited $rc on SIGTERM"; }
  # Per key, the records in order (the topic keeps each key's order; keys may interleave).
  python3 - "$work/expected.txt" "$work/out.txt" <<'EOT' || die "the output topic is not the seed 000 join (above)"
import json, sys
def per_key(path):
    rows = {}
    for line in open(path):
        key, value = line.rstrip("\n").split("\t", 1)
        rows.setdefault(json.dumps(json.loads(key), sort_keys=True), []).append(json.loads(value))
    return rows
want, got = per_key(sys.argv[1]), per_key(sys.argv[2])
if got != want:
    print(f"image.sh: the output topic differs from the image's own `sidejoin replay --records`:\n  replay: {want}\n  topic:  {got}", file=sys.stderr)
    sys.exit(1)
def after(v):  # a Debezium envelope's row, or the bare row
    return (v.get("after", v) if isinstance(v, dict) else v) or {}
scores = {json.loads(k)["user_id"]: [after(v).get("score") for v in vs] for k, vs in got.items()}
if scores != {"1": [None, 25], "2": [None, 61]}:
    print(f"image.sh: seed 000's scores per user are {scores}, not 1: [null, 25], 2: [null, 61]", file=sys.stderr)
    sys.exit(1)
EOT
  [ -d "$work/volume/state" ] || die "no state written to the volume"
  log "PASS: the image's binary (uid 65532, read-only root, state on the volume) joined seed 000 like its replay: $want records ($((SECONDS - t0)) s)"
}

case "${1:-all}" in
  base) cmd_base ;;
  build) cmd_build ;;
  smoke) cmd_smoke ;;
  all) cmd_build && cmd_smoke ;;
  *) die "unknown command $1 (base, build, smoke)" ;;
esac
