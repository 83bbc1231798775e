# syntax=docker/dockerfile:1
# sidejoin's container image.
#   docker build -t sidejoin:0.1.0 .
# Build stage: the release binary, with the dependencies (RocksDB, librdkafka: most of a cold
# build) compiled in their own layer from stubs derived from the workspace's manifests and
# Cargo.lock, so a source change rebuilds only sidejoin's own crates. Runtime stage: Debian
# slim with the shared libraries the binary links (OpenSSL, zlib, libstdc++), a non-root user
# and the state directory as a volume. The root filesystem can be mounted read-only: sidejoin
# writes only under /var/lib/sidejoin. No HEALTHCHECK: Kubernetes probes /healthz and /readyz
# (see helm/sidejoin). scripts/image.sh builds it with podman and runs its binary (README).

ARG RUST_VERSION=1.95.0
ARG DEBIAN_VERSION=12.12

FROM rust:${RUST_VERSION}-bookworm AS toolchain
# Versions come with the pinned base image's Debian release (bookworm), as on the CI machines.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential pkg-config libclang-dev libssl-dev zlib1g-dev perl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build

# Stubs: the workspace's manifests, the lock file and one stub source per target they declare
# (cargo metadata lists them: libraries, binaries, benches, tests, examples of every member), all
# with modification time 0, so the same manifests give the same files (deploy/docker/stubs.pl).
FROM toolchain AS stubs
COPY . /src
RUN perl /src/deploy/docker/stubs.pl /src /stubs

FROM toolchain AS build
# Dependencies only: built from the stubs, so this layer depends on the manifests, the lock file
# and the set of targets alone, and a source change rebuilds only sidejoin's own crates.
COPY --from=stubs /stubs/ ./
RUN cargo build --release --locked --bin sidejoin

# sidejoin itself. COPY keeps the sources' older modification times: touched, so cargo rebuilds
# the workspace's crates over their stubs.
COPY . .
RUN find . -path ./target -prune -o -name '*.rs' -exec touch {} + \
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
