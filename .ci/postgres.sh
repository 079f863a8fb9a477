#!/usr/bin/env bash
# A throwaway PostgreSQL server for the store's tests, kept under target/postgres/ and listening on 127.0.0.1
# only (a free port, trust authentication: for tests, never for data that matters).
#
#   .ci/postgres.sh start   install PostgreSQL if missing (Debian: apt-get, as root), create the cluster on first
#                           use, start it if it is not running; prints the URL
#   .ci/postgres.sh url     the URL of the running server (exit 1 when it is not running)
#   .ci/postgres.sh env     `export MANAGED_AGENTS_POSTGRES_URL=…` for `eval "$(.ci/postgres.sh env)"`
#   .ci/postgres.sh stop    stop it (nothing happens when it is not running)
#   .ci/postgres.sh reset   stop it and delete its data
#
# Every command can be repeated. PostgreSQL refuses to run as root: as root, the server runs as the `postgres`
# user (which Debian's package creates); as anyone else, as that user.
set -euo pipefail
cd "$(dirname "$0")/.."

root="$PWD/target/postgres"
database=managed_agents
superuser=postgres

say() { echo ".ci/postgres.sh: $*" >&2; }

# The newest installed server's binaries (Debian keeps them in /usr/lib/postgresql/<version>/bin).
server_bin() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -n "$dir" && -x "$dir/initdb" ]]; then
    echo "$dir"
  elif command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(command -v initdb)"
  fi
}

install_server() {
  if [[ $(id -u) -ne 0 ]]; then
    say "PostgreSQL is not installed; install it (Debian: sudo apt-get install -y postgresql) and run this again"
    exit 1
  fi
  say "installing PostgreSQL (apt-get install postgresql)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
}

# Runs a command as the server's owner (from /, which that user can always enter).
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    (cd / && runuser -u "$superuser" -- "$@")
  else
    "$@"
  fi
}

# Where the cluster lives: target/postgres/cluster, unless the server's user cannot reach it (a checkout in a
# home directory closed to other users), then a directory of its own under /tmp, named after this checkout.
cluster_dir() {
  if [[ -f "$root/cluster-dir" ]]; then
    cat "$root/cluster-dir"
    return
  fi
  local dir="$root/cluster"
  mkdir -p "$dir"
  if [[ $(id -u) -eq 0 ]]; then
    chown "$superuser": "$dir"
    if ! runuser -u "$superuser" -- test -w "$dir"; then
      dir="/tmp/managed-agents-postgres-$(echo "$PWD" | cksum | cut -d' ' -f1)"
      mkdir -p "$dir"
      chown "$superuser": "$dir"
      chmod 700 "$dir"
    fi
  fi
  echo "$dir" >"$root/cluster-dir"
  echo "$dir"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

is_running() {
  local bin="$1" data="$2"
  [[ -f "$data/PG_VERSION" ]] && as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1
}

url() {
  echo "postgres://$superuser@127.0.0.1:$(cat "$root/port")/$database"
}

start() {
  mkdir -p "$root"
  local bin
  bin=$(server_bin)
  if [[ -z "$bin" ]]; then
    install_server
    bin=$(server_bin)
    [[ -n "$bin" ]] || { say "PostgreSQL's initdb was not found after installing"; exit 1; }
  fi
  if [[ $(id -u) -eq 0 ]] && ! id "$superuser" >/dev/null 2>&1; then
    say "running as root, but there is no '$superuser' user to run the server as"
    exit 1
  fi
  local dir data
  dir=$(cluster_dir)
  data="$dir/data"
  if is_running "$bin" "$data" && [[ -f "$root/port" ]]; then
    url
    return
  fi
  if [[ ! -f "$data/PG_VERSION" ]]; then
    as_owner "$bin/initdb" --pgdata="$data" --username="$superuser" --auth=trust --encoding=UTF8 --locale=C \
      --no-sync >"$root/initdb.log" 2>&1 || { cat "$root/initdb.log" >&2; exit 1; }
  fi
  local port
  port=$(free_port)
  echo "$port" >"$root/port"
  # Loopback TCP only, no Unix socket (its default directory may not be writable); durability is not wanted.
  # (One line: pg_ctl hands the options to a shell.)
  local settings="-c unix_socket_directories= -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  settings+=" -c max_connections=200"
  as_owner "$bin/pg_ctl" --pgdata="$data" --log="$dir/server.log" --wait --timeout=60 \
    -o "-c listen_addresses=127.0.0.1 -p $port $settings" start >/dev/null || { tail -n 30 "$dir/server.log" >&2; exit 1; }
  local psql="$bin/psql"
  [[ -x "$psql" ]] || psql=psql
  if [[ -z $("$psql" -h 127.0.0.1 -p "$port" -U "$superuser" -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$database'") ]]; then
    "$psql" -h 127.0.0.1 -p "$port" -U "$superuser" -d postgres -qc "CREATE DATABASE $database" >/dev/null
  fi
  url
}

stop() {
  [[ -f "$root/cluster-dir" ]] || return 0
  local bin data
  bin=$(server_bin)
  data="$(cat "$root/cluster-dir")/data"
  if [[ -n "$bin" ]] && is_running "$bin" "$data"; then
    as_owner "$bin/pg_ctl" --pgdata="$data" --mode=fast --wait stop >/dev/null
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url)
    bin=$(server_bin)
    if [[ -n "$bin" && -f "$root/cluster-dir" && -f "$root/port" ]] && is_running "$bin" "$(cat "$root/cluster-dir")/data"; then
      url
    else
      say "not running (.ci/postgres.sh start)"
      exit 1
    fi
    ;;
  env) echo "export MANAGED_AGENTS_POSTGRES_URL=$(start)" ;;
  reset)
    stop
    if [[ -f "$root/cluster-dir" ]]; then
      rm -rf "$(cat "$root/cluster-dir")"
    fi
    rm -rf "$root"
    ;;
  *)
    echo "usage: .ci/postgres.sh start|stop|url|env|reset" >&2
    exit 2
    ;;
esac
