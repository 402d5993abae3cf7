#!/usr/bin/env bash
# Runs docket's compatibility suites through testcontainers (DOCKET_TESTCONTAINERS=1), one
# command for a machine with or without Docker set up:
#
#   1. installs what is missing from Debian's packages: docker.io (engine and CLI), debootstrap,
#      and the client libraries compat-tests links (libpq-dev, libmariadb-dev-compat);
#   2. uses the Docker engine that answers (DOCKER_HOST, else the default socket), else starts
#      dockerd itself (state in $DOCKET_TC_STATE, container ports published on 127.0.0.1 only,
#      no iptables changes) and stops it at the end;
#   3. builds the PostgreSQL and MariaDB images from Debian packages (docker/build-images.sh)
#      unless they exist or DOCKET_TC_POSTGRES_IMAGE / DOCKET_TC_MARIADB_IMAGE name other ones;
#   4. runs the PostgreSQL and MariaDB suites, both priority toggles, plus the container error
#      paths, and checks that the servers really came from containers;
#   5. tries MySQL 8, SQL Server and Oracle: their suites run where their images can be had,
#      else each is reported as NOT RUN with the reason (on a machine without a registry: the
#      image cannot be pulled).
#
# Usage: scripts/testcontainers-suite.sh [--with-outage]
#   --with-outage  also runs the outage test (tests/outage.rs) for both backends, which stops
#                  and restarts each container mid-run.
#
# Environment: DOCKET_TC_STATE [~/.cache/docket-tc] (dockerd state, kept so images persist),
# CARGO_TARGET_DIR [~/.cache/docket-target], and everything compat-tests reads (DOCKET_TC_*_IMAGE,
# DOCKET_TC_PULL, DOCKET_TC_PULL_TIMEOUT, DOCKET_TC_STARTUP_TIMEOUT, DOCKET_TC_MSSQL_ACCEPT_EULA).
# Exit status: 0 when the PostgreSQL and MariaDB suites and every suite that could run passed.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/flag-lib.sh
. scripts/flag-lib.sh
with_outage="$(flag_given --with-outage "$@")"

script_start=$SECONDS
declare -a summary=()
note() { summary+=("$*"); echo "== $*"; }
failed=0

# --- 1. packages --------------------------------------------------------------------------
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v docker >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v curl >/dev/null 2>&1 || need+=(curl)
dpkg -s libpq-dev >/dev/null 2>&1 || need+=(libpq-dev)
dpkg -s libmariadb-dev-compat >/dev/null 2>&1 || need+=(libmariadb-dev-compat)
if [ ${#need[@]} -gt 0 ]; then
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  echo "installing: ${need[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi

# --- 2. Docker engine ---------------------------------------------------------------------
state="${DOCKET_TC_STATE:-$HOME/.cache/docket-tc}"
mkdir -p "$state"
logs="$(mktemp -d "${TMPDIR:-/tmp}/docket-tc-suite.XXXXXX")"
# shellcheck source=docker/engine.sh
. docker/engine.sh

cleanup() {
  local status=$?
  # Containers of this host whose test process is gone (the tests' watchdogs normally removed
  # them already; this makes sure before the engine stops).
  local host
  host="$(cat /proc/sys/kernel/hostname 2>/dev/null || hostname)"
  docker ps -aq --filter "label=org.docket.compat-tests.host=$host" \
    --format '{{.ID}} {{.Label "org.docket.compat-tests.pid"}}' 2>/dev/null |
    while read -r id pid; do
      if [ -z "$pid" ] || [ ! -d "/proc/$pid" ]; then
        docker rm -f -v "$id" >/dev/null 2>&1 || true
      fi
    done
  docket_engine_stop
  rm -rf "$logs"
  exit "$status"
}
trap cleanup EXIT

phase_start=$SECONDS
# Ports are published on 127.0.0.1 by default and by every container the tests start; no
# iptables rules: published ports go through docker-proxy on the loopback address.
# (Not in $(...): the function exports DOCKER_HOST and keeps the pid it stops.)
docket_engine_start "$state" --ip 127.0.0.1 >"$logs/engine"
note "$(cat "$logs/engine") ($((SECONDS - phase_start)) s)"

# --- 3. images ----------------------------------------------------------------------------
release="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
export DOCKET_TC_POSTGRES_IMAGE="${DOCKET_TC_POSTGRES_IMAGE:-docket-tc/postgres:$release}"
export DOCKET_TC_MARIADB_IMAGE="${DOCKET_TC_MARIADB_IMAGE:-docket-tc/mariadb:$release}"
phase_start=$SECONDS
to_build=0
for image in "$DOCKET_TC_POSTGRES_IMAGE" "$DOCKET_TC_MARIADB_IMAGE"; do
  case "$image" in
    docket-tc/*) docker image inspect "$image" >/dev/null 2>&1 || to_build=1 ;;
    *) ;; # another image: compat-tests pulls it if the engine lacks it
  esac
done
if [ "$to_build" = 1 ]; then
  docker/build-images.sh
  note "images: built $DOCKET_TC_POSTGRES_IMAGE and $DOCKET_TC_MARIADB_IMAGE ($((SECONDS - phase_start)) s)"
else
  note "images: $DOCKET_TC_POSTGRES_IMAGE and $DOCKET_TC_MARIADB_IMAGE (already there)"
fi

# --- 4. the suites ------------------------------------------------------------------------
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/docket-target}"
export CARGO_TERM_COLOR=never
export DOCKET_TESTCONTAINERS=1
# testcontainers-rs has no Ryuk reaper; the tests remove their containers themselves. Set for
# any other testcontainers tooling sharing this environment.
export TESTCONTAINERS_RYUK_DISABLED=true
# A URL would win over containers, and this run is about containers.
unset DOCKET_POSTGRES_URL DOCKET_MYSQL_URL DOCKET_MSSQL_URL DOCKET_ORACLE_URL

phase_start=$SECONDS
cargo test -q -p docket-compat-tests --no-run 2>&1 | tail -n 20
note "build: compat-tests with the testcontainers feature ($((SECONDS - phase_start)) s)"

# Runs `cargo test -p docket-compat-tests ARGS...`, keeping its output in $logs/NAME.log; prints
# the servers it used and its result lines. Fails when cargo fails.
run_tests() {
  local name="$1"
  shift
  local started=$SECONDS status=0
  cargo test -p docket-compat-tests "$@" >"$logs/$name.log" 2>&1 || status=$?
  grep -oE 'docket compat-tests: .* via testcontainers.*' "$logs/$name.log" || true
  grep -E '^test result:' "$logs/$name.log" || true
  if [ "$status" != 0 ]; then
    grep -E 'panicked at|NOT RUN' -A2 "$logs/$name.log" | head -n 40 || true
  fi
  echo "($name: $((SECONDS - started)) s)"
  return "$status"
}

# Asserts that the run NAME got BACKEND's server from a container.
used_container() {
  grep -qE "docket compat-tests: $2 via testcontainers" "$logs/$1.log"
}

# The PostgreSQL and MariaDB suites, both priority toggles.
export DOCKET_TC_MYSQL_FLAVOR=mariadb
if run_tests compat --test compat -- postgres:: mysql:: &&
  used_container compat postgres && used_container compat mysql; then
  counts="$(grep -E '^test result:' "$logs/compat.log" | tail -n 1)"
  note "PASSED: postgres + mysql (MariaDB) suites, priority off and on, via testcontainers: $counts"
else
  note "FAILED: postgres + mysql (MariaDB) suites via testcontainers (see above)"
  failed=1
fi

# The container paths themselves: a missing engine, a missing image, a container that never
# logs readiness, SQL Server's EULA.
if run_tests errors --lib servers::containers; then
  note "PASSED: container error paths ($(grep -E '^test result:' "$logs/errors.log" | tail -n 1))"
else
  note "FAILED: container error paths"
  failed=1
fi

if [ "$with_outage" = 1 ]; then
  if run_tests outage --test outage &&
    used_container outage postgres && used_container outage mysql; then
    note "PASSED: outage test on both containers ($(grep -E '^test result:' "$logs/outage.log" | tail -n 1))"
  else
    note "FAILED: outage test on the containers"
    failed=1
  fi
fi

# --- 5. MySQL 8, SQL Server, Oracle ---------------------------------------------------------
# Resolves BACKEND's server in a child test process (servers::containers::tests::
# resolve_in_this_process) and prints its outcome line: "RESOLVED ..." or "NOT-RESOLVED ...".
resolve() {
  DOCKET_TC_RESOLVE_CHILD="$1" cargo test -q -p docket-compat-tests --lib -- --exact \
    servers::containers::tests::resolve_in_this_process --nocapture 2>/dev/null |
    sed -n 's/^docket-tc-outcome: //p' | head -n 1
}

mysql8="$(DOCKET_TC_MYSQL_FLAVOR=mysql resolve mysql)"
case "$mysql8" in
  RESOLVED*)
    if DOCKET_TC_MYSQL_FLAVOR=mysql run_tests mysql8 --test compat -- mysql:: &&
      used_container mysql8 mysql; then
      note "PASSED: mysql (MySQL 8) suite via testcontainers: $(grep -E '^test result:' "$logs/mysql8.log" | tail -n 1)"
    else
      note "FAILED: mysql (MySQL 8) suite via testcontainers"
      failed=1
    fi
    ;;
  *)
    reason="${mysql8#NOT-RESOLVED }"
    note "NOT RUN: mysql (MySQL 8): ${reason#NOT RUN: }"
    ;;
esac

for backend in mssql oracle; do
  outcome="$(resolve "$backend")"
  case "$outcome" in
    RESOLVED*)
      note "NOT RUN: $backend: its server came up (${outcome#RESOLVED }), but its live suite is" \
        "compiled only when DOCKET_${backend^^}_URL is set at build time (compat-tests/build.rs)"
      ;;
    *)
      reason="${outcome#NOT-RESOLVED }"
      # SQL Server's EULA is checked before its image: say whether the image is there too.
      if [ "$backend" = mssql ] && [[ "$reason" == *DOCKET_TC_MSSQL_ACCEPT_EULA* ]]; then
        image="${DOCKET_TC_MSSQL_IMAGE:-mcr.microsoft.com/mssql/server:2022-latest}"
        if ! docker image inspect "$image" >/dev/null 2>&1; then
          reason="$reason; and image $image is not on the Docker engine (it would be pulled)"
        fi
      fi
      reason="${reason#NOT RUN: }"
      note "NOT RUN: $backend: ${reason:-no outcome from the resolution run}"
      ;;
  esac
done

echo
echo "== summary ($((SECONDS - script_start)) s in all)"
printf '%s\n' "${summary[@]}"
exit "$failed"
