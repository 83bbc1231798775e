#!/usr/bin/env bash
# scripts/fresh-debian.sh - the README's two commands on a fresh machine: a chroot over a new
# `debootstrap --variant=minbase bookworm` root file system (scripts/lib/debian-root.sh, cached)
# with only git (apt-get install --no-install-recommends git) and this machine's Rust toolchain
# (rustup's default toolchain copied to /root/.rustup, rustup's proxies to /root/.cargo/bin)
# added (and this machine's own CA certificates, /usr/local/share/ca-certificates, when its
# network needs them); the repository's committed HEAD is cloned there with `git clone` (from a git bundle) and
# `scripts/demo.sh` run as root, then `scripts/test.sh` with --test. Everything else the commands
# need (C toolchain, headers, Java, Maven, ...) they install themselves (scripts/setup.sh).
# The first demo is a cold build (RocksDB, librdkafka): 25+ min on 2 cores; the test suite after
# it another long build and run. Run under `nice -n 15`.
#
#   scripts/fresh-debian.sh [--test] [--keep] [--root DIR]
#     --test      also run scripts/test.sh after the demo
#     --keep      keep the chroot (default: deleted at the end); --root DIR reuses or makes the
#                 chroot in DIR (a kept one: git pull instead of a new clone)
#
# Needs root (debootstrap, chroot, mounts: /proc, /sys and /dev are mounted in a private mount
# namespace, /etc/resolv.conf copied). Logs: DIR/log/*.log; the demo's output is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/debian-root.sh
. scripts/lib/debian-root.sh

run_test=0 keep=0 root=""
while [ $# -gt 0 ]; do
  case "$1" in
    --test) run_test=1 ;;
    --keep) keep=1 ;;
    --root) root="$2"; keep=1; shift ;;
    *) echo "usage: scripts/fresh-debian.sh [--test] [--keep] [--root DIR]" >&2; exit 2 ;;
  esac
  shift
done
log() { printf 'fresh-debian: %s\n' "$*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }

tar=$(debian_root_tarball)
if [ -z "$root" ]; then
  root=$(mktemp -d "${TMPDIR:-/var/tmp}/sidejoin-fresh-debian.XXXXXX")
fi
((keep)) || trap 'rm -rf --one-file-system "$root"' EXIT
mkdir -p "$root"
fresh=0
if [ ! -x "$root/bin/bash" ]; then
  fresh=1
  log "unpacking $tar into $root"
  tar -C "$root" -xf "$tar"
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

# Run a command as root in the chroot with a clean environment and /proc, /sys, /dev mounted (in
# a private mount namespace: nothing is left mounted afterwards).
in_chroot() {
  # shellcheck disable=SC2016 # expanded by the inner bash
  unshare -m --propagation private bash -c '
    root=$1; shift
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    exec env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
      PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      chroot "$root" /bin/bash -c "$*"' in_chroot "$root" "$@"
}

if ((fresh)); then
  # This machine's own CAs (here, the TLS-intercepting egress proxy's): without them no HTTPS
  # download works from this network (cargo, Maven). Trusted once ca-certificates is installed
  # (scripts/setup.sh installs it). Not needed on a machine with direct internet access.
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
  log "adding git (apt-get install --no-install-recommends git)"
  in_chroot 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git >/dev/null'
  tc=$(rustup show active-toolchain | awk '{print $1}')
  log "adding the Rust toolchain $tc (from $(rustup which cargo | xargs dirname | xargs dirname))"
  mkdir -p "$root/root/.rustup/toolchains" "$root/root/.cargo/bin"
  cp -aL "$HOME/.rustup/toolchains/$tc" "$root/root/.rustup/toolchains/$tc"
  rm -rf "$root/root/.rustup/toolchains/$tc/share/doc"
  printf 'version = "12"\ndefault_toolchain = "%s"\nprofile = "default"\nauto_self_update = "disable"\n' "$tc" \
    >"$root/root/.rustup/settings.toml"
  cp -L "$(command -v rustup)" "$root/root/.cargo/bin/rustup"
  for b in cargo rustc rustdoc cargo-clippy clippy-driver cargo-fmt rustfmt; do ln -sf rustup "$root/root/.cargo/bin/$b"; done
fi

log "git clone of $(git rev-parse --short HEAD) (the committed HEAD; a git bundle)"
git bundle create "$root/tmp/sidejoin.bundle" HEAD >/dev/null 2>&1
if [ -d "$root/root/sidejoin/.git" ]; then
  in_chroot 'cd /root/sidejoin && git fetch -q /tmp/sidejoin.bundle HEAD && git checkout -q --detach FETCH_HEAD'
else
  in_chroot 'git clone -q /tmp/sidejoin.bundle /root/sidejoin'
fi
mkdir -p "$root/log"

t0=$SECONDS
log "scripts/demo.sh (log: $root/log/demo.log)"
rc=0
in_chroot 'cd /root/sidejoin && scripts/demo.sh' 2>&1 | tee "$root/log/demo.log" || rc=$?
log "scripts/demo.sh exited $rc after $((SECONDS - t0)) s"
((rc == 0)) || exit "$rc"
grep -q '^{"user_id":"1"}' "$root/log/demo.log" || { log "the demo printed no seed 000 output"; exit 1; }

if ((run_test)); then
  t0=$SECONDS
  log "scripts/test.sh (log: $root/log/test.log)"
  in_chroot 'cd /root/sidejoin && scripts/test.sh' >"$root/log/test.log" 2>&1 || rc=$?
  grep -E '^test result:|FAILED|panicked' "$root/log/test.log" | sort | uniq -c | sort -rn | head -20 >&2 || true
  log "scripts/test.sh exited $rc after $((SECONDS - t0)) s"
fi
exit "$rc"
