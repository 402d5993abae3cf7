#!/usr/bin/env bash
# Load test of `docket web`'s capped pages (issue 36): on PostgreSQL, 50,000 dead executions of
# one task and 20,000 task names (the state a scheduler outage leaves), then the overview, a
# task's page, search and /metrics one by one, then 40 concurrent `GET /` with `/api/overview`
# asked meanwhile. Fails when a page is not 200, is larger than its bound, or takes longer than
# its bound, or when the server's resident memory passes its bound. Before the caps: `/` was
# 11 MB, 40 concurrent `GET /` took the server to 2.4 GB and delayed other pages by up to 41 s.
#
# Builds the CLI (debug, in CARGO_TARGET_DIR) and installs curl when missing. PostgreSQL:
# DOCKET_WEB_PG_URL (an admin URL), default postgres://postgres@127.0.0.1:5432/postgres; the test
# creates and drops its own database. Whatever cannot be had makes it print NOT RUN and fail.
set -euo pipefail
cd "$(dirname "$0")/.."

not_run() {
  echo "NOT RUN: web load test: $*" >&2
  exit 1
}
fail() {
  echo "FAILED: web load test: $*" >&2
  exit 1
}

# Bounds: ten times what a debug build answers on the 2-core build machine, far below what the
# uncapped pages did.
MAX_BYTES=300000
MAX_PAGE_S=5
MAX_CONCURRENT_S=60
MAX_RSS_KIB=$((1536 * 1024))

command -v curl >/dev/null 2>&1 || {
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl
} || not_run "cannot install curl"
command -v psql >/dev/null 2>&1 || not_run "no psql (Debian's postgresql-client)"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/docket-target}"
cargo build -q -p docket-cli
docket="$CARGO_TARGET_DIR/debug/docket"

admin="${DOCKET_WEB_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
db="docket_web_load_$$"
url="${admin%/*}/$db"
psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null || not_run "cannot create a database at $admin"
scratch="$(mktemp -d)"
server=""
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true # killed by us: status 143, not the test's
  fi
  psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

"$docket" migrate --database-url "$url" >/dev/null
psql -q "$url" >/dev/null <<'SQL'
INSERT INTO scheduled_tasks (task_name, task_instance, execution_time, picked, picked_by,
                             last_heartbeat, version, consecutive_failures)
SELECT 'ghost', 'g' || i, now() - interval '3 hours', true, 'node-x', now() - interval '2 hours', 2, 0
FROM generate_series(1, 50000) i;
INSERT INTO scheduled_tasks (task_name, task_instance, execution_time, picked, version,
                             consecutive_failures)
SELECT 't' || lpad(i::text, 5, '0'), 'one', now() + interval '1 hour', false, 1, 0
FROM generate_series(1, 20000) i;
ANALYZE scheduled_tasks;
SQL

"$docket" web --database-url "$url" --listen 127.0.0.1:0 >"$scratch/server.log" 2>&1 &
server=$!
base=""
for _ in $(seq 1 100); do
  base="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$scratch/server.log" | head -1 || true)"
  [ -n "$base" ] && break
  sleep 0.1
done
[ -n "$base" ] || fail "docket web printed no address: $(cat "$scratch/server.log")"

# `get PATH`: prints "STATUS BYTES SECONDS".
get() { curl -s -m 120 -o /dev/null -w '%{http_code} %{size_download} %{time_total}' "$base$1"; }
check() { # check WHAT "STATUS BYTES SECONDS" MAX_SECONDS
  local what="$1" status bytes seconds
  read -r status bytes seconds <<<"$2"
  echo "  $what: $status, $bytes bytes, $seconds s"
  [ "$status" = 200 ] || fail "$what answered $status"
  [ "$bytes" -le "$MAX_BYTES" ] || fail "$what is $bytes bytes (bound $MAX_BYTES)"
  awk -v s="$seconds" -v m="$3" 'BEGIN { exit !(s <= m) }' || fail "$what took $seconds s (bound $3 s)"
}

echo "docket web load test: 50,000 dead executions, 20,000 task names, PostgreSQL"
for page in / /api/overview /tasks/ghost /api/tasks/ghost "/search?instance=one" \
  "/api/search?instance=one" /api/lag /metrics; do
  check "GET $page" "$(get "$page")" "$MAX_PAGE_S"
done

started=$(date +%s.%N)
pids=()
for i in $(seq 1 40); do
  get / >"$scratch/concurrent-$i" &
  pids+=($!)
done
meanwhile="$(get /api/overview)"
peak=0
alive() { for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
while alive; do
  rss=$(ps -o rss= -p "$server" | tr -d ' ')
  [ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
  sleep 0.05
done
wait "${pids[@]}"
took=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "40 concurrent GET /: all done in $took s, server resident memory at most $peak KiB"
for i in $(seq 1 40); do
  check "concurrent GET / #$i" "$(cat "$scratch/concurrent-$i")" "$MAX_CONCURRENT_S"
done 2>&1 | tail -1
check "GET /api/overview meanwhile" "$meanwhile" "$MAX_CONCURRENT_S"
[ "$peak" -le "$MAX_RSS_KIB" ] || fail "the server reached $peak KiB (bound $MAX_RSS_KIB)"
echo "web load test: all pages bounded"
