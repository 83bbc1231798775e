#!/usr/bin/env bash
# Avro next to JSON on the local broker (not run in CI): the same N rows per side (user_id and one
# column, keyed by user_id, examples/avro_tool.rs `gen`) written once as Confluent Avro and once
# as JSON; `sidejoin run` (left join on user_id, primary keys, upsert output, RocksDB state)
# consumes each pair of topics from the beginning, in Avro → Avro, Avro → JSON and JSON → JSON.
# Printed per mode: seconds from the process start until it has consumed all 2N records (so
# start-up, ~1 s, is included) and input records per second.
#
#   N=200000 PARTITIONS=2 scripts/bench-avro.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-200000}"; PARTITIONS="${PARTITIONS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sidejoin-target}"
cargo build --release --quiet --bin sidejoin --example kafka_tool --example avro_tool
dir=$(mktemp -d /tmp/sidejoin-bench-avro.XXXXXX)
mkdir -p "$dir/bin"
cp "$CARGO_TARGET_DIR/release/sidejoin" "$CARGO_TARGET_DIR/release/examples/avro_tool" "$dir/bin/"
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  scripts/kafka.sh stop "$dir/kafka" >/dev/null 2>&1 || true
  scripts/registry.sh stop "$dir/registry" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
bootstrap=$(scripts/kafka.sh start "$dir/kafka")
registry=$(scripts/registry.sh start "$dir/registry")
for f in avro json; do
  for s in l r; do scripts/kafka.sh topic "$dir/kafka" "$f-$s" "$PARTITIONS" >/dev/null; done
  "$dir/bin/avro_tool" gen "$bootstrap" "$registry" "$f-l" "$N" info $([ $f = json ] && echo json)
  "$dir/bin/avro_tool" gen "$bootstrap" "$registry" "$f-r" "$N" score $([ $f = json ] && echo json)
done
printf '%-12s %10s %12s\n' mode seconds records/s
for mode in avro-avro avro-json json-json; do
  in=${mode%-*}; out=${mode#*-}
  scripts/kafka.sh topic "$dir/kafka" "out-$mode" "$PARTITIONS" >/dev/null
  : >"$dir/$mode.log"
  start=$(date +%s.%N)
  SIDEJOIN_BOOTSTRAP_SERVERS="$bootstrap" SIDEJOIN_SCHEMA_REGISTRY_URL="$registry" \
  SIDEJOIN_APPLICATION_ID="bench-$mode" SIDEJOIN_LEFT_TOPIC="$in-l" SIDEJOIN_RIGHT_TOPIC="$in-r" \
  SIDEJOIN_OUTPUT_TOPIC="out-$mode" SIDEJOIN_LEFT_FORMAT=$([ "$in" = avro ] && echo upsert-avro || echo upsert-json) \
  SIDEJOIN_RIGHT_FORMAT=$([ "$in" = avro ] && echo upsert-avro || echo upsert-json) \
  SIDEJOIN_OUTPUT_FORMAT="$out" SIDEJOIN_JOIN_TYPE=left SIDEJOIN_LEFT_KEY=user_id SIDEJOIN_RIGHT_KEY=user_id \
  SIDEJOIN_LEFT_PRIMARY_KEY=user_id SIDEJOIN_RIGHT_PRIMARY_KEY=user_id SIDEJOIN_OUTPUT_MODE=upsert \
  SIDEJOIN_SELECT='l.user_id AS user_id, l.user_name, r.score' SIDEJOIN_ALLOW_GENERATED_RETRACTS=false \
  SIDEJOIN_HTTP_ADDR=127.0.0.1:0 SIDEJOIN_STATE_DIR="$dir/state-$mode" \
    "$dir/bin/sidejoin" run 2>"$dir/$mode.log" &
  pid=$!
  addr=""
  while :; do
    kill -0 "$pid" 2>/dev/null || { tail -20 "$dir/$mode.log"; exit 1; }
    [ -n "$addr" ] || addr=$(sed -n 's/.*http listening on \([0-9.:]*\).*/\1/p' "$dir/$mode.log" | head -1)
    if [ -n "$addr" ]; then
      n=$({ curl -s "http://$addr/metrics" || true; } | awk '/^sidejoin_records_in_total/ {s += $2} END {print s + 0}')
      [ "$n" -ge $((2 * N)) ] && break
    fi
    sleep 0.05
  done
  end=$(date +%s.%N)
  kill -TERM "$pid"; wait "$pid" || true; pid=""
  awk -v m="$mode" -v s="$start" -v e="$end" -v n=$((2 * N)) \
    'BEGIN {printf "%-12s %10.2f %12.0f\n", m, e - s, n / (e - s)}'
done
