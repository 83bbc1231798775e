# shellcheck shell=bash
# A Debian 12 (bookworm) minbase root file system made with debootstrap, cached as a tarball in
# $SIDEJOIN_TOOLS_HOME/debian (default ~/.cache/sidejoin-tools/debian): the stand-in for the
# `debian:12-slim` base image (scripts/image.sh) and the "fresh machine" of scripts/fresh-debian.sh.
# Sourced; needs root and debootstrap (installed with apt-get when missing). ~10-15 min once.
#   debian_root_tarball   prints the tarball's path, making it first if missing

DEBIAN_SUITE="${DEBIAN_SUITE:-bookworm}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

debian_root_tarball() {
  local tools="${SIDEJOIN_TOOLS_HOME:-$HOME/.cache/sidejoin-tools}"
  local dir="$tools/debian" tar="$tools/debian/$DEBIAN_SUITE-minbase.tar"
  mkdir -p "$dir"
  (
    exec 8>"$dir/.lock"
    flock 8
    [ -f "$tar" ] && exit 0
    [ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 1; }
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap >&2
    local root="$dir/$DEBIAN_SUITE-minbase.partial"
    rm -rf "$root"
    echo "debian-root: debootstrap --variant=minbase $DEBIAN_SUITE (one-time, ~10-15 min)" >&2
    nice -n 15 debootstrap --variant=minbase "$DEBIAN_SUITE" "$root" "$DEBIAN_MIRROR" >&2
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" --numeric-owner -cf "$tar.partial" .
    rm -rf "$root"
    mv "$tar.partial" "$tar"
  ) || return 1
  echo "$tar"
}
