#!/usr/bin/env bash
# Load test of `docket web`'s capped pages (issues 36 and 44): on PostgreSQL, 50,000 dead
# executions of one task and 20,000 task names (the state a scheduler outage leaves), then the
# overview, a task's page, search and /metrics one by one, then 40 concurrent `GET /` with
# `/api/overview` and `/metrics` asked meanwhile, then 8 concurrent pages of an execution whose
# task data is 20 MB of JSON. Fails when an answer passes the bounds docs/WEB.md states
# ("Bounded time and memory"): one by one 200 within 5 s; under load 200 within 10 s or 503
# within 1 s, /metrics 200 within 2 s; the server's resident memory within 300 MiB throughout.
# Before issue 44: 60 concurrent overviews answered 55 x 503 after 30 s, /metrics took 6-14 s
# meanwhile, and one 20 MB execution page took the server from 726 MiB to 3.5 GB.
#
# Builds the CLI (debug, in CARGO_TARGET_DIR) and installs curl when missing. PostgreSQL:
# DOCKET_WEB_PG_URL (an admin URL), default postgres://postgres@127.0.0.1:5432/postgres; the test
# creates and drops its own database. Whatever cannot be had makes it print NOT RUN and fail.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/web-lib.sh
. scripts/web-lib.sh

not_run() {
  echo "NOT RUN: web load test: $*" >&2
  exit 1
}
fail() {
  echo "FAILED: web load test: $*" >&2
  exit 1
}

# The bounds docs/WEB.md states (debug build, the 2-core build machine).
MAX_BYTES=300000
MAX_PAGE_S=5
MAX_OK_S=10
MAX_BUSY_S=1
MAX_METRICS_S=2
MAX_RSS_KIB=$((300 * 1024))

web_prepare docket_web_load
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
INSERT INTO scheduled_tasks (task_name, task_instance, task_data, execution_time, picked,
                             version, consecutive_failures)
SELECT 'webhook', 'big', convert_to('{"events": [' || string_agg(
         '{"id": ' || i || ', "kind": "push", "tags": ["a", {"deep": [1, 2, {"x": null}]}]}', ', ')
         || ']}', 'UTF8'), now() + interval '1 hour', false, 1, 0
FROM generate_series(1, 260000) i;
ANALYZE scheduled_tasks;
SQL

web_start
web_sample_memory


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

# `loaded WHAT "STATUS BYTES SECONDS"`: under load, 200 within MAX_OK_S or 503 within MAX_BUSY_S;
# the status in $loaded_status.
loaded_status=""
loaded() {
  local what="$1" status bytes seconds
  read -r status bytes seconds <<<"$2"
  case "$status" in
  200) awk -v s="$seconds" -v m="$MAX_OK_S" 'BEGIN { exit !(s <= m) }' ||
    fail "$what: 200 after $seconds s (bound $MAX_OK_S s)" ;;
  503) awk -v s="$seconds" -v m="$MAX_BUSY_S" 'BEGIN { exit !(s <= m) }' ||
    fail "$what: 503 after $seconds s (a busy answer is due within $MAX_BUSY_S s)" ;;
  *) fail "$what answered $status" ;;
  esac
  loaded_status="$status"
}

echo "  server resident memory so far at most $(cat "$peak_file") KiB"
started=$(date +%s.%N)
pids=()
for i in $(seq 1 40); do
  get / >"$scratch/concurrent-$i" &
  pids+=($!)
done
alive() { for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
meanwhile="$(get /api/overview)"
scrapes=0
while alive; do
  check "GET /metrics meanwhile" "$(get /metrics)" "$MAX_METRICS_S" >/dev/null
  scrapes=$((scrapes + 1))
done
wait "${pids[@]}"
took=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
ok=0
busy=0
for i in $(seq 1 40); do
  loaded "concurrent GET / #$i" "$(cat "$scratch/concurrent-$i")"
  case "$loaded_status" in
  200) ok=$((ok + 1)) ;;
  *) busy=$((busy + 1)) ;;
  esac
done
echo "40 concurrent GET /: $ok x 200 (each within $MAX_OK_S s), $busy x 503 (each within $MAX_BUSY_S s), all done in $took s; /metrics answered $scrapes times meanwhile, each within $MAX_METRICS_S s"
[ "$ok" -ge 2 ] || fail "only $ok of 40 concurrent overviews answered 200 (2 turns)"
loaded "GET /api/overview meanwhile" "$meanwhile"
echo "  GET /api/overview meanwhile: $loaded_status, $meanwhile"

echo "  server resident memory so far at most $(cat "$peak_file") KiB"

# 8 concurrent pages of an execution with 20 MB of JSON task data.
big_bytes=$(psql -tA "$url" -c "SELECT octet_length(task_data) FROM scheduled_tasks WHERE task_name = 'webhook'")
pids=()
for i in $(seq 1 8); do
  get /executions/webhook/big >"$scratch/big-$i" &
  pids+=($!)
done
wait "${pids[@]}"
for i in $(seq 1 8); do
  loaded "GET /executions/webhook/big #$i ($big_bytes bytes of JSON)" "$(cat "$scratch/big-$i")"
  echo "  GET /executions/webhook/big #$i: $(cat "$scratch/big-$i")"
done
echo "8 concurrent execution pages of $big_bytes bytes of JSON: each 200 within $MAX_OK_S s or 503 within $MAX_BUSY_S s"

kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
peak=$(cat "$peak_file")
echo "server resident memory at most $peak KiB throughout (bound $MAX_RSS_KIB KiB)"
[ "$peak" -le "$MAX_RSS_KIB" ] || fail "the server reached $peak KiB (bound $MAX_RSS_KIB)"
echo "web load test: all pages bounded"
