#!/usr/bin/env bash
# Proves the README's test command on a fresh Debian machine: runs `scripts/test`, as root, in a
# container that has only Debian minbase and a Rust toolchain (docker/fresh/Dockerfile says
# exactly what), on a clean clone of a commit of this repository, and reports how long it took.
# scripts/test has to install every Debian package the tests need by itself.
#
# Usage: docker/fresh/run.sh [COMMIT]      (default: HEAD; uncommitted changes are not tested)
#
# Steps:
#   1. a Docker engine: the one that answers (DOCKER_HOST, else the default socket), else the
#      dockerd this script left at $DOCKET_FRESH_STATE, else it starts one there (host network
#      only: no bridge, no iptables changes) and stops it at the end;
#   2. the debootstrap base image (docker/build-images.sh --base-only), then the image
#      $DOCKET_FRESH_IMAGE: base + the release's -updates and -security apt sources (as a fresh
#      install has; debootstrap sets only the release) + ca-certificates, gcc, libc6-dev + the
#      host's default rustup toolchain (from $RUSTUP_HOME and $CARGO_HOME/bin; not the nightly
#      or other toolchains, not the crate cache) + the host's extra CA certificates, if any
#      (see the Dockerfile);
#   3. `git clone` of COMMIT into a scratch folder, mounted at /src in the container;
#   4. `docker run --network host --cap-add NET_ADMIN --cap-add SYS_ADMIN` (apt and cargo need
#      the network; the reliability suite's fault cases make network namespaces and iptables
#      rules, as root on a fresh machine can) of `scripts/test` there:
#      it compiles the whole workspace from scratch. Its output goes to $DOCKET_FRESH_LOG too.
#
# Needs: root, git, docker.io and debootstrap (installed from Debian's packages when missing).
# Environment (defaults in brackets):
#   DOCKET_FRESH_STATE  [~/.cache/docket-fresh]   state of the dockerd this script starts
#   DOCKET_FRESH_IMAGE  [docket-fresh/rust:<release>]
#   DOCKET_FRESH_LOG    [$DOCKET_FRESH_STATE/last-run.log]
#   DOCKET_FRESH_KEEP   [0]  1 keeps the clone and its target/ (path printed at the end)
#   and docker/build-images.sh's DOCKET_TC_BASE_IMAGE, DOCKET_TC_DEBIAN_* variables.
# Exit status: that of scripts/test in the container.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

rev="$(git -C "$repo" rev-parse --verify "${1:-HEAD}^{commit}")"
release="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
state="${DOCKET_FRESH_STATE:-$HOME/.cache/docket-fresh}"
image="${DOCKET_FRESH_IMAGE:-docket-fresh/rust:$release}"
base_image="${DOCKET_TC_BASE_IMAGE:-docket-tc/debian:$release}"
log="${DOCKET_FRESH_LOG:-$state/last-run.log}"
rustup_home="${RUSTUP_HOME:-$HOME/.rustup}"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
mkdir -p "$state"
script_start=$SECONDS

# --- packages for this script itself (not for the tests: proving those is the point) ---------
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v docker >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  echo "installing: ${need[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi

# --- 1. Docker engine ------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/docket-fresh.XXXXXX")"
# shellcheck source=docker/engine.sh
. "$here/../engine.sh"
cleanup() {
  local status=$?
  if [ "${DOCKET_FRESH_KEEP:-0}" = 1 ] && [ -d "$work/docket" ]; then
    echo "kept the clone and its target/ in $work/docket"
    rm -rf "$work/context"
  else
    rm -rf "$work"
  fi
  docket_engine_stop
  exit "$status"
}
trap cleanup EXIT

# Every build and run here uses the host's network, so the engine needs no bridge.
docket_engine_start "$state" --bridge=none

# --- 2. images -------------------------------------------------------------------------------
DOCKET_TC_BASE_IMAGE="$base_image" "$here/../build-images.sh" --base-only

# The build context: the default toolchain only (rustup's settings name it), hard-linked where
# the file system allows, so the copy costs no space.
toolchain="$(RUSTUP_HOME="$rustup_home" rustup default 2>/dev/null | awk '{ print $1 }')"
if [ -z "$toolchain" ] || [ ! -d "$rustup_home/toolchains/$toolchain" ]; then
  echo "no default rustup toolchain in $rustup_home" >&2
  exit 1
fi
ctx="$work/context"
mkdir -p "$ctx/rustup/toolchains" "$ctx/cargo"
cp -al "$rustup_home/toolchains/$toolchain" "$ctx/rustup/toolchains/" 2>/dev/null ||
  cp -a "$rustup_home/toolchains/$toolchain" "$ctx/rustup/toolchains/"
cp -a "$rustup_home/settings.toml" "$ctx/rustup/"
cp -a "$cargo_home/bin" "$cargo_home/env" "$ctx/cargo/"
# The host's CA bundle: the Dockerfile adds only what Debian's stock bundle lacks (a proxy's CA).
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/host-ca-certificates.crt"
else
  : >"$ctx/host-ca-certificates.crt"
fi
# apt sources as on a freshly installed machine: the release with its -updates and -security
# suites, from the mirrors the host's apt uses for them (main only: all the tests need).
apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(TARGET_OF)' 2>/dev/null |
  awk -v r="$release" '$3 == "deb" && ($2 == r || $2 == r "-updates" || $2 == r "-security") {
    print "deb " $1 " " $2 " main" }' | sort -u >"$ctx/sources.list"
if ! grep -q " $release main\$" "$ctx/sources.list"; then
  echo "apt has no source for release $release (run apt-get update)" >&2
  exit 1
fi
phase_start=$SECONDS
# The classic builder: no buildx plugin needed, and RUN steps use the host network.
DOCKER_BUILDKIT=0 docker build --quiet --network host --build-arg "BASE=$base_image" \
  -t "$image" -f "$here/Dockerfile" "$ctx" >/dev/null
rm -rf "$ctx"
echo "image: $image ready with toolchain $toolchain ($((SECONDS - phase_start)) s)"

# --- 3. the clone ----------------------------------------------------------------------------
git clone --quiet --no-checkout "$repo" "$work/docket"
git -C "$work/docket" checkout --quiet --detach "$rev"
echo "clone: $(git -C "$work/docket" log -1 --format='%h %s')"

# --- 4. the test command ---------------------------------------------------------------------
echo "running scripts/test in $image (log: $log); started $(date -u '+%F %T') UTC"
phase_start=$SECONDS
status=0
docker run --rm --network host --cap-add NET_ADMIN --cap-add SYS_ADMIN -v "$work/docket:/src" "$image" scripts/test 2>&1 |
  tee "$log" || status=$?
elapsed=$((SECONDS - phase_start))
echo
echo "== scripts/test in a fresh container: exit $status, $((elapsed / 60)) min $((elapsed % 60)) s" \
  "(whole script $((SECONDS - script_start)) s); result lines:"
grep -E '^test result:' "$log" || true
exit "$status"
