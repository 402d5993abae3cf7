#!/bin/bash
# Entry point of docket's locally built MariaDB test image. It follows the official image's
# contract as far as docket's compat tests and testcontainers-modules use it:
#   MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD or MARIADB_RANDOM_ROOT_PASSWORD
#   (one is required), MARIADB_ROOT_HOST (default %), MARIADB_DATABASE, MARIADB_USER with
#   MARIADB_PASSWORD, MARIADB_INITDB_SKIP_TZINFO, each also as MYSQL_* (MYSQL_ALLOW_EMPTY_PASSWORD
#   for the empty root password); *.sql and *.sh files in /docker-entrypoint-initdb.d. The first
#   start initializes /var/lib/mysql with a temporary server that does not listen on TCP
#   ("port: 0" in its ready line), then `mariadbd` is exec'd with its log on stderr.
set -Eeuo pipefail
# shellcheck source=../initdb.sh
. /usr/local/lib/docket/initdb.sh

if [ "${1:0:1}" = '-' ]; then
	set -- mariadbd "$@"
fi

if [ "$1" != 'mariadbd' ] && [ "$1" != 'mysqld' ]; then
	exec "$@"
fi

# MARIADB_X, else MYSQL_X, else the default.
env_or() {
	local mariadb="MARIADB_$1" mysql="MYSQL_$1"
	printf '%s' "${!mariadb:-${!mysql:-${2:-}}}"
}

datadir=/var/lib/mysql
socket=/run/mysqld/mysqld.sock

if [ "$(id -u)" = '0' ]; then
	mkdir -p "$datadir" /run/mysqld
	chown -R mysql:mysql "$datadir" /run/mysqld
fi

if [ ! -d "$datadir/mysql" ]; then
	root_password="$(env_or ROOT_PASSWORD)"
	allow_empty="$(env_or ALLOW_EMPTY_ROOT_PASSWORD "${MYSQL_ALLOW_EMPTY_PASSWORD:-}")"
	random_root="$(env_or RANDOM_ROOT_PASSWORD)"
	if [ -z "$root_password" ] && [ -z "$allow_empty" ] && [ -z "$random_root" ]; then
		echo >&2 'error: database is uninitialized and none of MARIADB_ROOT_PASSWORD,'
		echo >&2 '       MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, MARIADB_RANDOM_ROOT_PASSWORD is set'
		exit 1
	fi
	if [ -n "$random_root" ] && [ -z "$root_password" ]; then
		root_password="$(tr -dc 'A-Za-z0-9' < /dev/urandom | head -c 32)"
		echo "GENERATED ROOT PASSWORD: $root_password"
	fi
	root_host="$(env_or ROOT_HOST '%')"
	database="$(env_or DATABASE)"
	user="$(env_or USER)"
	password="$(env_or PASSWORD)"

	echo 'Initializing database files'
	mariadb-install-db --user=mysql --datadir="$datadir" --rpm --skip-test-db \
		--auth-root-authentication-method=normal >/dev/null

	echo 'Starting temporary server'
	mariadbd --user=mysql --datadir="$datadir" --skip-networking --socket="$socket" \
		--skip-log-bin "${@:2}" &
	temp_pid=$!
	client=(mariadb --protocol=socket --socket="$socket" -uroot --database=mysql)
	for _ in $(seq 60); do
		if "${client[@]}" -e 'SELECT 1' >/dev/null 2>&1; then
			break
		fi
		if ! kill -0 "$temp_pid" 2>/dev/null; then
			echo >&2 'error: the temporary server exited during initialization'
			exit 1
		fi
		sleep 1
	done
	"${client[@]}" -e 'SELECT 1' >/dev/null

	if [ -z "$(env_or INITDB_SKIP_TZINFO)" ]; then
		echo 'Loading time zone tables'
		mariadb-tzinfo-to-sql /usr/share/zoneinfo 2>/dev/null | "${client[@]}"
	fi

	sql_string() {
		local s="${1//\\/\\\\}"
		printf "'%s'" "${s//\'/\\\'}"
	}
	{
		echo 'SET @@SESSION.SQL_LOG_BIN=0;'
		echo "DELETE FROM mysql.user WHERE User = '';"
		echo "SET PASSWORD FOR 'root'@'localhost' = PASSWORD($(sql_string "$root_password"));"
		if [ "$root_host" != 'localhost' ]; then
			echo "CREATE USER 'root'@$(sql_string "$root_host") IDENTIFIED BY $(sql_string "$root_password");"
			echo "GRANT ALL ON *.* TO 'root'@$(sql_string "$root_host") WITH GRANT OPTION;"
		fi
		if [ -n "$database" ]; then
			echo "CREATE DATABASE IF NOT EXISTS \`${database//\`/\`\`}\`;"
		fi
		if [ -n "$user" ]; then
			echo "CREATE USER $(sql_string "$user")@'%' IDENTIFIED BY $(sql_string "$password");"
			if [ -n "$database" ]; then
				echo "GRANT ALL ON \`${database//\`/\`\`}\`.* TO $(sql_string "$user")@'%';"
			fi
		fi
		echo 'FLUSH PRIVILEGES;'
	} | "${client[@]}"

	db_client=("${client[@]}")
	if [ -n "$root_password" ]; then
		db_client+=(--password="$root_password")
	fi
	if [ -n "$database" ]; then
		db_client+=(--database="$database")
	fi
	run_sql_file() { "${db_client[@]}" < "$1"; }
	run_initdb_scripts run_sql_file

	echo 'Stopping temporary server'
	kill -TERM "$temp_pid"
	wait "$temp_pid" || true
	echo 'MariaDB init process done. Ready for start up.'
fi

if [ "$(id -u)" = '0' ]; then
	set -- "$@" --user=mysql
fi
exec "$@"
