#!/usr/bin/env bash
# The main job on a fresh machine (README "Try it"): starts a local Kafka (scripts/kafka.sh),
# creates user_info, user_score and the output topic, produces the seed 000 example plus a few
# hundred generated rows, runs `sidejoin run` (user_info LEFT JOIN user_score ON user_id, with
# SIDEJOIN_ALLOW_GENERATED_RETRACTS=false), prints the output topic and shuts everything down.
# `scripts/demo.sh --replay` shows the same join through `sidejoin replay`, without Kafka;
# `scripts/demo.sh --avro` runs it on Avro topics with a local schema registry (scripts/registry.sh),
# Avro upsert output decoded with the registered schema (examples/avro_tool.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
# The Debian packages the build and the local Kafka need (installed when missing; scripts/setup.sh).
if [ "${1:-}" = "--replay" ]; then scripts/setup.sh build; else scripts/setup.sh demo; fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sidejoin-target}"
# With an example in the build, cargo resolves the dev-dependencies' features too, as
# `cargo test --release` (scripts/test.sh) does: the two commands share every compiled
# dependency, so the tests after the demo compile only sidejoin's own test targets.
echo "== building sidejoin (release; the first build takes 15-25 minutes: RocksDB and librdkafka)"
cargo build --release --quiet --bin sidejoin --example kafka_tool --example avro_tool
bin="$CARGO_TARGET_DIR/release/sidejoin"
tool="$CARGO_TARGET_DIR/release/examples/kafka_tool"
avro_tool="$CARGO_TARGET_DIR/release/examples/avro_tool"

if [ "${1:-}" = "--replay" ]; then
  set -a
  # shellcheck source=/dev/null
  . demo/left_join.env
  set +a
  echo "== left join as Flink emits it"
  "$bin" replay demo/user_info_and_score.jsonl 2>/dev/null
  echo "== with SIDEJOIN_ALLOW_GENERATED_RETRACTS=false"
  SIDEJOIN_ALLOW_GENERATED_RETRACTS=false "$bin" replay demo/user_info_and_score.jsonl 2>/dev/null
  exit 0
fi

dir=$(mktemp -d /tmp/sidejoin-demo.XXXXXX)
sj_pid=""
cleanup() {
  [ -n "$sj_pid" ] && kill "$sj_pid" 2>/dev/null && wait "$sj_pid" 2>/dev/null || true
  scripts/kafka.sh stop "$dir/kafka" >/dev/null 2>&1 || true
  scripts/registry.sh stop "$dir/registry" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

if [ "${1:-}" = "--avro" ]; then
  echo "== starting a local Kafka and a schema registry (first run downloads both from Maven Central)"
  bootstrap=$(scripts/kafka.sh start "$dir/kafka")
  registry=$(scripts/registry.sh start "$dir/registry")
  echo "   Kafka at $bootstrap, registry at $registry"
  for t in user_info user_score user_info_score; do
    "$tool" topic "$bootstrap" "$t" 3 >/dev/null
  done
  info='{"type":"record","name":"UserInfo","fields":[{"name":"user_id","type":"string"},{"name":"user_name","type":"string"}]}'
  score='{"type":"record","name":"UserScore","fields":[{"name":"user_id","type":"string"},{"name":"score","type":"int"},{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}'
  # The output schema is derived from the input subjects' schemas: they are registered (by the
  # first records) before sidejoin starts.
  printf '1\t{"user_id":"1","user_name":"zs"}\n' | "$avro_tool" produce "$bootstrap" "$registry" user_info "$info"
  sleep 1
  printf '1\t{"user_id":"1","score":25,"at":1700000000000}\n' | "$avro_tool" produce "$bootstrap" "$registry" user_score "$score"
  for i in $(seq 2 20); do printf '%d\t{"user_id":"%d","user_name":"user%d"}\n' "$i" "$i" "$i"; done \
    | "$avro_tool" produce "$bootstrap" "$registry" user_info "$info"
  for i in $(seq 2 10); do printf '%d\t{"user_id":"%d","score":%d,"at":%d}\n' "$i" "$i" "$((i * 10))" "$((1700000000000 + i))"; done \
    | "$avro_tool" produce "$bootstrap" "$registry" user_score "$score"
  echo "== running sidejoin: Avro in, Avro upsert out (schemas derived and registered at start)"
  SIDEJOIN_BOOTSTRAP_SERVERS="$bootstrap" SIDEJOIN_SCHEMA_REGISTRY_URL="$registry" \
  SIDEJOIN_APPLICATION_ID=sidejoin-demo-avro \
  SIDEJOIN_LEFT_TOPIC=user_info SIDEJOIN_RIGHT_TOPIC=user_score SIDEJOIN_OUTPUT_TOPIC=user_info_score \
  SIDEJOIN_LEFT_FORMAT=avro SIDEJOIN_RIGHT_FORMAT=avro SIDEJOIN_OUTPUT_FORMAT=avro \
  SIDEJOIN_JOIN_TYPE=left SIDEJOIN_LEFT_KEY=user_id SIDEJOIN_RIGHT_KEY=user_id \
  SIDEJOIN_SELECT='l.user_id AS user_id, l.user_name, r.score, r.at' \
  SIDEJOIN_ALLOW_GENERATED_RETRACTS=false SIDEJOIN_OUTPUT_MODE=upsert \
  SIDEJOIN_STATE_DIR="$dir/state" SIDEJOIN_HTTP_ADDR=127.0.0.1:0 \
    "$bin" run 2>"$dir/sidejoin.log" &
  sj_pid=$!
  addr=""
  for _ in $(seq 1 600); do
    addr=$(sed -n 's/.*http listening on \([0-9.:]*\).*/\1/p' "$dir/sidejoin.log" | head -1)
    [ -n "$addr" ] && curl -sf "http://$addr/readyz" >/dev/null && break
    sleep 0.1
  done
  sleep 3
  echo "== the output topic, decoded with the registered schemas (key <TAB> value):"
  "$avro_tool" consume "$bootstrap" "$registry" user_info_score 1000 5000 > "$dir/out.txt" || { tail -20 "$dir/sidejoin.log"; exit 1; }
  sort "$dir/out.txt" | head -12
  echo "   ... $(wc -l < "$dir/out.txt") records; the log says:"
  grep -E "registered|error|WARN" "$dir/sidejoin.log" | head -5 || true
  kill -TERM "$sj_pid"; wait "$sj_pid" && echo "   sidejoin exited 0"; sj_pid=""
  exit 0
fi

echo "== starting a local Kafka (first run downloads it from Maven Central)"
bootstrap=$(scripts/kafka.sh start "$dir/kafka")
echo "   Kafka at $bootstrap"
for t in user_info user_score user_info_score; do
  "$tool" topic "$bootstrap" "$t" 3 >/dev/null
done


echo "== running sidejoin: user_info LEFT JOIN user_score, SIDEJOIN_ALLOW_GENERATED_RETRACTS=false"
SIDEJOIN_BOOTSTRAP_SERVERS="$bootstrap" \
SIDEJOIN_APPLICATION_ID=sidejoin-demo \
SIDEJOIN_LEFT_TOPIC=user_info SIDEJOIN_RIGHT_TOPIC=user_score SIDEJOIN_OUTPUT_TOPIC=user_info_score \
SIDEJOIN_JOIN_TYPE=left SIDEJOIN_LEFT_KEY=user_id SIDEJOIN_RIGHT_KEY=user_id \
SIDEJOIN_SELECT='l.user_id AS user_id, l.user_name, r.score' \
SIDEJOIN_ALLOW_GENERATED_RETRACTS=false \
SIDEJOIN_STATE_DIR="$dir/state" SIDEJOIN_HTTP_ADDR=127.0.0.1:0 \
  "$bin" run 2>"$dir/sidejoin.log" &
sj_pid=$!

addr=""
for _ in $(seq 1 300); do
  addr=$(sed -n 's/.*http listening on \([0-9.:]*\).*/\1/p' "$dir/sidejoin.log" | head -1)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { cat "$dir/sidejoin.log"; exit 1; }
metric() {
  curl -s "http://$addr/metrics" | awk -v m="$1" 'index($0, m) == 1 {s += $2} END {print s + 0}'
}
wait_consumed() {
  for _ in $(seq 1 900); do
    [ "$(metric sidejoin_records_in_total)" -ge "$1" ] && return 0
    sleep 0.1
  done
  echo "sidejoin did not consume $1 records:"; tail -20 "$dir/sidejoin.log"; exit 1
}
for _ in $(seq 1 600); do
  curl -sf "http://$addr/readyz" >/dev/null && break
  sleep 0.1
done

echo "== seed 000: user_info [\"1\",\"zs\"] first, then user_score [\"1\",25]"
printf '{"user_id":"1"}\t{"user_id":"1","user_name":"zs"}\n' | "$tool" produce "$bootstrap" user_info
wait_consumed 1
printf '{"user_id":"1"}\t{"user_id":"1","score":25}\n' | "$tool" produce "$bootstrap" user_score
wait_consumed 2

echo "== then 200 more users and 100 more scores (keyed by user_id)"
for i in $(seq 2 201); do printf '{"user_id":"%d"}\t{"user_id":"%d","user_name":"user%d"}\n' "$i" "$i" "$i"; done \
  | "$tool" produce "$bootstrap" user_info
wait_consumed 202
for i in $(seq 1 100); do u=$(( (i * 7) % 250 + 2 )); printf '{"user_id":"%d"}\t{"user_id":"%d","score":%d}\n' "$u" "$u" "$i"; done \
  | "$tool" produce "$bootstrap" user_score
wait_consumed 302
echo "   consumed $(metric sidejoin_records_in_total) input records"
sleep 0.5

echo "== the output topic (key <TAB> Debezium envelope), first 12 records:"
"$tool" consume "$bootstrap" user_info_score 1000 5000 > "$dir/out.txt"
head -12 "$dir/out.txt"
echo "   ... $(wc -l < "$dir/out.txt") records in all; op=d records: $(grep -c '"op":"d"' "$dir/out.txt" || true)"
echo "== seed 000 (user 1): +I[1,zs,null] then +I[1,zs,25], no -D of the padded row in between"
grep '^{"user_id":"1"}' "$dir/out.txt" || true
echo "== a few metrics"
curl -s "http://$addr/metrics" | grep -E '^sidejoin_(records_in_total|records_out_total|generated_retracts_filtered_total|state_rows)' || true

echo "== stopping sidejoin (SIGTERM) and Kafka"
kill -TERM "$sj_pid"
wait "$sj_pid" && echo "   sidejoin exited 0" || echo "   sidejoin exited $?"
sj_pid=""
