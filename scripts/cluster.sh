#!/usr/bin/env bash
# The clusters of docs/RELIABILITY.md ("Past one server"), from Debian's packages, on loopback
# ports only: a three-node MariaDB Galera cluster and a PostgreSQL primary with a synchronous
# standby. Everything lives under one directory (DOCKET_CLUSTER_DIR, default
# /tmp/docket-cluster-$UID); nothing outside it is written, and the machine's own servers
# (PostgreSQL on 5432, MariaDB on 3306) are never touched.
#
# Usage: scripts/cluster.sh COMMAND
#   install            installs the missing Debian packages (as root; otherwise prints them)
#   start [galera|pg]  starts both (or one); idempotent: running nodes are left alone, a
#                      PostgreSQL pair that is not whole (after a failover) is made afresh;
#                      `start --owner PID ...` records PID as the clusters' owner
#   stop --if-owner PID  stops them only if PID is still their owner (a test's watchdog)
#   env                prints the `export` lines the cluster tests read (below)
#   stop               stops every server it started and removes the directory; idempotent
#   run CMD...         start, run CMD with the env, stop whatever happens (CI uses this)
#   kill NODE          kill -9 of one server: g1 g2 g3 (Galera), pg1 (primary), pg2 (standby)
#   restart NODE       starts a Galera node that was killed (it rejoins by state transfer)
#   isolate NODE       cuts a Galera node off into a non-primary component (gmcast.isolate)
#   rejoin NODE        ends that and waits until the node is Synced again
#   promote            promotes the PostgreSQL standby (pg_ctl promote) and waits for it
#
# Ports: Galera SQL 4306-4308, group communication 4567/4577/4587, incremental state transfer
# 4568/4578/4588, rsync state transfer 4444/4454/4464; PostgreSQL 5441 (primary), 5442
# (standby). The servers run as the OS users `mysql` and `postgres` (PostgreSQL refuses root).
# DOCKET_PG_SYNC=off makes the standby asynchronous (the failover that may lose commits).
# A watchdog stops everything after DOCKET_CLUSTER_TTL seconds (default 7200) even if nobody
# calls stop.
#
# Environment printed by `env` (read by compat-tests/tests/cluster.rs):
#   DOCKET_GALERA_URLS   three mysql:// URLs, comma-separated, one per node
#   DOCKET_PG_HA_URL     postgres://...:5441,...:5442/postgres?target_session_attrs=read-write
#   DOCKET_PG_HA_SYNC    on or off
#   DOCKET_CLUSTER_CTL   this script (the tests call its kill/restart/promote)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
self="$here/cluster.sh"
dir="${DOCKET_CLUSTER_DIR:-/tmp/docket-cluster-$(id -u)}"
ttl="${DOCKET_CLUSTER_TTL:-7200}"
pg_sync="${DOCKET_PG_SYNC:-on}"
galera_sql=(4306 4307 4308)
galera_gcomm=(4567 4577 4587)
galera_ist=(4568 4578 4588)
galera_sst=(4444 4454 4464)
pg_ports=(5441 5442)

say() { echo "cluster.sh: $*" >&2; }
die() {
  say "$*"
  exit 1
}

pgbin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && {
      echo "$d"
      return
    }
  done
  return 1
}

missing_packages() {
  local need=()
  [ -f /usr/lib/galera/libgalera_smm.so ] || [ -f /usr/lib/libgalera_smm.so ] || need+=(galera-4)
  [ -x /usr/sbin/mariadbd ] || command -v mariadbd >/dev/null 2>&1 || need+=(mariadb-server)
  # wsrep_sst_rsync (the state transfer) ships with mariadb-server, not -core.
  command -v wsrep_sst_rsync >/dev/null 2>&1 || need+=(mariadb-server)
  command -v mariadb >/dev/null 2>&1 || need+=(mariadb-client)
  command -v rsync >/dev/null 2>&1 || need+=(rsync)
  # The rsync state transfer finds its daemon's port with ss (or lsof).
  command -v ss >/dev/null 2>&1 || command -v lsof >/dev/null 2>&1 || need+=(iproute2)
  pgbin >/dev/null || need+=(postgresql)
  command -v pg_basebackup >/dev/null 2>&1 || [ -x "$(pgbin 2>/dev/null)/pg_basebackup" ] ||
    need+=(postgresql-client)
  command -v runuser >/dev/null 2>&1 || need+=(util-linux)
  [ ${#need[@]} -eq 0 ] || printf '%s\n' "${need[@]}" | sort -u
}

install() {
  local need=()
  mapfile -t need < <(missing_packages)
  [ ${#need[@]} -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ]; then
    say "missing Debian packages: ${need[*]}"
    say "install them as root: apt-get update && apt-get install -y ${need[*]}"
    return 1
  fi
  say "installing Debian packages: ${need[*]}"
  apt-get update -q
  # mariadb-server's maintainer scripts would start the machine's own server: policy-rc.d
  # keeps them from starting any service while the packages are installed.
  local policy=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    created=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" || {
    [ $created = 1 ] && rm -f "$policy"
    return 1
  }
  [ $created = 1 ] && rm -f "$policy"
  return 0
}

port_free() { ! (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Runs a command as `user` (root only switches; anyone else must be that user already).
as() {
  local user=$1
  shift
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$user" -- "$@"
  else
    "$@"
  fi
}

prepare_dir() {
  mkdir -p "$dir"
  chmod 755 "$dir"
  [ "$(id -u)" = 0 ] || die "the servers run as the users mysql and postgres: run as root"
}

# ---------------------------------------------------------------- Galera

gnode_dir() { echo "$dir/g$1"; }

galera_cnf() {
  local i=$1 d
  d="$(gnode_dir "$i")"
  local addr="gcomm://127.0.0.1:${galera_gcomm[0]},127.0.0.1:${galera_gcomm[1]},127.0.0.1:${galera_gcomm[2]}"
  cat >"$d/my.cnf" <<EOF
[mariadbd]
datadir=$d/data
socket=$d/mysqld.sock
pid-file=$d/mysqld.pid
log-error=$d/error.log
tmpdir=$d/tmp
port=${galera_sql[$((i - 1))]}
bind-address=127.0.0.1
skip-name-resolve
user=mysql
max-connections=500
innodb-buffer-pool-size=64M
innodb-flush-log-at-trx-commit=2
innodb-autoinc-lock-mode=2
binlog-format=ROW
default-storage-engine=InnoDB
wsrep-on=ON
wsrep-provider=/usr/lib/galera/libgalera_smm.so
wsrep-cluster-name=docket
wsrep-cluster-address=$addr
wsrep-node-name=g$i
wsrep-node-address=127.0.0.1:${galera_gcomm[$((i - 1))]}
wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:${galera_gcomm[$((i - 1))]};ist.recv_addr=127.0.0.1:${galera_ist[$((i - 1))]};gcache.size=128M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S
wsrep-sst-method=rsync
wsrep-sst-receive-address=127.0.0.1:${galera_sst[$((i - 1))]}
wsrep-slave-threads=4
EOF
}

gclient() {
  local i=$1
  shift
  mariadb --no-defaults --socket="$(gnode_dir "$i")/mysqld.sock" --user=root \
    --batch --skip-column-names "$@"
}

# The server's pid, as recorded when it was spawned (its own pid file appears only after a
# state transfer).
galera_pid() { cat "$(gnode_dir "$1")/server.pid" 2>/dev/null; }

galera_running() {
  alive "$(galera_pid "$1")"
}

# Waits until node i is Synced and ready (state transfer included).
galera_wait_synced() {
  local i=$1 n=0 state
  while [ $n -lt 240 ]; do
    state="$(gclient "$i" -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null |
      awk '{print $2}')" || true
    if [ "$state" = Synced ]; then
      return 0
    fi
    if ! galera_running "$i"; then
      tail -30 "$(gnode_dir "$i")/error.log" >&2 || true
      die "Galera node g$i exited while starting"
    fi
    sleep 0.5
    n=$((n + 1))
  done
  tail -30 "$(gnode_dir "$i")/error.log" >&2 || true
  die "Galera node g$i not Synced after 120 s"
}

galera_start_node() {
  local i=$1 bootstrap=${2:-} d
  d="$(gnode_dir "$i")"
  galera_running "$i" && return 0
  mkdir -p "$d/tmp" "$d/data"
  galera_cnf "$i"
  chown -R mysql:mysql "$d"
  local extra=()
  [ -n "$bootstrap" ] && extra+=(--wsrep-new-cluster)
  # Detached, in its own session: it outlives this script until `stop` (or the watchdog).
  # 9>&-: the server must not inherit the lock (see lock), or it would hold it for good.
  setsid mariadbd --defaults-file="$d/my.cnf" "${extra[@]}" </dev/null >/dev/null 2>&1 9>&- &
  echo $! >"$d/server.pid"
  galera_wait_synced "$i"
}

galera_start() {
  local i
  if galera_running 1 || galera_running 2 || galera_running 3; then
    # Some nodes run: start the missing ones (they join by state transfer).
    for i in 1 2 3; do galera_running "$i" || galera_start_node "$i"; done
    return 0
  fi
  for i in 0 1 2; do
    for p in "${galera_sql[$i]}" "${galera_gcomm[$i]}" "${galera_ist[$i]}" "${galera_sst[$i]}"; do
      port_free "$p" || die "port $p is taken (not by this script's cluster)"
    done
  done
  rm -rf "$dir/g1" "$dir/g2" "$dir/g3"
  local d1
  d1="$(gnode_dir 1)"
  mkdir -p "$d1/tmp" "$d1/data"
  chown -R mysql:mysql "$d1"
  # The bootstrap server gets its own tmpdir: MariaDB deletes every #sql* file in its tmpdir
  # at start-up, and /tmp holds the machine's own server's temporary tables.
  mariadb-install-db --no-defaults --datadir="$d1/data" --user=mysql \
    --auth-root-authentication-method=normal --skip-test-db --tmpdir="$d1/tmp" >"$dir/install-db.log" 2>&1 ||
    {
      cat "$dir/install-db.log" >&2
      die "mariadb-install-db failed"
    }
  say "Galera: bootstrapping g1"
  galera_start_node 1 bootstrap
  # Named time zones for the compat suite (its sessions use America/New_York), loaded before
  # the joiners start so that their state transfer copies them.
  mariadb-tzinfo-to-sql /usr/share/zoneinfo 2>/dev/null >"$dir/tz.sql"
  gclient 1 mysql <"$dir/tz.sql"
  for i in 2 3; do
    say "Galera: g$i joins (rsync state transfer)"
    galera_start_node "$i"
  done
  local size
  size="$(gclient 1 -e "SHOW STATUS LIKE 'wsrep_cluster_size'" | awk '{print $2}')"
  [ "$size" = 3 ] || die "Galera cluster size $size, expected 3"
  say "Galera: 3 nodes Synced on 127.0.0.1:${galera_sql[*]}"
}

galera_stop() {
  local i pid n
  for i in 3 2 1; do
    if galera_running "$i"; then
      pid="$(galera_pid "$i")"
      kill -TERM "$pid" 2>/dev/null || true
      n=0
      while kill -0 "$pid" 2>/dev/null && [ $n -lt 60 ]; do
        sleep 0.5
        n=$((n + 1))
      done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  # A node killed mid-state-transfer may leave its rsync daemon behind.
  pkill_own_rsync
}

# rsync daemons the state transfer started under this directory (by their pid files).
pkill_own_rsync() {
  local f
  for f in "$dir"/g*/data/rsync_sst.pid; do
    [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
  done
}

# ---------------------------------------------------------------- PostgreSQL

pg_dir() { echo "$dir/pg$1"; }

# Whether process $1 runs (a zombie, not yet reaped after a kill -9, does not).
alive() {
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

pg_running() {
  local f
  f="$(pg_dir "$1")/postmaster.pid"
  [ -f "$f" ] && alive "$(head -1 "$f")"
}

# The primary's view of its standby: "streaming sync", "streaming async" or nothing.
pg_replication() {
  as postgres "$(pgbin)/psql" -h 127.0.0.1 -p "${pg_ports[0]}" -U postgres -Atc \
    "SELECT state || ' ' || sync_state FROM pg_stat_replication WHERE application_name = 'standby1'" 2>/dev/null || true
}

pg_ctl_() {
  local i=$1
  shift
  as postgres "$(pgbin)/pg_ctl" -D "$(pg_dir "$i")" -l "$dir/pg$i.log" -w -t 60 "$@" 9>&-
}

pg_start() {
  local want="streaming sync"
  [ "$pg_sync" = off ] && want="streaming async"
  # Whole as asked: both running, the standby streaming as DOCKET_PG_SYNC says. Anything else
  # (after a failover, or asked the other way) is made afresh.
  if pg_running 1 && pg_running 2 && [ "$(pg_replication)" = "$want" ]; then
    return 0
  fi
  pg_stop
  local p
  for p in "${pg_ports[@]}"; do port_free "$p" || die "port $p is taken"; done
  local d1 d2
  d1="$(pg_dir 1)"
  d2="$(pg_dir 2)"
  rm -rf "$d1" "$d2"
  mkdir -p "$d1" "$d2"
  chown postgres: "$d1" "$d2"
  chmod 700 "$d1" "$d2"
  touch "$dir/pg1.log" "$dir/pg2.log"
  chown postgres: "$dir/pg1.log" "$dir/pg2.log"
  as postgres "$(pgbin)/initdb" -D "$d1" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
    {
      cat "$dir/initdb.log" >&2
      die "initdb failed"
    }
  local sync_names="'standby1'"
  [ "$pg_sync" = off ] && sync_names="''"
  cat >>"$d1/postgresql.conf" <<EOF
port = ${pg_ports[0]}
listen_addresses = '127.0.0.1'
unix_socket_directories = '$d1'
wal_level = replica
max_wal_senders = 5
max_connections = 300
fsync = off
synchronous_standby_names = $sync_names
synchronous_commit = on
wal_keep_size = 256MB
EOF
  pg_ctl_ 1 start >/dev/null
  as postgres "$(pgbin)/pg_basebackup" -d "host=127.0.0.1 port=${pg_ports[0]} user=postgres application_name=standby1" \
    -D "$d2" -R -c fast -X stream >"$dir/basebackup.log" 2>&1 ||
    {
      cat "$dir/basebackup.log" >&2
      die "pg_basebackup failed"
    }
  # The standby, once promoted, must not wait for a standby of its own (none exists).
  cat >>"$d2/postgresql.conf" <<EOF
port = ${pg_ports[1]}
unix_socket_directories = '$d2'
synchronous_standby_names = ''
EOF
  pg_ctl_ 2 start >/dev/null
  # Wait until the standby streams and, when synchronous, is the sync standby (it shows as
  # async for a moment after it connects).
  local n=0 state
  while [ $n -lt 120 ]; do
    state="$(pg_replication)"
    [ "$state" = "$want" ] && break
    sleep 0.5
    n=$((n + 1))
  done
  [ "$state" = "$want" ] || die "the standby is not '$want' (state: '$state'); see $dir/pg2.log"
  say "PostgreSQL: primary 127.0.0.1:${pg_ports[0]}, standby 127.0.0.1:${pg_ports[1]} ($state)"
}

pg_stop() {
  local i
  for i in 1 2; do
    if pg_running "$i"; then
      pg_ctl_ "$i" stop -m immediate >/dev/null 2>&1 || kill -KILL "$(head -1 "$(pg_dir "$i")/postmaster.pid")" 2>/dev/null || true
    fi
  done
}

# ---------------------------------------------------------------- commands

watchdog() {
  local f="$dir/watchdog.pid"
  if [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; then
    return 0
  fi
  # Its own session, so it survives the caller; `stop` kills it.
  setsid bash -c "sleep $ttl; DOCKET_CLUSTER_DIR='$dir' '$self' stop" </dev/null >/dev/null 2>&1 9>&- &
  echo $! >"$f"
}

env_lines() {
  local urls=() i
  for i in 0 1 2; do urls+=("mysql://root@127.0.0.1:${galera_sql[$i]}"); done
  local IFS=,
  echo "export DOCKET_GALERA_URLS='${urls[*]}'"
  echo "export DOCKET_PG_HA_URL='postgres://postgres@127.0.0.1:${pg_ports[0]},127.0.0.1:${pg_ports[1]}/postgres?target_session_attrs=read-write&connect_timeout=3'"
  echo "export DOCKET_PG_HA_SYNC='$pg_sync'"
  echo "export DOCKET_CLUSTER_CTL='$self'"
  echo "export DOCKET_CLUSTER_DIR='$dir'"
}

# One start or stop at a time (a test process's watchdog may still be stopping the clusters
# when the next run starts them): an exclusive lock beside the directory, held on fd 9 until
# this process ends. Every server and watchdog started under it closes fd 9 (`9>&-`).
lock() {
  exec 9>>"$dir.lock"
  flock 9
}

stop_all() {
  lock
  galera_stop
  pg_stop
  local f="$dir/watchdog.pid"
  if [ -f "$f" ]; then
    local w
    w="$(cat "$f")"
    # The watchdog calls stop itself: never kill the process running this.
    if [ "$w" != "$$" ] && [ "$w" != "$PPID" ]; then
      pkill -KILL -P "$w" 2>/dev/null || true
      kill -KILL "$w" 2>/dev/null || true
    fi
  fi
  rm -rf "$dir"
}

cmd="${1:-}"
shift || true
case "$cmd" in
install)
  install
  ;;
start)
  what="${1:-all}"
  owner=""
  if [ "$what" = --owner ]; then
    owner="${2:?start --owner PID [galera|pg|all]}"
    what="${3:-all}"
  fi
  install
  lock
  prepare_dir
  # The process whose watchdog may stop the clusters (stop --if-owner): the last to start them.
  [ -n "$owner" ] && echo "$owner" >"$dir/owner"
  watchdog
  case "$what" in
  galera) galera_start ;;
  pg) pg_start ;;
  all)
    galera_start
    pg_start
    ;;
  *) die "start galera|pg|all" ;;
  esac
  ;;
env)
  env_lines
  ;;
stop)
  if [ "${1:-}" = --if-owner ]; then
    # A test process's watchdog: stop only clusters that process started last.
    lock
    [ "$(cat "$dir/owner" 2>/dev/null)" = "${2:?stop --if-owner PID}" ] || exit 0
  fi
  stop_all
  ;;
run)
  [ $# -gt 0 ] || die "run CMD..."
  trap stop_all EXIT
  "$self" start
  eval "$(env_lines)"
  "$@"
  ;;
kill)
  case "${1:-}" in
  g1 | g2 | g3) kill -KILL "$(galera_pid "${1#g}")" ;;
  pg1 | pg2) kill -KILL "$(head -1 "$(pg_dir "${1#pg}")/postmaster.pid")" ;;
  *) die "kill g1|g2|g3|pg1|pg2" ;;
  esac
  ;;
restart)
  case "${1:-}" in
  g1 | g2 | g3)
    # A node killed -9 keeps its data directory: it rejoins by IST, or SST when too far behind.
    galera_start_node "${1#g}"
    ;;
  *) die "restart g1|g2|g3" ;;
  esac
  ;;
isolate)
  # Cuts a Galera node off from the others (gmcast.isolate): alone it is a non-primary
  # component and refuses queries (1047) while the other two stay primary.
  case "${1:-}" in
  g1 | g2 | g3) gclient "${1#g}" -e "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=1'" ;;
  *) die "isolate g1|g2|g3" ;;
  esac
  ;;
rejoin)
  # Ends the isolation; waits until the node is Synced again (incremental state transfer).
  case "${1:-}" in
  g1 | g2 | g3)
    gclient "${1#g}" -e "SET GLOBAL wsrep_provider_options = 'gmcast.isolate=0'"
    galera_wait_synced "${1#g}"
    ;;
  *) die "rejoin g1|g2|g3" ;;
  esac
  ;;
promote)
  as postgres "$(pgbin)/pg_ctl" -D "$(pg_dir 2)" -w -t 60 promote >/dev/null
  ;;
*)
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
