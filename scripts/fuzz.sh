#!/usr/bin/env bash
# scripts/fuzz.sh - runs every cargo-fuzz target (fuzz/fuzz_targets, docs/src/operations/hostile-input.md#fuzzing)
# for SECONDS each (default 30), one after another, with the issue's limits: 2 GiB RSS, 5 s per
# input, inputs up to 1 MiB. .ci/run calls it with the default; a longer run is
# `scripts/fuzz.sh 1200 [target…]`. The nightly toolchain (rustup) and cargo-fuzz are installed
# when missing, cargo-fuzz into ~/.cache/sidejoin-tools (where CI caches its tools). A finding
# stops the run and is left in fuzz/artifacts/<target>/; new corpus entries go to a scratch
# directory (the committed corpus, fuzz/corpus/<target>, is only read).
set -euo pipefail
cd "$(dirname "$0")/.."
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
for t in "${targets[@]}"; do
  echo "== fuzz $t for ${secs}s"
  scratch=$(mktemp -d)
  mkdir -p "fuzz/corpus/$t"
  cargo +nightly fuzz run --fuzz-dir fuzz --target-dir "$target_dir" -O "$t" "$scratch" "fuzz/corpus/$t" -- \
    -rss_limit_mb=2048 -timeout=5 -max_len=1048576 -max_total_time="$secs" -print_final_stats=1
  rm -rf "$scratch"
done
