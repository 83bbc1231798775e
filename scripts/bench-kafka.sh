#!/usr/bin/env bash
# Kafka benchmark (not run in CI): on one local broker, the passthrough (consume both topics,
# produce every record unchanged, same consumer/producer/commit code) and sidejoin (left join on
# the key, with memory or RocksDB state) each consume the same N input records over KEYS keys;
# prints records/s, CPU seconds and peak RSS of each run and its throughput relative to the first.
#   N=1000000 KEYS=100000 PARTITIONS=2 scripts/bench-kafka.sh
# MODES picks the runs (default: passthrough, the join with memory state, the join with RocksDB
# state); ratios are to the first mode.
# Extra SIDEJOIN_* variables in the environment (e.g. state settings) apply to the sidejoin run.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-1000000}"; KEYS="${KEYS:-100000}"; PARTITIONS="${PARTITIONS:-2}"
MODES="${MODES:-passthrough run-in-memory run}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sidejoin-target}"
cargo build --release --quiet --bin sidejoin --example bench_produce
bin="$CARGO_TARGET_DIR/release/sidejoin"
dir=$(mktemp -d /tmp/sidejoin-bench.XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  scripts/kafka.sh stop "$dir/kafka" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
# The broker with its full JIT (the default C1-only setting favours start-up, not throughput).
export LOCAL_KAFKA_JVM_OPTS="${LOCAL_KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20}"
export LOCAL_KAFKA_HEAP_OPTS="${LOCAL_KAFKA_HEAP_OPTS:--Xms1g -Xmx1g}"
bootstrap=$(scripts/kafka.sh start "$dir/kafka")
for t in left right out-pass out-join; do scripts/kafka.sh topic "$dir/kafka" "$t" "$PARTITIONS" >/dev/null; done
"$CARGO_TARGET_DIR/release/examples/bench_produce" "$bootstrap" left right "$N" "$KEYS"

# Runs `sidejoin $1` until it consumed N records; prints "seconds cpu_seconds peak_rss_mib".
measure() {
  local mode=$1 out=$2 log="$dir/$1.log"
  SIDEJOIN_BOOTSTRAP_SERVERS="$bootstrap" SIDEJOIN_APPLICATION_ID="bench-$mode" \
  SIDEJOIN_LEFT_TOPIC=left SIDEJOIN_RIGHT_TOPIC=right SIDEJOIN_OUTPUT_TOPIC="$out" \
  SIDEJOIN_JOIN_TYPE=left SIDEJOIN_LEFT_KEY=id SIDEJOIN_RIGHT_KEY=id \
  SIDEJOIN_LEFT_PRIMARY_KEY="${SIDEJOIN_LEFT_PRIMARY_KEY-id}" SIDEJOIN_RIGHT_PRIMARY_KEY="${SIDEJOIN_RIGHT_PRIMARY_KEY-id}" \
  SIDEJOIN_OUTPUT_MODE="${SIDEJOIN_OUTPUT_MODE:-upsert}" SIDEJOIN_ALLOW_GENERATED_RETRACTS=false \
  SIDEJOIN_HTTP_ADDR=127.0.0.1:0 SIDEJOIN_STATE_DIR="$dir/state-$mode" \
    "$bin" "$mode" 2>"$log" &
  pid=$!
  local addr="" start="" now
  for _ in $(seq 1 600); do
    addr=$(sed -n 's/.*http listening on \([0-9.:]*\).*/\1/p' "$log" | head -1)
    [ -n "$addr" ] && break; sleep 0.05
  done
  local consumed=0
  while [ "$consumed" -lt "$N" ]; do
    consumed=$(curl -s "http://$addr/metrics" | awk '/^sidejoin_records_in_total/ {s += $2} END {print s + 0}')
    now=$(date +%s.%N)
    if [ -z "$start" ] && [ "$consumed" -gt 0 ]; then start=$now; start_count=$consumed; fi
    kill -0 "$pid" 2>/dev/null || { echo "$mode died:" >&2; tail "$log" >&2; exit 1; }
    sleep 0.05
  done
  local end=$now
  local produced; produced=$(curl -s "http://$addr/metrics" | awk '/^sidejoin_records_out_total/ {s += $2} END {print s + 0}')
  local ticks; ticks=$(getconf CLK_TCK)
  local cpu; cpu=$(awk -v t="$ticks" '{print ($14 + $15) / t}' "/proc/$pid/stat")
  local rss; rss=$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")
  kill -TERM "$pid"; wait "$pid" || true; pid=""
  echo "$(echo "$end - $start" | bc -l) $cpu $rss $start_count $produced"
}

rate() { echo "($N - $2) / $1" | bc -l; }
printf '\n%-14s %12s %10s %12s %14s %12s\n' mode records/s cpu_s peak_rss_MiB vs_first records_out
base=""
for mode in $MODES; do
  out=out-join; [ "$mode" = passthrough ] && out=out-pass
  read -r secs cpu rss first produced <<<"$(measure "$mode" "$out")"
  r=$(rate "$secs" "$first")
  [ -z "$base" ] && base=$r
  printf '%-14s %12.0f %10.1f %12.0f %13.0f%% %12s\n' "$mode" "$r" "$cpu" "$rss" "$(echo "100 * $r / $base" | bc -l)" "$produced"
done
echo "(N=$N, KEYS=$KEYS, PARTITIONS=$PARTITIONS; run = RocksDB state, run-in-memory = memory state)"
