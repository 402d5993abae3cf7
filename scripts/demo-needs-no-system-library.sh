#!/usr/bin/env bash
# Shows that the README's demo command builds without any system C library: the CLI without its
# default features (PostgreSQL, MySQL) depends on neither pq-sys (libpq) nor mysqlclient-sys
# (libmysqlclient), and the binary it builds links neither. Then runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/docket-target}"

deps="$(cargo tree -p docket-cli --no-default-features -e normal,build --prefix none)"
if grep -E '^(pq-sys|mysqlclient-sys) ' <<<"$deps"; then
  echo "FAIL: the demo build depends on a system C library (above)" >&2
  exit 1
fi
# A debug build shows the same linkage as the README's `--release` one, at a fraction of the time.
cargo build -p docket-cli --no-default-features
bin="$CARGO_TARGET_DIR/debug/docket"
if ldd "$bin" | grep -Ei 'libpq|libmysqlclient|libmariadb'; then
  echo "FAIL: $bin links a database client library (above)" >&2
  exit 1
fi
echo "demo build: no pq-sys, no mysqlclient-sys; $bin links only: $(ldd "$bin" | awk '{print $1}' | tr '\n' ' ')"
"$bin" demo | tail -3
