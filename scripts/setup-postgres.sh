#!/usr/bin/env bash
# A PostgreSQL of the test run's own, from Debian's packages: installed when missing, a fresh
# cluster (initdb) in a directory of its own, run as user postgres on its own port and socket dir.
# It never touches a system cluster and stops only what it started.
#   scripts/setup-postgres.sh start [DIR]  -> prints `export CAPSULE_TEST_PG_*=...` lines (eval them)
#   scripts/setup-postgres.sh stop DIR     -> stops that cluster and removes DIR
# Exports: CAPSULE_TEST_PG_DSN (postgresql://…), CAPSULE_TEST_PG_DATA (data dir), CAPSULE_TEST_PG_BIN
# (the server's bin dir; the fleet tests restart the server with its pg_ctl), CAPSULE_TEST_PG_DIR.
# Run as root (apt-get, and running the server as postgres). Everything else goes to stderr.
set -euo pipefail
log() { printf '[setup-postgres] %s\n' "$*" >&2; }
changed() { log "$*"; [ -n "${CAPSULE_SETUP_LOG:-}" ] && echo "$*" >>"$CAPSULE_SETUP_LOG"; return 0; }

pg_bin() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
  [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && echo "$d"
}

as_postgres() { runuser -u postgres -- "$@"; }

start() {
  local bin dir port
  bin="$(pg_bin || true)"
  if [ -z "$bin" ]; then
    export DEBIAN_FRONTEND=noninteractive
    # Debian's postinst creates and starts a "main" cluster unless told not to: this run wants none.
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/capsule-no-main.conf
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    changed "apt-get installed postgresql (no cluster created)"
    bin="$(pg_bin)" || { log "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"; exit 1; }
  fi
  dir="${1:-$(mktemp -d /tmp/capsule-pg.XXXXXX)}"
  mkdir -p "$dir"
  chown postgres: "$dir"
  chmod 700 "$dir"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  mkdir -p "$dir/sock" && chown postgres: "$dir/sock" && chmod 700 "$dir/sock"
  if ! as_postgres "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    # Only 127.0.0.1 and a socket dir of its own; fsync off: a test cluster, rebuilt every run.
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir/sock -c fsync=off -c max_connections=200" \
      start >/dev/null
    changed "started PostgreSQL ($bin) on 127.0.0.1:$port, data $dir/data (stopped at the end)"
  fi
  port="$(sed -n 4p "$dir/data/postmaster.pid")"
  echo "export CAPSULE_TEST_PG_DSN=postgresql://postgres@127.0.0.1:$port/postgres"
  echo "export CAPSULE_TEST_PG_DATA=$dir/data"
  echo "export CAPSULE_TEST_PG_BIN=$bin"
  echo "export CAPSULE_TEST_PG_DIR=$dir"
}

stop() {
  local dir="$1" bin
  [ -d "$dir/data" ] || return 0
  bin="$(pg_bin)"
  as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  log "stopped and removed the test PostgreSQL in $dir"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) [ -n "${2:-}" ] || { log "usage: $0 stop DIR"; exit 2; }; stop "$2" ;;
  *) log "usage: $0 start [DIR] | stop DIR"; exit 2 ;;
esac
