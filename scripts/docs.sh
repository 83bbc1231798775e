#!/usr/bin/env bash
# The book (docs/, mdBook; run by .ci/run): installs the pinned mdbook once into
# ~/.cache/sidejoin-tools/mdbook (cargo install --locked, nice'd: a few minutes the first time),
# builds docs/ into docs/book, then checks every relative link and anchor of docs/src and
# README.md, that every page is in SUMMARY.md and that every `SPEC §N` the code cites is a
# section of docs/src/semantics/spec.md (scripts/docs_links.py).
#
# The configuration and metrics reference pages are generated from the code and checked by
# tests (crates/config/src/reference.rs, src/metrics/reference.rs); to regenerate them:
#   UPDATE_DOCS=1 cargo test -p sidejoin-config reference
#   UPDATE_DOCS=1 cargo test --release -p sidejoin --lib metrics::reference
set -euo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.4.52
tools="$HOME/.cache/sidejoin-tools/mdbook"
mdbook="$tools/bin/mdbook"
if ! [ -x "$mdbook" ] || [ "$("$mdbook" --version)" != "mdbook v$MDBOOK_VERSION" ]; then
  echo "installing mdbook $MDBOOK_VERSION into $tools"
  # Its own temporary target directory, not the project's ($CARGO_TARGET_DIR in CI).
  env -u CARGO_TARGET_DIR nice -n 15 cargo install --locked --quiet mdbook \
    --version "$MDBOOK_VERSION" --no-default-features --features search --root "$tools"
fi

rm -rf docs/book
"$mdbook" build docs
python3 scripts/docs_links.py
