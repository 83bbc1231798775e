# syntax=docker/dockerfile:1
# sidejoin's container image.
#   docker build -t sidejoin:0.1.0 .
# Build stage: the release binary, with the dependencies (RocksDB, librdkafka: most of a cold
# build) compiled in their own layer from Cargo.toml and Cargo.lock alone, so a source change
# rebuilds only sidejoin itself. Runtime stage: Debian slim with the shared libraries the binary
# links (OpenSSL, zlib, libstdc++), a non-root user and the state directory as a volume. The root
# filesystem can be mounted read-only: sidejoin writes only under /var/lib/sidejoin. No
# HEALTHCHECK: Kubernetes probes /healthz and /readyz (see helm/sidejoin).

ARG RUST_VERSION=1.95.0
ARG DEBIAN_VERSION=12.12

FROM rust:${RUST_VERSION}-bookworm AS build
# Versions come with the pinned base image's Debian release (bookworm), as on the CI machines.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential pkg-config libclang-dev libssl-dev zlib1g-dev perl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build

# Dependencies only: stub targets, so this layer depends on the manifest and the lock file alone.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src benches \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && echo 'fn main() {}' > benches/engine.rs \
 && cargo build --release --locked --bin sidejoin \
 && rm -rf src target/release/.fingerprint/sidejoin-* target/release/deps/sidejoin-* target/release/deps/libsidejoin-*

# sidejoin itself (touched: COPY keeps the sources' older modification times).
COPY src ./src
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked --bin sidejoin \
 && install -D -m 0755 target/release/sidejoin /out/sidejoin

FROM debian:${DEBIAN_VERSION}-slim AS runtime
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libssl3 zlib1g libstdc++6 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 65532 sidejoin \
 && useradd --system --uid 65532 --gid 65532 --home-dir /var/lib/sidejoin --no-create-home \
      --shell /usr/sbin/nologin sidejoin \
 && install -d -o 65532 -g 65532 -m 0750 /var/lib/sidejoin
COPY --from=build /out/sidejoin /usr/local/bin/sidejoin

LABEL org.opencontainers.image.title="sidejoin" \
      org.opencontainers.image.description="Joins two Kafka topics with Flink SQL join semantics" \
      org.opencontainers.image.licenses="Apache-2.0"

USER 65532:65532
ENV SIDEJOIN_STATE_DIR=/var/lib/sidejoin/state
VOLUME ["/var/lib/sidejoin"]
# /metrics, /healthz, /readyz (SIDEJOIN_HTTP_ADDR, default 0.0.0.0:9464)
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/sidejoin"]
CMD ["run"]
