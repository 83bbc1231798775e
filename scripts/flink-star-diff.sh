#!/usr/bin/env bash
# scripts/flink-star-diff.sh - the star-join differential against Flink 2.2 SQL (issue 25, point 2;
# not run in CI: it needs a JVM). Random consistent changelogs over 3- and 4-input chains (INNER
# and LEFT mixes, dimensions looked up on the fact's columns and on earlier dimensions' columns,
# inserts, updates and deletes on every input), grouped into TOPOLOGIES chains:
#   1. star_differential generate   (crates/core/examples/star_differential) writes the cases
#                                    file: SEED, CASES cases round-robin over TOPOLOGIES chains
#   2. SidejoinStarDiff              (scripts/flink/SidejoinStarDiff.java) Flink SQL: one query
#                                    per topology over all its cases (every ON also matches
#                                    case_no), each case's result changelog materialised
#   3. star_differential compare     sidejoin's engine on each case alone, its output
#                                    materialised and compared with Flink's
# Prints every differing case and `N cases, M differ`. See scripts/flink/README.md.
#
#   scripts/flink-star-diff.sh
#   SEED=42 CASES=2000 TOPOLOGIES=20 scripts/flink-star-diff.sh
#
# Environment:
#   SEED (default: the clock's seconds; printed), CASES (500), TOPOLOGIES (16)
#   KEEP_DIR=1 keeps the temp dir (cases.txt, flink.jsonl, flink.log with each query's plan)
#   FLINK_JVM_OPTS ("-Xms256m -Xmx1g -XX:+UseG1GC"), CARGO_TARGET_DIR, JAVA_HOME
# Exit status: 0 every case agrees, 1 some case differs, 2 or other: the run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
SEED="${SEED:-$(date +%s)}"; CASES="${CASES:-500}"; TOPOLOGIES="${TOPOLOGIES:-16}"
say() { printf 'flink-star-diff.sh: %s\n' "$*" >&2; }

dir=$(mktemp -d /tmp/sidejoin-star-diff.XXXXXX)
cleanup() {
  if [ "${KEEP_DIR:-0}" = 1 ]; then say "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sidejoin-target}"
cargo build --release --quiet -p sidejoin-core --example star_differential
# A copy: the target dir is shared, and another checkout's build can replace the example.
cp "$CARGO_TARGET_DIR/release/examples/star_differential" "$dir/"
bin="$dir/star_differential"
say "seed $SEED, $CASES cases, $TOPOLOGIES topologies"
"$bin" generate "$SEED" "$CASES" "$TOPOLOGIES" "$dir/cases.txt"

classes="$(scripts/flink.sh build)"
lib="${classes%/classes/*}/lib"
java=java
[[ -z "${JAVA_HOME:-}" || ! -x "${JAVA_HOME}/bin/java" ]] || java="${JAVA_HOME}/bin/java"
cat >"$dir/log4j2.properties" <<EOF
status = warn
appender.console.type = Console
appender.console.name = STDERR
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %p %c{1} - %m%n
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = STDERR
EOF
read -r -a jvm_opts <<<"${FLINK_JVM_OPTS:--Xms256m -Xmx1g -XX:+UseG1GC}"
mkdir -p "$dir/tmp"
say "Flink 2.2 SQL over the cases (log: $dir/flink.log)"
start=$(date +%s)
if ! "$java" "${jvm_opts[@]}" -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
  -Djava.io.tmpdir="$dir/tmp" -Dlog4j2.configurationFile="$dir/log4j2.properties" \
  -cp "${classes}:${lib}/*" SidejoinStarDiff "$dir/cases.txt" "$dir/flink.jsonl" 2>"$dir/flink.log"; then
  tail -40 "$dir/flink.log" >&2
  say "the Flink job failed (KEEP_DIR=1 keeps its log)"
  exit 2
fi
grep '^sidejoin-star-diff: topology [0-9]*: [0-9]* chained rows' "$dir/flink.log" >&2 || true
say "Flink took $(($(date +%s) - start)) s; comparing with sidejoin's engine"
status=0
"$bin" compare "$dir/cases.txt" "$dir/flink.jsonl" || status=$?
say "seed $SEED (rerun: SEED=$SEED CASES=$CASES TOPOLOGIES=$TOPOLOGIES $0)"
exit "$status"
