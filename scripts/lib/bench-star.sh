# scripts/lib/bench-star.sh - the star-join modes of scripts/bench-kafka.sh, sourced by it (its
# variables: dir, bootstrap, bin, N, KEYS, DIM_ROWS, PARTITIONS, STAR_SHAPE, STAR_JOIN, RUN_TIMEOUT,
# FLINK_CHECKPOINT_INTERVAL; its functions say, now, alive, fail, restore_rate).
#
# The workload (examples/bench_produce.rs `star`): star-dim1 and star-dim2, DIM_ROWS rows each
# (one partition each), then star-fact, N rows over KEYS fact ids (PARTITIONS partitions); the
# chain fact JOIN dim1 ON d1 = id1 JOIN dim2 ON d2 = id2 (STAR_SHAPE=star), or ON region = id2
# (STAR_SHAPE=chain: dim2 looked up on a column of dim1), inner joins (STAR_JOIN=left: left joins),
# upsert output keyed by the fact id.
#
# State: sidejoin's rows per input from /metrics (sidejoin_state_rows), its RocksDB files at the
# end of the run (SST and write-ahead log: the memtables of a run this size are usually not flushed
# yet), the same state restored from its changelog topics into an empty directory (written as
# SST files: the state at rest) and the changelog topics' log segments on the broker; Flink's last
# completed checkpoint taken after the input was processed (REST /jobs/:id/checkpoints,
# state_size: the full size of an incremental RocksDB checkpoint, per operator in the log) and the
# SST files in its local RocksDB directories at that moment.

# is_star MODE: whether MODE is one of the star modes.
is_star() { case "$1" in star | star-*) return 0 ;; *) return 1 ;; esac; }

# star_inputs: the input records of a star mode (fact rows and both dimensions).
star_inputs() { echo $((N + 2 * DIM_ROWS)); }

# star_topics: creates and fills the star workload's topics.
star_topics() {
  scripts/kafka.sh topic "$dir/kafka" star-fact "$PARTITIONS" >/dev/null
  scripts/kafka.sh topic "$dir/kafka" star-dim1 1 >/dev/null
  scripts/kafka.sh topic "$dir/kafka" star-dim2 1 >/dev/null
  "$dir/bin/bench_produce" star "$bootstrap" star-fact star-dim1 star-dim2 "$N" "$KEYS" "$DIM_ROWS"
}

# star_sql MODE OUTPUT: writes the Flink SQL script sidejoin runs (SIDEJOIN_SQL_FILE) for MODE
# into $dir/MODE.sql and prints its path: the query of scripts/flink/SidejoinFlinkStar.java with
# both dimensions broadcast.
star_sql() {
  local mode=$1 output=$2 file="$dir/$1.sql" join=JOIN on=d2 hint="BROADCAST(dim1, dim2)"
  [ "$STAR_JOIN" = left ] && join="LEFT JOIN" hint="$hint, OPTIONS('allows.generated-retracts'='false')"
  [ "$STAR_SHAPE" = chain ] && on=region
  local with="'connector'='upsert-kafka', 'properties.bootstrap.servers'='$bootstrap',
    'key.format'='json', 'value.format'='json', 'value.fields-include'='ALL'"
  local source="$with, 'properties.group.id'='bench-$mode'"
  cat >"$file" <<EOF
CREATE TABLE fact (id BIGINT, d1 BIGINT, d2 BIGINT, qty BIGINT, amount BIGINT, ts BIGINT,
  PRIMARY KEY (id) NOT ENFORCED) WITH ('topic'='star-fact', $source);
CREATE TABLE dim1 (id1 BIGINT, name1 STRING, region BIGINT, ts1 BIGINT,
  PRIMARY KEY (id1) NOT ENFORCED) WITH ('topic'='star-dim1', $source);
CREATE TABLE dim2 (id2 BIGINT, name2 STRING, tier BIGINT, ts2 BIGINT,
  PRIMARY KEY (id2) NOT ENFORCED) WITH ('topic'='star-dim2', $source);
CREATE TABLE o (id BIGINT, d1 BIGINT, d2 BIGINT, qty BIGINT, amount BIGINT, ts BIGINT,
  name1 STRING, region BIGINT, name2 STRING, tier BIGINT, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('topic'='$output', $with, 'sink.delivery-guarantee'='at-least-once');
INSERT INTO o SELECT /*+ $hint */ id, d1, d2, qty, amount, ts, name1, region, name2, tier
FROM fact $join dim1 ON d1 = id1 $join dim2 ON $on = id2;
EOF
  echo "$file"
}

# start_star MODE OUTPUT STATE_DIR LOG [VAR=VALUE...]: `sidejoin run` on the star join in the
# background, RocksDB state in STATE_DIR, at least once.
start_star() {
  local mode=$1 output=$2 state=$3 log=$4 sql
  shift 4
  sql=$(star_sql "$mode" "$output")
  env SIDEJOIN_SQL_FILE="$sql" SIDEJOIN_HTTP_ADDR=127.0.0.1:0 SIDEJOIN_STATE_DIR="$state" "$@" \
    "$bin" run 2>"$log" &
}

# start_flink_star MODE OUTPUT LOG BACKEND [JOB ARGS...]: the Flink job of the star join.
start_flink_star() {
  local mode=$1 output=$2 log=$3 backend=$4
  shift 4
  FLINK_JOB_CLASS=SidejoinFlinkStar FLINK_TMPDIR="$dir/tmp-$mode" scripts/flink.sh run \
    "$dir/log4j2.properties" bootstrap="$bootstrap" output="$output" backend="$backend" \
    shape="$STAR_SHAPE" join="$STAR_JOIN" group="bench-$mode" "$@" >"$log" 2>&1 &
}

# sidejoin_star_consumed ADDR: the input records sidejoin has consumed, each input counted up to
# its size (a broadcast dimension is read by every task).
sidejoin_star_consumed() {
  { curl -s "http://$1/metrics" || true; } | awk -v fact="$N" -v dim="$DIM_ROWS" '
    /^sidejoin_records_in_total/ { match($0, /side="[a-z0-9]*"/); n[substr($0, RSTART + 6, RLENGTH - 7)] += $2 }
    function upto(x, m) { return x < m ? x : m }
    END { print upto(n["left"], fact) + upto(n["right"], dim) + upto(n["dim2"], dim) }'
}

# flink_json ADDR PATH PYTHON: runs PYTHON on the JSON Flink's REST API answers at PATH (as `j`;
# `job` is the first job's id); prints nothing when it does not answer yet.
flink_json() {
  local job
  job=$({ curl -s "http://$1/jobs/overview" || true; } | { grep -o '"jid":"[0-9a-f]*"' || true; } | head -1 | cut -d'"' -f4)
  [ -n "$job" ] || return 0
  { curl -s "http://$1/jobs/$job$2" || true; } | python3 -c "
import json, sys
try:
    j = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
job = '$job'
$3" 2>/dev/null || true
}

# flink_star_consumed ADDR: the records the job's sources have emitted (every source is its own
# vertex, before the exchange to the joins).
flink_star_consumed() {
  local n
  n=$(flink_json "$1" "" '
print(sum(v.get("metrics", {}).get("write-records", 0) for v in j.get("vertices", [])
          if v.get("name", "").startswith("Source")))')
  echo "${n:-0}"
}

# sidejoin_state_rows ADDR: "side=rows ..." from /metrics.
sidejoin_state_rows() {
  { curl -s "http://$1/metrics" || true; } | awk '
    /^sidejoin_state_rows/ { match($0, /side="[a-z0-9]*"/); printf "%s=%d ", substr($0, RSTART + 6, RLENGTH - 7), $2 }'
}

# bytes_of DIR PATTERN [FIND TESTS...]: total size of the files under DIR whose name matches
# PATTERN.
bytes_of() {
  local d=$1 name=$2
  shift 2
  { find "$d" -type f -name "$name" "$@" -printf '%s\n' 2>/dev/null || true; } | awk '{s += $1} END {print s + 0}'
}

# star_state_running MODE ADDR SINCE_MS: the state figures read while the mode still runs
# (SINCE_MS: when its input was all consumed); written to $dir/MODE.state as key=value lines.
star_state_running() {
  local mode=$1 addr=$2 since=$3 out="$dir/$1.state"
  case "$mode" in
    star-flink-*)
      # The last checkpoint that started after the input was consumed holds all of the state.
      local deadline=$(($(now) + RUN_TIMEOUT)) line=""
      while [ -z "$line" ]; do
        alive "$pid" || fail "$mode" "$dir/$mode.log" "the process died"
        [ "$(now)" -lt "$deadline" ] || fail "$mode" "$dir/$mode.log" "no checkpoint after the input in ${RUN_TIMEOUT}s"
        line=$(flink_json "$addr" /checkpoints "
c = (j.get('latest') or {}).get('completed') or {}
if c.get('trigger_timestamp', 0) >= $since:
    print(c['id'], c.get('state_size', 0), c.get('checkpointed_size', 0))")
        [ -n "$line" ] || sleep 1
      done
      local id size incremental
      read -r id size incremental <<<"$line"
      {
        echo "checkpoint=$size"
        echo "checkpoint_incremental=$incremental"
        echo "flink_sst=$(bytes_of "$dir/tmp-$mode" '*.sst')"
      } >"$out"
      say "$mode: checkpoint $id: state $size bytes ($incremental uploaded); per operator: $(flink_operator_state "$addr" "$id")"
      ;;
    *) echo "rows=$(sidejoin_state_rows "$addr")" >"$out" ;;
  esac
}

# flink_operator_state ADDR CHECKPOINT: "vertex name: state bytes; ..." of one checkpoint.
flink_operator_state() {
  local names
  names=$(flink_json "$1" "" '
for v in j.get("vertices", []): print(v["id"], v["name"][:60].replace("\n", " "))')
  flink_json "$1" "/checkpoints/details/$2" "
names = dict(l.split(' ', 1) for l in '''$names'''.splitlines() if ' ' in l)
print('; '.join('%s: %d' % (names.get(k, k), t.get('state_size', 0))
                for k, t in j.get('tasks', {}).items() if t.get('state_size', 0)))"
}

# star_state_stopped MODE: the state figures read after sidejoin stopped: its RocksDB files, the
# changelog topics, and the state restored from them into an empty directory.
star_state_stopped() {
  local mode=$1 out="$dir/$1.state" state="$dir/state-$1"
  {
    echo "sst=$(bytes_of "$state" '*.sst')"
    echo "wal=$(bytes_of "$state" '*.log')"
    echo "changelog=$(bytes_of "$dir/kafka/data" "*.log" -path "*bench-$mode-*-changelog-*")"
  } >>"$out"
  restore_rate "$mode"
  echo "restored=$(bytes_of "$state-restored" '*.sst')" >>"$out"
  # The state at rest: the restored state compacted whole (examples/state_size.rs), a copy per
  # worker directory; its entries by kind go to stderr.
  local at_rest=0 db live
  rm -rf "$state-compacted" && cp -r "$state-restored" "$state-compacted"
  while IFS= read -r db; do
    live=$("$dir/bin/state_size" "$db" | tee -a "$dir/$mode.entries" | sed -n 's/^live_sst_bytes=\([0-9]*\).*/\1/p')
    at_rest=$((at_rest + ${live:-0}))
  done < <(find "$state-compacted" -name CURRENT -printf '%h\n' | sort)
  say "$mode: state at rest (compacted): $at_rest bytes; entries by kind: $(grep -h '^entries tag' "$dir/$mode.entries" | sed 's/^entries //' | sort | uniq -c | awk '{$1=$1};1' | paste -sd ';' -)"
  echo "at_rest=$at_rest" >>"$out"
}

# state_field MODE KEY: one figure of $dir/MODE.state ("-" when absent).
state_field() {
  local v
  v=$(sed -n "s/^$2=//p" "$dir/$1.state" 2>/dev/null | head -1)
  echo "${v:--}"
}

# star_state_table MODES...: the state of the star modes, one line each, then the check that
# sidejoin's state rows are its input rows.
star_state_table() {
  local inputs=$((KEYS < N ? KEYS : N)) flink="" mode
  for mode in "$@"; do
    case "$mode" in star-flink-rocksdb) flink=$(state_field "$mode" checkpoint) ;; esac
  done
  printf '\n%-20s %10s %10s %12s %12s %12s %12s %12s %12s %12s %8s\n' mode input_rows state_rows \
    rocksdb_sst rocksdb_wal restored_sst at_rest changelog checkpoint flink_sst vs_flink
  for mode in "$@"; do
    local rows="-" mine="" ratio="-"
    case "$mode" in
      star-flink-*) mine=$(state_field "$mode" checkpoint) ;;
      *)
        rows=$(state_field "$mode" rows | tr ' ' '\n' | awk -F= '{s += $2} END {print s + 0}')
        mine=$(state_field "$mode" at_rest)
        ;;
    esac
    [ -n "$flink" ] && [ "$flink" != - ] && [ "$flink" -gt 0 ] && [ "$mine" != - ] &&
      ratio=$(awk -v a="$mine" -v b="$flink" 'BEGIN {printf "%.0f%%", 100 * a / b}')
    printf '%-20s %10s %10s %12s %12s %12s %12s %12s %12s %12s %8s\n' "$mode" $((inputs + 2 * DIM_ROWS)) "$rows" \
      "$(state_field "$mode" sst)" "$(state_field "$mode" wal)" "$(state_field "$mode" restored)" "$(state_field "$mode" at_rest)" \
      "$(state_field "$mode" changelog)" "$(state_field "$mode" checkpoint)" "$(state_field "$mode" flink_sst)" "$ratio"
  done
  echo "(input_rows = fact ids + dimension rows, the rows of the final inputs; bytes: rocksdb_sst and rocksdb_wal"
  echo " = sidejoin's state directory at the end of the run, restored_sst = that state restored from its"
  echo " changelog into an empty directory (SST files only; old versions and deletions of the uncompacted"
  echo " changelog included), at_rest = the restored state compacted whole (its live SST files),"
  echo " changelog = its changelog topics' log segments"
  echo " (not compacted yet), checkpoint = Flink's last checkpoint after the input (state_size of an"
  echo " incremental RocksDB checkpoint), flink_sst = Flink's local RocksDB SST files then;"
  echo " vs_flink = at_rest (sidejoin) or checkpoint (Flink) / the star-flink-rocksdb checkpoint)"
  for mode in "$@"; do
    [ "$mode" = star ] || continue
    local rows expect
    rows=$(state_field "$mode" rows | tr ' ' '\n' | sort | xargs)
    # Each task (a fact partition) holds the fact rows of its partition and a whole copy of each
    # broadcast dimension.
    expect="dim2=$((PARTITIONS * DIM_ROWS)) left=$inputs right=$((PARTITIONS * DIM_ROWS))"
    if [ "$rows" = "$expect" ]; then
      echo "$mode: state rows $rows = the input rows ($inputs fact ids; $DIM_ROWS rows per dimension, held by each of the $PARTITIONS tasks)"
    else
      echo "WARNING: $mode: state rows $rows, expected $expect (the input rows: $inputs fact ids; $DIM_ROWS rows per dimension, held by each of the $PARTITIONS tasks)"
    fi
  done
}
