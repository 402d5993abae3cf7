#!/bin/bash
# Shared by the entry points of docket's locally built test images (sourced, not run): the
# official images' handling of /docker-entrypoint-initdb.d, written once.

# Runs each file of /docker-entrypoint-initdb.d in name order as the official images do: `*.sh`
# is sourced (it sees the entry point's variables), `*.sql` is passed to the command `$1`
# (the entry point's SQL client, given the file's path), anything else is ignored.
run_initdb_scripts() {
	local run_sql="$1" f
	for f in /docker-entrypoint-initdb.d/*; do
		case "$f" in
			*.sh)
				echo "running $f"
				# shellcheck source=/dev/null
				. "$f"
				;;
			*.sql) echo "running $f"; "$run_sql" "$f" ;;
			*) ;;
		esac
	done
}
