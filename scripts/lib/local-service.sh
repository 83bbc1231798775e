# Helpers shared by the scripts that run a local service for development and tests
# (scripts/kafka.sh, scripts/registry.sh, scripts/registry-tls.sh). Sourced, not run: the sourcing script defines `die`,
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

# The pid in PIDFILE $1 if that process is alive and its command line contains $2 (the
# service's own directory or config: a reused pid is not mistaken for it); fails otherwise.
pid_of() {
  local pidfile="$1" needle="$2" pid cmdline
  [[ -s "$pidfile" ]] || return 1
  pid="$(<"$pidfile")"
  is_alive "$pid" || return 1
  cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *"$needle"* ]] || return 1
  printf '%s\n' "$pid"
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

# make_certs DIR LOG: a private CA (DIR/ca.pem, DIR/ca.key) and a server certificate it signed
# for 127.0.0.1 and localhost (DIR/server.pem, DIR/server.key, unencrypted), valid 30 days; the
# openssl output goes to LOG.
make_certs() {
  local dir="$1" log="$2"
  command -v openssl >/dev/null 2>&1 || die "openssl not found (needed for the test CA)"
  mkdir -p "$dir"
  chmod 700 "$dir"
  (
    cd "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=sidejoin test CA" \
      -keyout ca.key -out ca.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server.key -out server.csr
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
      -extfile server.ext -out server.pem
  ) >>"$log" 2>&1 || die "could not make the test CA and server certificate (see ${log})"
}

# with_service TEMP_PREFIX ADDRESS_VAR DIR_VAR WHAT [--] CMD...: starts a fresh instance in a
# temp directory, exports its address as ADDRESS_VAR and the directory as DIR_VAR (and whatever
# the sourcing script's `service_exports DIR` exports, when it defines one), runs CMD, and
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
  if declare -F service_exports >/dev/null; then
    service_exports "$tmp"
  fi
  log "${what} ${address} up (dir ${tmp}); running: $*"
  local rc=0
  "$@" || rc=$?
  exit "$rc"
}
