#!/usr/bin/env bash
# Kafka benchmark (not run in CI): on one local broker and the same N input records over KEYS keys
# (bench_produce: two topics `left` and `right`, PARTITIONS partitions, 5-column JSON rows), each
# mode consumes all N records from the beginning and writes its own output topic:
#   passthrough     sidejoin's hidden passthrough (same consumer/producer/commit code, records
#                   copied unchanged, no join)
#   run-in-memory   sidejoin, left join on id, primary keys on both sides, upsert output, memory state;
#                   both topics declared keyed by the join key (SIDEJOIN_<SIDE>_HASH_BY=none: the
#                   producer keys every record {"id":…}, as Flink's upsert-kafka reads them), so
#                   no side is repartitioned
#   run             the same with RocksDB state (SIDEJOIN_STATE_DIR), at least once
#   run-eos         the same, SIDEJOIN_PROCESSING_GUARANTEE=exactly_once (output in the
#                   checkpoint transactions, every SIDEJOIN_COMMIT_INTERVAL, 100 ms by default)
#   run-broadcast   `run` with SIDEJOIN_BROADCAST=right (not in the default set): every task
#                   reads all of `right` into its own state (PARTITIONS copies of the right side)
#   run-hashby      `run` with SIDEJOIN_LEFT_HASH_BY=$join_key (not in the default set): the left
#                   side goes through the repartition router first (one thread, transactional)
#   flink-rocksdb   the same join as Flink 2.2 SQL (scripts/flink/SidejoinFlinkJoin.java) at
#                   parallelism 1 in one JVM, upsert-kafka in and out, RocksDB state backend
#   flink-heap      the same with the hashmap (heap) state backend
# and, not in the default set, the star join (scripts/lib/bench-star.sh; its own topics: a fact
# topic of N rows over KEYS fact ids on PARTITIONS partitions, two dimension topics of DIM_ROWS
# rows on one partition each, all upsert JSON keyed by their primary key; output keyed by fact id):
#   star            sidejoin, the 3-way chain fact JOIN dim1 JOIN dim2 from SIDEJOIN_SQL with
#                   BROADCAST(dim1, dim2), RocksDB state, at least once
#   star-flink-rocksdb  the same chain as Flink 2.2 SQL (scripts/flink/SidejoinFlinkStar.java),
#                   parallelism 1, RocksDB
#   star-flink-heap the same with the hashmap (heap) state backend
# whose input records per mode are N + 2 * DIM_ROWS; after the table they get a state table:
# sidejoin's state rows and bytes against Flink's checkpoint size.
# It prints one table: records/s, CPU seconds, CPU µs per input record, CPU before the first
# output (start-up), peak RSS, throughput relative to the first mode, records out. Then it folds
# the join modes' output topics as upsert tables and says whether their final tables agree.
#
#   N=1000000 KEYS=100000 PARTITIONS=2 scripts/bench-kafka.sh
#   MODES="run flink-rocksdb" N=200000 scripts/bench-kafka.sh
#   MODES="star star-flink-rocksdb" N=1000000 KEYS=100000 DIM_ROWS=10000 scripts/bench-kafka.sh
#
# Timing, the same for every mode: each output topic has message.timestamp.type=LogAppendTime;
# a run ends when the process has consumed all N records (sidejoin: /metrics
# sidejoin_records_in_total; Flink: the join vertex's read-records from its REST API) and the output
# topic's end offsets have not grown for QUIET_MS (3000); records/s = N / (last - first append time
# in the output topic), so start-up (Flink's ~5 s) and the quiet wait drop out. CPU is
# utime+stime (+ children) from /proc/PID/stat and peak RSS VmHWM from /proc/PID/status, both
# sampled just before the process is stopped: they include start-up and the quiet wait.
#
# Environment:
#   N, KEYS, PARTITIONS, MODES (default: passthrough run-in-memory run run-eos
#     flink-rocksdb flink-heap; ratios are to the first mode)
#   DIM_ROWS (10000; the star modes' rows per dimension), STAR_SHAPE (star: both dimensions looked
#     up on fact columns, d1 = id1 and d2 = id2; chain: dim2 on dim1's column, region = id2),
#     STAR_JOIN (inner, the seed's; left)
#   QUIET_MS (3000), RUN_TIMEOUT (seconds per mode, 1800), KEEP_DIR=1 keeps the temp dir (logs)
#   FLINK_CHECKPOINT_INTERVAL (10s), FLINK_CHECKPOINT_MODE (AT_LEAST_ONCE)
#   FLINK_PRODUCER_PROPS ("linger.ms=5 batch.size=1000000": sidejoin's producer settings, see
#     src/kafka/mod.rs and librdkafka's batch.size default), FLINK_CONSUMER_PROPS (none),
#     FLINK_JVM_OPTS (scripts/flink.sh: "-Xms512m -Xmx2g -XX:+UseG1GC"), FLINK_LOG_LEVEL (INFO)
#   Extra SIDEJOIN_* variables (e.g. state settings) apply to the sidejoin runs.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${N:-1000000}"; KEYS="${KEYS:-100000}"; PARTITIONS="${PARTITIONS:-2}"
MODES="${MODES:-passthrough run-in-memory run run-eos flink-rocksdb flink-heap}"
QUIET_MS="${QUIET_MS:-3000}"; RUN_TIMEOUT="${RUN_TIMEOUT:-1800}"
FLINK_CHECKPOINT_INTERVAL="${FLINK_CHECKPOINT_INTERVAL:-10s}"
FLINK_CHECKPOINT_MODE="${FLINK_CHECKPOINT_MODE:-AT_LEAST_ONCE}"
FLINK_PRODUCER_PROPS="${FLINK_PRODUCER_PROPS-linger.ms=5 batch.size=1000000}"
FLINK_CONSUMER_PROPS="${FLINK_CONSUMER_PROPS-}"
FLINK_LOG_LEVEL="${FLINK_LOG_LEVEL:-INFO}"
DIM_ROWS="${DIM_ROWS:-10000}"; STAR_SHAPE="${STAR_SHAPE:-star}"; STAR_JOIN="${STAR_JOIN:-inner}"
for mode in $MODES; do
  case "$mode" in
    passthrough | run-in-memory | run | run-eos | run-broadcast | run-hashby | flink-rocksdb | flink-heap) ;;
    star | star-flink-rocksdb | star-flink-heap) ;;
    *) echo "bench-kafka.sh: unknown mode $mode (passthrough run-in-memory run run-eos run-broadcast run-hashby flink-rocksdb flink-heap star star-flink-rocksdb star-flink-heap)" >&2; exit 2 ;;
  esac
done
case "$STAR_SHAPE/$STAR_JOIN" in
  star/inner | star/left | chain/inner | chain/left) ;;
  *) echo "bench-kafka.sh: STAR_SHAPE is star or chain, STAR_JOIN inner or left" >&2; exit 2 ;;
esac
say() { printf 'bench-kafka.sh: %s\n' "$*" >&2; }
# shellcheck source=lib/bench-star.sh
source scripts/lib/bench-star.sh

dir=$(mktemp -d /tmp/sidejoin-bench.XXXXXX)
pid=""; watcher=""
cleanup() {
  local p
  for p in $watcher $pid; do
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  scripts/kafka.sh stop "$dir/kafka" >/dev/null 2>&1 || true
  if [ "${KEEP_DIR:-0}" = 1 ]; then say "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sidejoin-target}"
cargo build --release --quiet --bin sidejoin --example bench_produce --example topic_span --example state_size
# Copies: the target dir is shared, and a build of another checkout can replace release/sidejoin
# while the bench runs.
mkdir -p "$dir/bin"
cp "$CARGO_TARGET_DIR/release/sidejoin" "$CARGO_TARGET_DIR/release/examples/bench_produce" \
  "$CARGO_TARGET_DIR/release/examples/topic_span" "$CARGO_TARGET_DIR/release/examples/state_size" "$dir/bin/"
# BENCH_BIN: another sidejoin binary measured instead (A/B against an earlier revision).
[ -z "${BENCH_BIN:-}" ] || cp "$BENCH_BIN" "$dir/bin/sidejoin"
bin="$dir/bin/sidejoin"; span="$dir/bin/topic_span"
revision="$(git log -1 --format=%h -- src Cargo.toml Cargo.lock 2>/dev/null || true)"
[ -n "$revision" ] || revision=unknown
[ -z "$(git status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null)" ] || revision="$revision+changes"
[ -z "${BENCH_BIN:-}" ] || revision="$BENCH_BIN"
# Flink's jars and the job class before the broker starts, so no download is timed.
case " $MODES " in *" flink-"* | *" star-flink-"*) scripts/flink.sh build >/dev/null ;; esac
# The broker with its full JIT (the default C1-only setting favours start-up, not throughput).
export LOCAL_KAFKA_JVM_OPTS="${LOCAL_KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20}"
export LOCAL_KAFKA_HEAP_OPTS="${LOCAL_KAFKA_HEAP_OPTS:--Xms1g -Xmx1g}"
# Kafka's default initial rebalance delay (the project's broker has none, for tests): a process's
# workers then join one generation, as on a production broker, instead of the first taking every
# partition and a rebalance 3 s later (which also loses run-in-memory's state).
bootstrap=$(scripts/kafka.sh start "$dir/kafka" group.initial.rebalance.delay.ms=3000)
for mode in $MODES; do
  scripts/kafka.sh topic "$dir/kafka" "out-$mode" "$PARTITIONS" message.timestamp.type=LogAppendTime >/dev/null
done
# Each workload's topics when one of its modes runs.
if [ -n "$(for mode in $MODES; do is_star "$mode" || echo "$mode"; done)" ]; then
  for t in left right; do scripts/kafka.sh topic "$dir/kafka" "$t" "$PARTITIONS" >/dev/null; done
  "$dir/bin/bench_produce" "$bootstrap" left right "$N" "$KEYS"
fi
case " $MODES " in *" star"*) star_topics ;; esac

cat >"$dir/log4j2.properties" <<EOF
# The Flink job's log (its stderr goes to DIR/MODE.log).
status = warn
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %p %c{1} - %m%n
rootLogger.level = ${FLINK_LOG_LEVEL}
rootLogger.appenderRef.console.ref = STDERR
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
logger.kafkashaded.name = org.apache.flink.kafka.shaded.org.apache.kafka
logger.kafkashaded.level = WARN
logger.typeextractor.name = org.apache.flink.api.java.typeutils.TypeExtractor
logger.typeextractor.level = WARN
EOF

ticks=$(getconf CLK_TCK)
now() { date +%s; }
# alive PID: the process exists and is not a zombie.
alive() {
  local state
  state=$(awk '{sub(/^.*\) /, ""); print $1}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}
# fail MODE LOG MESSAGE: the tail of the mode's log, then exit 1 (the trap cleans up).
fail() { say "$1: $3"; tail -n 30 "$2" >&2; exit 1; }

# Sidejoin's consumed-record count, once it is listening.
# (Both print 0 while the endpoint is not answering yet; set -e and pipefail must not stop the run.)
sidejoin_consumed() {
  { curl -s "http://$1/metrics" || true; } | awk '/^sidejoin_records_in_total/ {s += $2} END {print s + 0}'
}
# The Flink job's join vertex input count (read-records over both inputs) from the REST API.
flink_consumed() {
  local job
  job=$({ curl -s "http://$1/jobs/overview" || true; } | { grep -o '"jid":"[0-9a-f]*"' || true; } | head -1 | cut -d'"' -f4)
  [ -n "$job" ] || { echo 0; return; }
  # One line per vertex; the join's "read-records" counts the records of both inputs.
  { curl -s "http://$1/jobs/$job" || true; } | tr -d '\n' | sed 's/{"id":/\n/g' |
    { grep '"name":"Join' || true; } | { grep -o '"read-records":[0-9]*' || true; } | head -1 | cut -d: -f2 |
    awk '{s += $1} END {print s + 0}'
}

# checkpoint_phases MODE ADDR: where sidejoin's checkpoints spent their time (ms per checkpoint,
# by phase: seal and wait stop processing; output, offsets and commit run while it goes on).
checkpoint_phases() {
  local line
  line=$({ curl -s "http://$2/metrics" || true; } | awk '
    /^sidejoin_checkpoint_phase_seconds_sum/ { match($0, /phase="[a-z]*"/); p = substr($0, RSTART + 7, RLENGTH - 8); sum[p] = $2 }
    /^sidejoin_checkpoint_phase_seconds_count/ { match($0, /phase="[a-z]*"/); p = substr($0, RSTART + 7, RLENGTH - 8); n[p] = $2 }
    END { for (p in sum) if (n[p] > 0) printf "%s %.1f ms (%d), ", p, 1000 * sum[p] / n[p], n[p] }')
  [ -z "$line" ] || say "$1: checkpoint phases, mean per checkpoint: ${line%, }"
}

# measure MODE: runs the mode until it consumed N records and its output is quiet; appends
# "mode records_s cpu_s cpu_first rss records_out tombstones span_s load1" to $dir/results.
# start_sidejoin COMMAND MODE OUTPUT STATE_DIR LOG [VAR=VALUE...]: `sidejoin COMMAND` in the
# background on the benchmark's join (left join on id, primary keys on both sides, upsert output)
# as application `bench-MODE`, with the extra variables.
start_sidejoin() {
  local command=$1 mode=$2 output=$3 state=$4 log=$5
  shift 5
  env SIDEJOIN_BOOTSTRAP_SERVERS="$bootstrap" SIDEJOIN_APPLICATION_ID="bench-$mode" \
    SIDEJOIN_LEFT_TOPIC=left SIDEJOIN_RIGHT_TOPIC=right SIDEJOIN_OUTPUT_TOPIC="$output" \
    SIDEJOIN_JOIN_TYPE=left SIDEJOIN_LEFT_KEY=id SIDEJOIN_RIGHT_KEY=id \
    SIDEJOIN_LEFT_PRIMARY_KEY="${SIDEJOIN_LEFT_PRIMARY_KEY-id}" SIDEJOIN_RIGHT_PRIMARY_KEY="${SIDEJOIN_RIGHT_PRIMARY_KEY-id}" \
    SIDEJOIN_OUTPUT_MODE="${SIDEJOIN_OUTPUT_MODE:-upsert}" SIDEJOIN_ALLOW_GENERATED_RETRACTS=false \
    SIDEJOIN_LEFT_HASH_BY="${SIDEJOIN_LEFT_HASH_BY-none}" SIDEJOIN_RIGHT_HASH_BY="${SIDEJOIN_RIGHT_HASH_BY-none}" \
    SIDEJOIN_HTTP_ADDR=127.0.0.1:0 SIDEJOIN_STATE_DIR="$state" "$@" \
    "$bin" "$command" 2>"$log" &
}

measure() {
  local mode=$1 out="out-$1" log="$dir/$1.log" gate="$dir/$1.consumed" want=$N
  is_star "$mode" && want=$(star_inputs)
  case "$mode" in
    flink-* | star-flink-*)
      local backend=rocksdb job=() kv
      case "$mode" in *-heap) backend=hashmap ;; esac
      job=(checkpoint.dir="$dir/checkpoints-$mode" checkpoint.interval="$FLINK_CHECKPOINT_INTERVAL"
        checkpoint.mode="$FLINK_CHECKPOINT_MODE" flink.metrics.fetcher.update-interval=1000)
      for kv in $FLINK_PRODUCER_PROPS; do job+=("producer.$kv"); done
      for kv in $FLINK_CONSUMER_PROPS; do job+=("consumer.$kv"); done
      if is_star "$mode"; then
        start_flink_star "$mode" "$out" "$log" "$backend" "${job[@]}"
      else
        FLINK_TMPDIR="$dir/tmp-$mode" scripts/flink.sh run "$dir/log4j2.properties" \
          bootstrap="$bootstrap" left=left right=right output="$out" backend="$backend" \
          group="bench-$mode" "${job[@]}" >"$log" 2>&1 &
      fi
      ;;
    star) start_star "$mode" "$out" "$dir/state-$mode" "$log" ;;
    *)
      local command=$mode guarantee=at_least_once extra=()
      [ "$mode" = run-eos ] && command=run guarantee=exactly_once
      [ "$mode" = run-broadcast ] && command=run extra=(SIDEJOIN_BROADCAST=right)
      [ "$mode" = run-hashby ] && command=run extra=('SIDEJOIN_LEFT_HASH_BY=$join_key')
      start_sidejoin "$command" "$mode" "$out" "$dir/state-$mode" "$log" \
        SIDEJOIN_PROCESSING_GUARANTEE=$guarantee "${extra[@]}"
      ;;
  esac
  pid=$!
  # The watcher runs from the start, so it sees the first output record (CPU at that moment).
  CLK_TCK=$ticks "$span" watch "$bootstrap" "$out" "$QUIET_MS" "$RUN_TIMEOUT" "$pid" "$gate" \
    >"$dir/$mode.watch" 2>>"$log" &
  watcher=$!
  local deadline=$(($(now) + RUN_TIMEOUT)) addr="" consumed=0
  while [ "$consumed" -lt "$want" ]; do
    alive "$pid" || fail "$mode" "$log" "the process died"
    [ "$(now)" -lt "$deadline" ] || fail "$mode" "$log" "consumed $consumed of $want records in ${RUN_TIMEOUT}s"
    if [ -z "$addr" ]; then
      case "$mode" in
        flink-* | star-flink-*) addr=$(sed -n 's/.*Rest endpoint listening at \([0-9.:]*\).*/\1/p' "$log" | head -1) ;;
        *) addr=$(sed -n 's/.*http listening on \([0-9.:]*\).*/\1/p' "$log" | head -1) ;;
      esac
    fi
    if [ -n "$addr" ]; then
      case "$mode" in
        flink-*) consumed=$(flink_consumed "$addr") ;;
        star-flink-*) consumed=$(flink_star_consumed "$addr") ;;
        star) consumed=$(sidejoin_star_consumed "$addr") ;;
        *) consumed=$(sidejoin_consumed "$addr") ;;
      esac
    fi
    sleep 0.25
  done
  local consumed_ms; consumed_ms=$(date +%s%3N)
  touch "$gate"
  wait "$watcher" || fail "$mode" "$log" "no quiescence of $out"
  watcher=""
  local cpu rss
  cpu=$(awk -v t="$ticks" '{sub(/^.*\) /, ""); print ($12 + $13 + $14 + $15) / t}' "/proc/$pid/stat")
  rss=$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$pid/status")
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  case "$mode" in
    flink-* | star-flink-*) ;;
    *) checkpoint_phases "$mode" "$addr" ;;
  esac
  # After CPU and RSS were read: Flink's state waits for its next checkpoint.
  is_star "$mode" && star_state_running "$mode" "$addr" "$consumed_ms"
  kill -TERM "$pid"
  wait "$pid" || true
  pid=""
  local end cpu_first first_out records tombstones first last type
  read -r end cpu_first first_out _ <<<"$(tr ' ' '\n' <"$dir/$mode.watch" | cut -d= -f2 | tr '\n' ' ')"
  read -r records tombstones first last type <<<"$("$span" span "$bootstrap" "$out" | tr ' ' '\n' | cut -d= -f2 | tr '\n' ' ')"
  [ "$type" = LogAppendTime ] || say "warning: $out has $type timestamps, not LogAppendTime"
  [ "$records" = "$end" ] || say "warning: $out: $records records read, end offsets $end"
  local span_ms=$((last - first))
  [ "$span_ms" -gt 0 ] || span_ms=1
  echo "$mode $(echo "$want * 1000 / $span_ms" | bc -l) $cpu $cpu_first $rss $records $tombstones $(echo "$span_ms / 1000" | bc -l) $load $want" >>"$dir/results"
  say "$mode: first output after ${first_out} s; $records records out, append times span ${span_ms} ms, CPU ${cpu} s, peak RSS ${rss} MiB"
  [ "$mode" != star ] || star_state_stopped "$mode"
}

# restore_rate MODE: the mode's state restored from its changelog topics by a new instance with
# an empty state directory (a lost volume); prints the restore log line (records, seconds, rate).
restore_rate() {
  local mode=$1 log="$dir/$1-restore.log"
  if is_star "$mode"; then
    start_star "$mode" "out-$mode" "$dir/state-$mode-restored" "$log"
  else
    start_sidejoin run "$mode" "out-$mode" "$dir/state-$mode-restored" "$log"
  fi
  pid=$!
  local deadline=$(($(now) + RUN_TIMEOUT))
  # Every task (one per partition) logs its restore.
  until [ "$(grep -c "state restored" "$log" || true)" -ge "$PARTITIONS" ]; do
    alive "$pid" || fail "$mode restore" "$log" "the process died"
    [ "$(now)" -lt "$deadline" ] || fail "$mode restore" "$log" "not restored in ${RUN_TIMEOUT}s"
    sleep 0.2
  done
  kill -TERM "$pid"; wait "$pid" || true; pid=""
  grep "restored [0-9]* records" "$log" | sed 's/.*restored/restored/' | while read -r line; do say "$mode: $line"; done
}
: >"$dir/results"
for mode in $MODES; do measure "$mode"; done

case " $MODES " in *" run "*) restore_rate run ;; esac

printf '\n%-14s %10s %8s %7s %10s %11s %8s %8s %11s %10s %6s\n' mode records/s span_s cpu_s cpu_us/rec startup_cpu rss_MiB vs_first records_out tombstones load1
base=""
while read -r mode r cpu cpu_first rss records tombstones span_s load inputs; do
  [ -z "$base" ] && base=$r
  printf '%-14s %10.0f %8.2f %7.1f %10.2f %11.1f %8.0f %7.0f%% %11s %10s %6s\n' "$mode" "$r" "$span_s" "$cpu" \
    "$(echo "$cpu * 1000000 / $inputs" | bc -l)" "$cpu_first" "$rss" "$(echo "100 * $r / $base" | bc -l)" "$records" "$tombstones" "$load"
done <"$dir/results"
echo "(N=$N, KEYS=$KEYS, PARTITIONS=$PARTITIONS, sidejoin at $revision; records/s = N / output append-time span;"
echo " cpu_s and rss include start-up and the ${QUIET_MS} ms quiet wait; startup_cpu = CPU s before the first output;"
echo " load1 = the machine's 1-minute load average at the end of the mode ($(nproc) cores): other work makes figures noisy;"
echo " run = RocksDB state, run-in-memory = memory state; Flink 2.2.0 SQL, parallelism 1, one JVM,"
echo " checkpoints every $FLINK_CHECKPOINT_INTERVAL $FLINK_CHECKPOINT_MODE (RocksDB incremental), producer: $FLINK_PRODUCER_PROPS)"
case " $MODES " in
  *" star"*)
    echo "(star modes: DIM_ROWS=$DIM_ROWS, STAR_SHAPE=$STAR_SHAPE, STAR_JOIN=$STAR_JOIN; their records/s and cpu_us/rec"
    echo " count N + 2 * DIM_ROWS = $(star_inputs) input records)"
    # shellcheck disable=SC2046 # one word per mode
    star_state_table $(for mode in $MODES; do is_star "$mode" && echo "$mode"; done)
    ;;
esac

# The final tables of the join modes (upsert folds of their output topics) against the first one
# of the same workload (the two-way join, the star join).
ref="" star_ref=""
for mode in $MODES; do
  [ "$mode" = passthrough ] && continue
  if is_star "$mode"; then
    if [ -z "$star_ref" ]; then star_ref=$mode; continue; fi
    ref_of_mode=$star_ref
  else
    if [ -z "$ref" ]; then ref=$mode; continue; fi
    ref_of_mode=$ref
  fi
  if verdict=$("$span" compare "$bootstrap" "out-$ref_of_mode" "out-$mode"); then
    echo "final table of $mode = $ref_of_mode: $verdict"
  else
    echo "WARNING: final table of $mode differs from $ref_of_mode: $verdict"
  fi
done
