#!/usr/bin/env bash
# Builds every example of the `docket` crate (docket/examples/*.rs) and runs each one: on the
# bundled SQLite, so no server is needed. Each finishes on its own in a few seconds and exits
# non-zero when what it shows did not happen; a hung example fails after 60 s.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/docket-target}"
cargo build -q -p docket --examples

status=0
for file in docket/examples/*.rs; do
  example="$(basename "$file" .rs)"
  echo "=== example $example"
  start=$SECONDS
  if timeout 60 cargo run -q -p docket --example "$example"; then
    echo "=== example $example: ok ($((SECONDS - start)) s)"
  else
    echo "=== example $example: FAILED" >&2
    status=1
  fi
done
exit $status
