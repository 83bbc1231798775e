#!/usr/bin/env bash
# The main job on a fresh machine (README "Try it"): builds sidejoin and replays the seed 000
# example (user_info LEFT JOIN user_score) twice: as Flink emits it, and with
# SIDEJOIN_ALLOW_GENERATED_RETRACTS=false, which keeps the -D of null-padded rows out of the output.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sidejoin-target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/sidejoin"

set -a
# shellcheck source=/dev/null
. demo/left_join.env
set +a

echo "== input (demo/user_info_and_score.jsonl)"
cat demo/user_info_and_score.jsonl
echo
echo "== left join as Flink emits it: every first match retracts the null-padded row"
"$bin" replay demo/user_info_and_score.jsonl 2>/dev/null
echo
echo "== with SIDEJOIN_ALLOW_GENERATED_RETRACTS=false: no generated retractions"
SIDEJOIN_ALLOW_GENERATED_RETRACTS=false "$bin" replay demo/user_info_and_score.jsonl 2>/dev/null
echo
echo "== the same as upsert records keyed by user_id (what an upsert-kafka sink would get)"
SIDEJOIN_ALLOW_GENERATED_RETRACTS=false SIDEJOIN_OUTPUT_MODE=upsert "$bin" replay --records demo/user_info_and_score.jsonl 2>/dev/null
