#!/usr/bin/env bash
# Builds every example of the `docket` crate (docket/examples/*.rs) and of the dashboard
# crate `docket-web` (web/examples/*.rs: the dashboard mounted in an application) and runs each
# one: on the bundled SQLite, so no server is needed. Each finishes on its own in a few seconds
# and exits non-zero when what it shows did not happen; a hung example fails after 60 s.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/docket-target}"
# One package at a time: built together, cargo would unify their features (docket-web's
# dev-dependencies turn on every backend of docket) and each `cargo run -p docket` below would
# build docket again without them.
cargo build -q -p docket --examples
cargo build -q -p docket-web --examples

status=0
for file in docket/examples/*.rs web/examples/*.rs; do
  example="$(basename "$file" .rs)"
  case "$file" in
    web/*) package=docket-web ;;
    *) package=docket ;;
  esac
  echo "=== example $package/$example"
  start=$SECONDS
  if timeout 60 cargo run -q -p "$package" --example "$example"; then
    echo "=== example $package/$example: ok ($((SECONDS - start)) s)"
  else
    echo "=== example $package/$example: FAILED" >&2
    status=1
  fi
done
exit $status
