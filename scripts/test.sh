#!/usr/bin/env bash
# The test command (README "Run the tests"): every test suite, the Kafka ones against a real
# local broker that this script starts (scripts/kafka.sh) and always stops.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/kafka.sh with-broker -- cargo test --release --no-fail-fast "$@"
