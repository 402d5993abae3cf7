# Shared by scripts/web-load-test.sh and scripts/web-probe-replay.sh (sourced, not run): prepare
# a database, start `docket web` and sample its resident memory. The caller defines `fail` and
# `not_run`, and in its cleanup stops `$server` and `$sampler` and drops `$db`.

# `web_prepare PREFIX`: installs curl when missing, builds the CLI (debug, in CARGO_TARGET_DIR),
# creates the database `PREFIX_<pid>` on PostgreSQL (DOCKET_WEB_PG_URL, an admin URL); sets
# `docket`, `admin`, `db`, `url` and `scratch` (a temporary folder).
web_prepare() {
  command -v curl >/dev/null 2>&1 || {
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl
  } || not_run "cannot install curl"
  command -v psql >/dev/null 2>&1 || not_run "no psql (Debian's postgresql-client)"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/docket-target}"
  cargo build -q -p docket-cli
  docket="$CARGO_TARGET_DIR/debug/docket"
  admin="${DOCKET_WEB_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
  db="${1}_$$"
  url="${admin%/*}/$db"
  psql -q "$admin" -c "CREATE DATABASE $db" >/dev/null || not_run "cannot create a database at $admin"
  scratch="$(mktemp -d)"
}

# `web_start [ARGS...]`: starts `docket web` on `$url` at a free loopback port with ARGS; sets
# `server` (its pid) and `base` (its address, from the first line it prints).
web_start() {
  "$docket" web --database-url "$url" --listen 127.0.0.1:0 "$@" >"$scratch/server.log" 2>&1 &
  server=$!
  base=""
  for _ in $(seq 1 100); do
    base="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$scratch/server.log" | head -1 || true)"
    [ -n "$base" ] && break
    sleep 0.1
  done
  [ -n "$base" ] || fail "docket web printed no address: $(cat "$scratch/server.log")"
}

# `web_sample_memory`: samples the server's resident memory every 50 ms in the background;
# the peak so far (KiB) is in "$peak_file"; sets `sampler` (its pid).
web_sample_memory() {
  peak_file="$scratch/peak"
  echo 0 >"$peak_file"
  (
    peak=0
    while kill -0 "$server" 2>/dev/null; do
      rss=$(ps -o rss= -p "$server" | tr -d ' ')
      if [ -n "$rss" ] && [ "$rss" -gt "$peak" ]; then
        peak=$rss
        echo "$peak" >"$peak_file"
      fi
      sleep 0.05
    done
  ) &
  sampler=$!
}
