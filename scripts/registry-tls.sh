#!/usr/bin/env bash
# scripts/registry-tls.sh - TLS and basic auth in front of the test schema registry: nginx
# (Debian's package, scripts/setup.sh installs it for the test and ci entry points) as a reverse
# proxy with a private CA's certificate and one user, so that sidejoin's registry client is
# tested against https with a CA file and credentials. scripts/registry.sh runs it when
# LOCAL_REGISTRY_TLS=1.
#
# USAGE
#   scripts/registry-tls.sh start DIR UPSTREAM
#       UPSTREAM is the registry's plain base URL (http://127.0.0.1:PORT/apis/ccompat/v7).
#       Makes a CA and a server certificate (127.0.0.1, localhost) with openssl and the user
#       "sidejoin" with a random password (htpasswd, apr1) in DIR (created), picks a free
#       loopback port, starts nginx in the background (pid in DIR/nginx.pid, logs in DIR/*.log),
#       waits until the proxied API answers with the credentials (and refuses without), and
#       writes for clients: DIR/url (https://127.0.0.1:PORT/apis/ccompat/v7), DIR/ca.pem,
#       DIR/username and DIR/password (mode 600). Prints the URL.
#   scripts/registry-tls.sh stop DIR
#       Stops that nginx (SIGQUIT, then SIGKILL after 10 s). Succeeds when it is not running.
#
# NOTES
#   - nginx's own files (temp paths, pid, logs) all live in DIR; it listens on 127.0.0.1 only and
#     never touches /etc/nginx or the system's service.
#   - The proxy drops the Authorization header upstream (Apicurio runs without auth).

set -euo pipefail

SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
# shellcheck source=lib/local-service.sh
source "$(dirname "$SELF")/lib/local-service.sh"
readonly SELF

log() { printf 'registry-tls.sh: %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() {
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$SELF" >&2
  exit 2
}

nginx_bin() {
  local n
  for n in "$(command -v nginx 2>/dev/null || true)" /usr/sbin/nginx; do
    [[ -n "$n" && -x "$n" ]] && {
      printf '%s\n' "$n"
      return 0
    }
  done
  die "nginx not found (Debian: apt-get install nginx; scripts/setup.sh test installs it)"
}

# The pid of DIR's nginx master, if it runs (its command line names DIR: no pid reuse).
running_pid() {
  pid_of "$1/nginx.pid" "$1/nginx.conf"
}

# write_conf DIR PORT UPSTREAM_HOSTPORT
write_conf() {
  local dir="$1" port="$2" upstream="$3"
  mkdir -p "${dir}/tmp"
  cat >"${dir}/nginx.conf" <<EOF
# scripts/registry-tls.sh: TLS and basic auth in front of the test registry at ${upstream}.
# Workers run as this user (ignored when not root): they read htpasswd at each request.
user $(id -un);
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 128; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${dir}/server.pem;
    ssl_certificate_key ${dir}/server.key;
    auth_basic "sidejoin test registry";
    auth_basic_user_file ${dir}/htpasswd;
    location / {
      proxy_pass http://${upstream};
      proxy_set_header Authorization "";
      proxy_set_header Host \$host:\$server_port;
    }
  }
}
EOF
}

cmd_start() {
  (($# == 2)) || usage
  local dir upstream="$2" nginx pid
  dir="$(abs_dir "$1" create)"
  nginx="$(nginx_bin)"
  if pid="$(running_pid "$dir")"; then
    die "nginx (pid ${pid}) is already running in ${dir}"
  fi
  [[ "$upstream" =~ ^http://([^/]+)(/.*)?$ ]] || die "UPSTREAM must be an http:// URL: ${upstream}"
  local hostport="${BASH_REMATCH[1]}" path="${BASH_REMATCH[2]:-}"
  if [[ ! -s "${dir}/password" ]]; then
    make_certs "$dir" "${dir}/openssl.log"
    echo sidejoin >"${dir}/username"
    (umask 077 && openssl rand -hex 16 >"${dir}/password")
    printf 'sidejoin:%s\n' "$(openssl passwd -apr1 -in "${dir}/password")" >"${dir}/htpasswd"
  fi
  local port
  read -r port _ <<<"$(pick_ports)"
  write_conf "$dir" "$port" "$hostport"
  rm -f "${dir}/url" "${dir}/nginx.pid"
  # Its own session; nginx daemonizes and writes its pid file itself.
  setsid "$nginx" -p "$dir" -e "${dir}/error.log" -c "${dir}/nginx.conf" </dev/null >>"${dir}/nginx.out" 2>&1 ||
    { cat "${dir}/nginx.out" "${dir}/error.log" >&2 2>/dev/null; die "nginx did not start"; }
  local url="https://127.0.0.1:${port}${path}" i code
  for ((i = 0; i < 100; i++)); do
    code="$(curl -s -o /dev/null -w '%{http_code}' --cacert "${dir}/ca.pem" \
      -u "sidejoin:$(<"${dir}/password")" "${url}/subjects" 2>/dev/null)" || true
    if [[ "$code" == 200 ]]; then
      code="$(curl -s -o /dev/null -w '%{http_code}' --cacert "${dir}/ca.pem" "${url}/subjects")" || true
      [[ "$code" == 401 ]] || die "the proxy answers ${code} without credentials (expected 401)"
      echo "$url" >"${dir}/url"
      echo "$url"
      return 0
    fi
    sleep 0.1
  done
  cat "${dir}/error.log" >&2 2>/dev/null || true
  cmd_stop "$dir"
  die "nginx in ${dir} did not answer on ${url} (last HTTP status ${code:-none})"
}

cmd_stop() {
  (($# == 1)) || usage
  [[ -d "$1" ]] || return 0
  local dir pid i
  dir="$(abs_dir "$1")"
  pid="$(running_pid "$dir")" || return 0
  kill -QUIT "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    is_alive "$pid" || return 0
    sleep 0.1
  done
  log "nginx ${pid} still alive after 10 s; sending SIGKILL to its process group"
  kill -KILL -- "-${pid}" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
}

main() {
  (($# >= 1)) || usage
  local sub="$1"
  shift
  case "$sub" in
    start) cmd_start "$@" ;;
    stop) cmd_stop "$@" ;;
    -h | --help | help) usage ;;
    *)
      log "unknown command: ${sub}"
      usage
      ;;
  esac
}

main "$@"
