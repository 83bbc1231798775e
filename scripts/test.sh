#!/usr/bin/env bash
# The test command (README "Run the tests"): every test suite, the Kafka ones against a real
# local broker and the Avro ones against a real schema registry (Apicurio), both started by this
# script (scripts/kafka.sh, scripts/registry.sh) and always stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Debian packages the build, the broker and the tests need (installed when missing; scripts/setup.sh).
scripts/setup.sh test
# The build scripts/demo.sh made (same target dir, same dependency features): a first demo
# then the tests compile RocksDB and librdkafka once.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sidejoin-target}"
# The state directories of the sidejoin processes the tests start, removed afterwards.
TEST_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sidejoin-test-state.XXXXXX")
export TEST_STATE_DIR
trap 'rm -rf "$TEST_STATE_DIR"' EXIT
# One test at a time unless told otherwise: the broker tier's tests start up to three sidejoin
# processes each beside the broker, and two such tests side by side on a 2-core machine stalled
# past their waits (RUST_TEST_THREADS=2 scripts/test.sh runs two at a time).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-1}"
# The secure endpoints beside the plain ones (issue 26): the broker's SASL_SSL listener
# (TEST_KAFKA_SASL_*) and the registry over https with basic auth (TEST_REGISTRY_TLS_*).
export LOCAL_KAFKA_SASL_SSL=1 LOCAL_REGISTRY_TLS=1
scripts/kafka.sh with-broker -- scripts/registry.sh with-registry -- \
  cargo test --release --workspace --features sidejoin/broker-tests,sidejoin/registry-tests,sidejoin/fault-hooks \
    --no-fail-fast "$@"
