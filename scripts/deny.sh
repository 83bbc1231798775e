#!/usr/bin/env bash
# The supply-chain checks (run by .ci/run): `cargo deny check` against the committed deny.toml —
# licenses, duplicate versions (bans), sources, and the RustSec advisories. Installs the pinned
# cargo-deny once into ~/.cache/sidejoin-tools/cargo-deny (cargo install --locked from crates.io,
# nice'd: several minutes the first time).
#
# The advisory database is cloned from GitHub. Where github.com cannot be reached (these build
# machines reach crates.io but not GitHub) the advisories check cannot run: it is skipped with a
# line saying so, and the other checks still run; set DENY_REQUIRE_ADVISORIES=1 to fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."

DENY_VERSION=0.20.2
tools="${SIDEJOIN_TOOLS_HOME:-$HOME/.cache/sidejoin-tools}/cargo-deny"
deny="$tools/bin/cargo-deny"
if ! [ -x "$deny" ] || [ "$("$deny" --version)" != "cargo-deny $DENY_VERSION" ]; then
  echo "installing cargo-deny $DENY_VERSION into $tools"
  # Its own temporary target directory, not the project's ($CARGO_TARGET_DIR in CI).
  env -u CARGO_TARGET_DIR nice -n 15 cargo install --locked --quiet cargo-deny \
    --version "$DENY_VERSION" --root "$tools"
fi

checks=(licenses bans sources)
if curl -fs -o /dev/null --max-time 10 https://github.com/rustsec/advisory-db; then
  checks+=(advisories)
elif [ "${DENY_REQUIRE_ADVISORIES:-0}" = 1 ]; then
  echo "deny.sh: the RustSec advisory database (github.com) is unreachable" >&2
  exit 1
else
  echo "deny.sh: advisories NOT checked: the RustSec advisory database (github.com) is unreachable from this machine"
fi
"$deny" --locked check "${checks[@]}"
