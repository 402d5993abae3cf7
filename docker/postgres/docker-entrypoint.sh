#!/bin/bash
# Entry point of docket's locally built PostgreSQL test image. It follows the official image's
# contract as far as docket's compat tests and testcontainers-modules use it:
#   POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_USER
#   (default postgres), POSTGRES_DB (default $POSTGRES_USER), POSTGRES_INITDB_ARGS,
#   POSTGRES_HOST_AUTH_METHOD (default scram-sha-256), PGDATA, *.sql and *.sh files in
#   /docker-entrypoint-initdb.d; the first start initializes PGDATA with a temporary server
#   whose log goes to stdout, then `postgres` is exec'd with its log on stderr.
set -Eeuo pipefail
# shellcheck source=../initdb.sh
. /usr/local/lib/docket/initdb.sh

# Arguments starting with "-" are options for postgres.
if [ "${1:0:1}" = '-' ]; then
	set -- postgres "$@"
fi

if [ "$1" != 'postgres' ]; then
	exec "$@"
fi

# As root: prepare the directories, then run this script again as the postgres user.
if [ "$(id -u)" = '0' ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chmod 00700 "$PGDATA"
	chown -R postgres:postgres "$PGDATA" /var/run/postgresql
	exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != 'trust' ]; then
		echo >&2 'error: database is uninitialized and POSTGRES_PASSWORD is not set;'
		echo >&2 '       set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust'
		exit 1
	fi
	pwfile="$(mktemp)"
	printf '%s\n' "${POSTGRES_PASSWORD:-}" > "$pwfile"
	# shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of words, as in the official image.
	initdb --username="$POSTGRES_USER" --pwfile="$pwfile" ${POSTGRES_INITDB_ARGS:-}
	rm -f "$pwfile"

	{
		echo
		echo "listen_addresses = '*'"
	} >> "$PGDATA/postgresql.conf"
	{
		echo
		echo "host all all all $POSTGRES_HOST_AUTH_METHOD"
	} >> "$PGDATA/pg_hba.conf"

	# Temporary server on the socket only; its log goes to stdout (no -l).
	pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start

	psql_run=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
	if [ "$POSTGRES_DB" != 'postgres' ]; then
		"${psql_run[@]}" --dbname postgres --set db="$POSTGRES_DB" <<-'SQL'
			CREATE DATABASE :"db" ;
		SQL
	fi
	run_sql_file() { "${psql_run[@]}" --dbname "$POSTGRES_DB" -f "$1"; }
	run_initdb_scripts run_sql_file

	pg_ctl -D "$PGDATA" -m fast -w stop
	echo 'PostgreSQL init process complete; ready for start up.'
fi

exec "$@"
