# Shared by the scripts whose one option is a flag (sourced, not run): docker/build-images.sh
# (`--base-only`) and scripts/testcontainers-suite.sh (`--with-outage`).

# `flag_given FLAG ARGS...`: prints 1 when the script's arguments ARGS hold FLAG, 0 when they
# are empty; any other argument prints the usage line `usage: SCRIPT [FLAG]` and exits 2 (the
# caller's `set -e` ends the script with it: `x="$(flag_given --flag "$@")"`).
flag_given() {
  local flag="$1" given=0 arg
  shift
  for arg in "$@"; do
    case "$arg" in
      "$flag") given=1 ;;
      *) echo "usage: $0 [$flag]" >&2; exit 2 ;;
    esac
  done
  echo "$given"
}
