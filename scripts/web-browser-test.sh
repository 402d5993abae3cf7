#!/usr/bin/env bash
# Real-browser test of `docket web` (cli/tests/web_browser.rs): seeds SQLite and PostgreSQL,
# starts `docket web`, drives Debian's chromium with Node's playwright-core through the
# operator and worker pages, checks the database, and saves screenshots to
# ${DOCKET_SCREENSHOTS:-docs/screenshots}.
#
# Installs what it needs: Debian's chromium (apt-get), playwright-core (npm ci, into
# cli/tests/web_browser/node_modules). PostgreSQL: DOCKET_WEB_PG_URL (an admin URL), default
# postgres://postgres@127.0.0.1:5432/postgres; the test creates and drops its own database.
# Whatever cannot be had makes it print NOT RUN and fail: a missing browser is never a pass.
set -euo pipefail
cd "$(dirname "$0")/.."

not_run() {
  echo "NOT RUN: web browser test: $*" >&2
  exit 1
}

chromium="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "installing Debian's chromium"
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }; then
    not_run "cannot install Debian's chromium (apt-get failed)"
  fi
fi
[ -x "$chromium" ] || not_run "no chromium at $chromium"
command -v node >/dev/null 2>&1 || not_run "no Node.js (node) to run playwright-core"
command -v npm >/dev/null 2>&1 || not_run "no npm to install playwright-core"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
  || not_run "playwright-core needs Node.js 20 or later, found $(node --version)"
if [ ! -d cli/tests/web_browser/node_modules/playwright-core ]; then
  (cd cli/tests/web_browser && npm ci --no-audit --no-fund) \
    || not_run "npm could not install playwright-core"
fi

export CHROMIUM="$chromium"
export DOCKET_SCREENSHOTS="${DOCKET_SCREENSHOTS:-$PWD/docs/screenshots}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/docket-target}"
# One browser at a time: two cores.
cargo test -p docket-cli --features browser-test --test web_browser -- --test-threads=1
echo "screenshots: $DOCKET_SCREENSHOTS"
