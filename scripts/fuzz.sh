#!/usr/bin/env bash
# scripts/fuzz.sh - runs every cargo-fuzz target (fuzz/fuzz_targets, docs/src/operations/hostile-input.md#fuzzing)
# one after another, with the issue's limits: 2 GiB RSS, 5 s per input, inputs up to 1 MiB.
#   scripts/fuzz.sh [SECONDS] [TARGET…]        each target for SECONDS of wall time (default 30; .ci/run)
#   scripts/fuzz.sh --cpu SECONDS [TARGET…]    each target until its processes used SECONDS of CPU,
#                                              in slices of at most 300 s (the long run on a shared machine)
# Each target ends with a line `== fuzz T: U s user + S s system CPU in W s`. The nightly toolchain
# (rustup) and cargo-fuzz are installed when missing, cargo-fuzz into ~/.cache/sidejoin-tools (where
# CI caches its tools). A finding stops the run and is left in fuzz/artifacts/<target>/; new corpus
# entries go to a scratch directory (the committed corpus, fuzz/corpus/<target>, is only read).
# FUZZ_TIMEOUT=SECONDS raises the 5 s per input (libFuzzer's is wall time: a long run at `nice 19`
# beside builds and broker tests can be starved past 5 s on an input that takes 0.2 s alone).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=wall
if [ "${1:-}" = --cpu ]; then mode=cpu; shift; fi
secs="${1:-30}"
shift || true
tools="$HOME/.cache/sidejoin-tools"
export PATH="$PATH:$tools/bin"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --root "$tools"
target_dir="${FUZZ_TARGET_DIR:-$HOME/.cache/sidejoin-fuzz-target}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir fuzz)
cargo +nightly fuzz build --fuzz-dir fuzz --target-dir "$target_dir" -O

# User and system CPU seconds of this shell's finished children, into $cpu_user and $cpu_sys:
# bash's `times` (its second line), run in this shell itself — a subshell has its own children.
cpu_file=$(mktemp)
children_cpu() {
  times > "$cpu_file"
  read -r cpu_user cpu_sys < <(sed -n 2p "$cpu_file" |
    awk '{ for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); printf "%.1f ", p[1] * 60 + p[2] }; print "" }')
}

# One libFuzzer session of target $1 for $2 wall seconds over scratch corpus $3.
fuzz_slice() {
  cargo +nightly fuzz run --fuzz-dir fuzz --target-dir "$target_dir" -O "$1" "$3" "fuzz/corpus/$1" -- \
    -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-5}" -max_len=1048576 -max_total_time="$2" -print_final_stats=1
}

for t in "${targets[@]}"; do
  echo "== fuzz $t: $mode $secs s"
  scratch=$(mktemp -d)
  mkdir -p "fuzz/corpus/$t"
  children_cpu
  user0=$cpu_user sys0=$cpu_sys
  start=$SECONDS
  if [ "$mode" = wall ]; then
    fuzz_slice "$t" "$secs" "$scratch"
  else
    while :; do
      children_cpu
      left=$(awk -v u="$cpu_user" -v s="$cpu_sys" -v u0="$user0" -v s0="$sys0" -v goal="$secs" \
        'BEGIN { l = goal - (u - u0) - (s - s0); print (l > 0) ? int(l) + 1 : 0 }')
      [ "$left" -gt 0 ] || break
      fuzz_slice "$t" "$(( left < 300 ? left : 300 ))" "$scratch"
    done
  fi
  children_cpu
  awk -v t="$t" -v u="$cpu_user" -v s="$cpu_sys" -v u0="$user0" -v s0="$sys0" -v w=$((SECONDS - start)) \
    'BEGIN { printf "== fuzz %s: %.0f s user + %.0f s system CPU in %d s\n", t, u - u0, s - s0, w }'
  rm -rf "$scratch"
done
rm -f "$cpu_file"
