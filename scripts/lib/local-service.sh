# Helpers shared by the scripts that run a local service for development and tests
# (scripts/kafka.sh, scripts/registry.sh). Sourced, not run: the sourcing script defines `die`,
# `log`, `usage` and `SELF`, and implements `start DIR` (printing the service's address) and
# `stop DIR`.

# The absolute path of directory $1 (created first when $2 is "create").
abs_dir() {
  [[ "${2:-}" == create ]] && mkdir -p "$1"
  [[ -d "$1" ]] || die "no such directory: $1"
  (cd "$1" && pwd)
}

# Is PID $1 a live (not zombie) process?
is_alive() {
  local pid="$1" state
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/${pid}/stat" ]] || return 1
  state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/${pid}/stat" 2>/dev/null)" || return 1
  [[ "$state" != Z && "$state" != X ]]
}

# Two free loopback ports, "PORT1 PORT2".
pick_ports() {
  python3 -c '
import socket
socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
'
}

# Is loopback port $1 free to listen on?
port_free() {
  python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
# As the JVM binds its listeners: the port of a stopped service in TIME_WAIT is free to reuse.
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
' "$1"
}

# with_service TEMP_PREFIX ADDRESS_VAR DIR_VAR WHAT [--] CMD...: starts a fresh instance in a
# temp directory, exports its address as ADDRESS_VAR and the directory as DIR_VAR, runs CMD, and
# always stops the instance and removes the directory; exits with CMD's status.
with_service() {
  local prefix="$1" address_var="$2" dir_var="$3" what="$4"
  shift 4
  [[ "${1:-}" == "--" ]] && shift
  (($# >= 1)) || usage
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/${prefix}.XXXXXX")"
  # shellcheck disable=SC2064 # expand $tmp now
  trap "'${SELF}' stop '${tmp}' >/dev/null 2>&1 || true; rm -rf '${tmp}'" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local address
  address="$("$SELF" start "$tmp")" || exit 1
  export "${address_var}=${address}" "${dir_var}=${tmp}"
  log "${what} ${address} up (dir ${tmp}); running: $*"
  local rc=0
  "$@" || rc=$?
  exit "$rc"
}
