#!/usr/bin/env bash
# Issue 44's reproductions replayed against a real `docket web` (debug build) over HTTP, on
# PostgreSQL with a token, the way the second probe made them: rows planted by SQL, requests by
# curl (some from a second loopback address). Each finding must be refused, nothing may change
# in the database that was not shown and confirmed, and the server's resident memory must stay
# within 300 MiB throughout. Findings 1 and 5 (a 20 MB execution page, 40 concurrent overviews)
# are replayed with their sizes and times by scripts/web-load-test.sh; finding 4's race (a
# change between check and write) by `cargo test -p docket-web tests_race`; here finding 4 is
# the stale version sent over HTTP.
#
# PostgreSQL: DOCKET_WEB_PG_URL (an admin URL), default postgres://postgres@127.0.0.1:5432/postgres;
# the script creates and drops its own database. What cannot be had prints NOT RUN and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/web-lib.sh
. scripts/web-lib.sh

not_run() {
  echo "NOT RUN: web probe replay: $*" >&2
  exit 1
}
fail() {
  echo "FAILED: web probe replay: $*" >&2
  exit 1
}
MAX_RSS_KIB=$((300 * 1024))
MAX_BYTES=300000

web_prepare docket_web_probe
server=""
sampler=""
cleanup() {
  for p in "$sampler" "$server"; do
    if [ -n "$p" ]; then
      kill "$p" 2>/dev/null || true
      wait "$p" 2>/dev/null || true
    fi
  done
  psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

"$docket" migrate --database-url "$url" >/dev/null
psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null <<'SQL'
-- Finding 2: a failing row whose instance id holds a line feed, and a healthy row it names.
INSERT INTO scheduled_tasks (task_name, task_instance, execution_time, picked, version,
                             consecutive_failures, last_failure)
VALUES ('report', E'x\n1 victim', now() - interval '1 hour', false, 1, 3, now() - interval '1 hour'),
       ('report', 'victim', now() + interval '1 hour', false, 1, 0, NULL);
-- Finding 3: a row parked by hand at 'infinity', a queue item with broken attributes and one
-- with a NULL record_date.
INSERT INTO scheduled_tasks (task_name, task_instance, execution_time, picked, version,
                             consecutive_failures)
VALUES ('parked', 'forever', 'infinity', false, 1, 0),
       ('sleepy', 'one', now() - interval '1 minute', false, 1, 0);
INSERT INTO scheduled_tasks (task_name, task_instance, execution_time, picked, version,
                             consecutive_failures, max_assignments, assignable, record_date,
                             record_order, custom_attributes)
VALUES ('label', 'bad-json', now(), false, 1, 0, 2, true, now(), 1, '{not json'),
       ('label', 'no-date', now(), false, 1, 0, 2, true, NULL, 2, NULL),
       ('label', 'fine', now(), false, 1, 0, 2, true, now(), 3, NULL);
-- Finding 3 (metrics) and 6: a paused task whose paused_at is 'infinity', and 50,000 paused rows.
INSERT INTO scheduled_tasks_paused (task_name, paused_at, paused_by)
VALUES ('parked', 'infinity', 'sql'), ('sleepy', now(), 'sql');
INSERT INTO scheduled_tasks_paused (task_name, paused_at, paused_by)
SELECT 'paused-' || lpad(i::text, 5, '0'), now(), 'sql' FROM generate_series(1, 50000) i;
ANALYZE scheduled_tasks;
SQL
snapshot() {
  psql -tA "$url" -c "SELECT task_name || '/' || replace(task_instance, E'\n', '\\n') || ' v' || version \
    || ' p' || picked FROM scheduled_tasks ORDER BY 1"
}
snapshot >"$scratch/before"

token="replay-token-0123456789abcdef"
printf '%s\n' "$token" >"$scratch/token"
web_start --token-file "$scratch/token"
web_sample_memory

# `req [CURL ARGS...] PATH`: prints "STATUS BYTES"; the body goes to $scratch/body.
req() {
  local path="${*: -1}"
  curl -s -m 60 -o "$scratch/body" -w '%{http_code} %{size_download}' "${@:1:$#-1}" "$base$path"
}
auth=(-H "Authorization: Bearer $token")
expect() { # expect WHAT WANT "STATUS BYTES"
  local status bytes
  read -r status bytes <<<"$3"
  echo "  $1: $status ($bytes bytes)"
  [ "$status" = "$2" ] || fail "$1 answered $status, expected $2: $(head -c 300 "$scratch/body")"
  [ "$bytes" -le "$MAX_BYTES" ] || fail "$1 is $bytes bytes (bound $MAX_BYTES)"
}

echo "docket web probe replay (issue 44), PostgreSQL, token set"

echo "finding 2: bulk actions on exact keys, only rows still failing"
expect "bulk cancel of the healthy row 'victim' through the API" 200 \
  "$(req "${auth[@]}" -H 'Content-Type: application/json' \
    -d '{"rows":[{"instance":"victim","version":1}]}' /api/tasks/report/bulk/cancel)"
grep -q '"victim"' "$scratch/body" || fail "the result does not name the row it left alone"
expect "bulk cancel of the line-feed row, as confirmed" 200 \
  "$(req "${auth[@]}" -H 'Content-Type: application/json' \
    -d '{"rows":[{"instance":"x\n1 victim","version":1}]}' /api/tasks/report/bulk/cancel)"
[ "$(psql -tA "$url" -c "SELECT count(*) FROM scheduled_tasks WHERE task_name = 'report' AND task_instance = 'victim'")" = 1 ] ||
  fail "the healthy row 'victim' was cancelled"
[ "$(psql -tA "$url" -c "SELECT count(*) FROM scheduled_tasks WHERE task_name = 'report' AND task_instance = E'x\\n1 victim'")" = 0 ] ||
  fail "the confirmed failing row was not cancelled"

echo "finding 3: one bad row never takes a page down"
for page in / /api/overview /tasks/parked /api/tasks/parked /queue /api/queue /queue/label \
  /api/queue/label "/api/search?instance=forever" "/search?instance=forever" /metrics /api/lag; do
  expect "GET $page" 200 "$(req "${auth[@]}" "$page")"
done
expect "GET /metrics (paused list with a bad paused_at)" 200 "$(req "${auth[@]}" /metrics)"
grep -q '^docket_paused_tasks' "$scratch/body" || fail "/metrics lost docket_paused_tasks"

echo "finding 4: a stale version is refused over HTTP"
status=$(curl -s -m 30 -o "$scratch/body" -w '%{http_code}' "${auth[@]}" \
  -H 'Content-Type: application/json' -d '{"version":0}' "$base/api/executions/report/victim/cancel")
echo "  POST /api/executions/report/victim/cancel with version 0 (the row is at 1): $status"
case "$status" in 2*) fail "a stale version was applied" ;; esac
[ "$(psql -tA "$url" -c "SELECT version FROM scheduled_tasks WHERE task_name = 'report' AND task_instance = 'victim'")" = 1 ] ||
  fail "the row changed under a stale version"

echo "finding 6: pause refuses unknown and look-alike names; paused lists are capped"
expect "POST /api/tasks/reprot/pause (a typo)" 404 "$(req "${auth[@]}" -X POST /api/tasks/reprot/pause)"
status=$(curl -s -m 30 -o "$scratch/body" -w '%{http_code}' "${auth[@]}" -X POST \
  "$base/api/tasks/re%E2%80%8Bport/pause?confirm=unknown")
echo "  POST /api/tasks/re<U+200B>port/pause?confirm=unknown: $status"
case "$status" in 2*) fail "a zero-width look-alike name was paused" ;; esac
for page in /metrics /api/overview /; do
  expect "GET $page with 50,000 paused tasks" 200 "$(req "${auth[@]}" "$page")"
done

echo "finding 7: wrong tokens lock out their source only"
for _ in $(seq 1 100); do
  curl -s -m 10 -o /dev/null --interface 127.0.0.2 -H 'Authorization: Bearer wrong-token-000000000' \
    "$base/api/overview" || true
done
expect "GET /api/overview from 127.0.0.2 after 100 wrong tokens" 429 \
  "$(req --interface 127.0.0.2 "${auth[@]}" /api/overview)"
expect "GET /api/overview from 127.0.0.1 meanwhile, right token" 200 "$(req "${auth[@]}" /api/overview)"

echo "finding 8: reads need the token; paused pages say so; JSON 404s; bearer in any case"
expect "GET /api/executions/report/victim without a token" 401 "$(req /api/executions/report/victim)"
expect "GET /executions/report/victim without a token (to the sign-in page)" 303 "$(req /executions/report/victim)"
expect "GET /metrics without a token" 401 "$(req /metrics)"
expect "GET /executions/report/victim with 'bearer' in lower case" 200 \
  "$(req -H "Authorization: bearer $token" /executions/report/victim)"
expect "GET /executions/parked/forever (its own time cannot be read)" 500 "$(req "${auth[@]}" /executions/parked/forever)"
grep -q 'cannot read' "$scratch/body" || fail "the unreadable row's page does not say what it is"
expect "GET /executions/sleepy/one (a paused task, due)" 200 "$(req "${auth[@]}" /executions/sleepy/one)"
grep -qi 'paused' "$scratch/body" || fail "the paused task's execution page does not say it is paused"
grep -qi 'next poll' "$scratch/body" && fail "the paused task's execution page says it runs at the next poll"
status=$(curl -s -m 30 -o "$scratch/body" -w '%{http_code} %{content_type}' "${auth[@]}" "$base/api/nothing-here")
echo "  GET /api/nothing-here: $status"
case "$status" in "404 application/json"*) ;; *) fail "/api/<unknown> answered $status" ;; esac

snapshot >"$scratch/after"
# The one change confirmed above: the line-feed row cancelled.
grep -v '^report/x\\n1 victim ' "$scratch/before" | diff - "$scratch/after" >"$scratch/diff" ||
  fail "the database changed beyond what was confirmed: $(cat "$scratch/diff")"
paused=$(psql -tA "$url" -c "SELECT count(*) FROM scheduled_tasks_paused")
[ "$paused" = 50002 ] || fail "the paused tasks changed: $paused rows"

kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
sampler=""
peak=$(cat "$peak_file")
echo "server resident memory at most $peak KiB throughout (bound $MAX_RSS_KIB KiB)"
[ "$peak" -le "$MAX_RSS_KIB" ] || fail "the server reached $peak KiB"
echo "web probe replay: every finding refused, nothing changed but the confirmed row"
