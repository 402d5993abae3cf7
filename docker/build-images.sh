#!/usr/bin/env bash
# Builds the container images docket's compat tests run through testcontainers on machines that
# reach Debian's package mirror but no container registry: a minimal Debian root file system made
# by debootstrap (from the mirror and release apt is configured with here) is imported as a base
# image, then docker/postgres and docker/mariadb are built on it with Debian's packages.
#
# Usage: docker/build-images.sh [--base-only]
#   --base-only  builds only the debootstrap base image (docker/fresh/run.sh needs no servers).
#
# Needs: root, a reachable Docker engine (DOCKER_HOST or the default socket), debootstrap.
# Images that already exist are kept; DOCKET_TC_REBUILD=1 rebuilds them.
#
# Environment (defaults in brackets):
#   DOCKET_TC_BASE_IMAGE      [docket-tc/debian:<release>]   base image made by debootstrap
#   DOCKET_TC_POSTGRES_IMAGE  [docket-tc/postgres:<release>]
#   DOCKET_TC_MARIADB_IMAGE   [docket-tc/mariadb:<release>]
#   DOCKET_TC_DEBIAN_RELEASE  [VERSION_CODENAME of /etc/os-release]
#   DOCKET_TC_DEBIAN_MIRROR   [the apt source serving that release, from `apt-get indextargets`]
#   DOCKET_TC_REBUILD         [0]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# shellcheck source=scripts/flag-lib.sh
. "$here/../scripts/flag-lib.sh"
base_only="$(flag_given --base-only "$@")"

release="${DOCKET_TC_DEBIAN_RELEASE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}"
if [ -z "$release" ]; then
  echo "build-images: cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release);" \
    "set DOCKET_TC_DEBIAN_RELEASE" >&2
  exit 1
fi
base_image="${DOCKET_TC_BASE_IMAGE:-docket-tc/debian:$release}"
postgres_image="${DOCKET_TC_POSTGRES_IMAGE:-docket-tc/postgres:$release}"
mariadb_image="${DOCKET_TC_MARIADB_IMAGE:-docket-tc/mariadb:$release}"
rebuild="${DOCKET_TC_REBUILD:-0}"
# The classic builder: it needs no buildx plugin and runs RUN steps on the host network.
export DOCKER_BUILDKIT=0

have_image() { [ "$rebuild" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }

# The mirror apt already uses for this release: read from apt's configuration at run time.
debian_mirror() {
  if [ -n "${DOCKET_TC_DEBIAN_MIRROR:-}" ]; then
    echo "$DOCKET_TC_DEBIAN_MIRROR"
    return
  fi
  apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(TARGET_OF)' 2>/dev/null |
    awk -v r="$release" '$2 == r && $3 == "deb" { print $1; exit }'
}

if ! have_image "$base_image"; then
  command -v debootstrap >/dev/null || {
    echo "build-images: debootstrap is not installed (apt-get install debootstrap)" >&2
    exit 1
  }
  mirror="$(debian_mirror)"
  if [ -z "$mirror" ]; then
    echo "build-images: apt has no source for release $release (run apt-get update," \
      "or set DOCKET_TC_DEBIAN_MIRROR)" >&2
    exit 1
  fi
  work="$(mktemp -d "${TMPDIR:-/tmp}/docket-tc-rootfs.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  echo "build-images: debootstrap $release (minbase) into $work"
  start=$SECONDS
  debootstrap --variant=minbase "$release" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    exit 1
  }
  # The packages' own lists are fetched again in each image build; no need to ship them.
  rm -rf "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/var/cache/apt/archives/*.deb
  tar -C "$work/rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' - "$base_image" >/dev/null
  rm -rf "$work"
  trap - EXIT
  echo "build-images: $base_image ready ($((SECONDS - start)) s)"
fi

build() {
  local image="$1" dir="$2" start=$SECONDS
  if have_image "$image"; then
    echo "build-images: $image exists (DOCKET_TC_REBUILD=1 rebuilds it)"
    return
  fi
  echo "build-images: building $image from docker/$(basename "$dir")"
  # The context is docker/ (shared files such as initdb.sh), the Dockerfile the image's own.
  docker build --quiet --network host --build-arg "BASE=$base_image" \
    --label org.docket.compat-tests=1 -t "$image" -f "$dir/Dockerfile" "$here" >/dev/null
  echo "build-images: $image ready ($((SECONDS - start)) s)"
}

[ "$base_only" = 1 ] && exit 0
build "$postgres_image" "$here/postgres"
build "$mariadb_image" "$here/mariadb"
