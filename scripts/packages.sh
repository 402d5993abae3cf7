# The Debian packages the test command (scripts/test) needs, in one place: scripts/test and
# .ci/run both source this file, so a new system dependency is added here and nowhere else.
# Sourced, not run: it only defines functions and never changes the caller's shell options.
#
#   docket_missing_packages   prints, one a line, the packages that are not installed yet
#   docket_install_packages   installs them (root: apt-get update once, then apt-get install);
#                             without root it prints the packages and the apt command to run by
#                             hand and returns 1

docket_missing_packages() {
  local need=()
  # A C compiler and libc's headers: cargo links with `cc`, and the cc crate compiles bundled
  # SQLite, ring and aws-lc from C. A machine with a working Rust toolchain usually has them.
  command -v cc >/dev/null 2>&1 || need+=(gcc)
  dpkg -s libc6-dev >/dev/null 2>&1 || need+=(libc6-dev)
  # Client libraries diesel links: libpq for the postgres feature (pq-sys), libmysqlclient for
  # the mysql feature (mysqlclient-sys; MariaDB's compatible library). Checked with dpkg because
  # they are headers and link files, not commands.
  dpkg -s libpq-dev >/dev/null 2>&1 || need+=(libpq-dev)
  dpkg -s libmariadb-dev-compat >/dev/null 2>&1 || need+=(libmariadb-dev-compat)
  # Server binaries for the throwaway test servers, checked by presence so a server installed
  # some other way counts. PostgreSQL: initdb and pg_ctl (the package also creates the
  # `postgres` OS user the suite runs them as when the tests run as root, since PostgreSQL
  # refuses to run as root).
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
  # MariaDB: mariadb-install-db and mariadbd (-core has no service scripts), the client with
  # mariadb-tzinfo-to-sql, and tzdata for the time zone tables the suite loads.
  command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server-core)
  command -v mariadb-tzinfo-to-sql >/dev/null 2>&1 || need+=(mariadb-client)
  [ -f /usr/share/zoneinfo/America/New_York ] || need+=(tzdata)
  # The outage test stops the throwaway MariaDB with the kill command (the program, not the
  # shell builtin `command -v` would find); minimal installs and containers lack procps.
  type -P kill >/dev/null 2>&1 || need+=(procps)
  # The reliability suite's fault cases: libfaketime (skewed clocks), ip and iptables (a
  # network namespace and the partition between it and the test server).
  [ -f /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ] || need+=(libfaketime)
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  command -v iptables >/dev/null 2>&1 || need+=(iptables)
  if [ ${#need[@]} -gt 0 ]; then
    printf '%s\n' "${need[@]}"
  fi
}

docket_install_packages() {
  local need=()
  mapfile -t need < <(docket_missing_packages)
  [ ${#need[@]} -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ]; then
    # No sudo attempt: whoever runs this decides how to become root.
    {
      echo "missing Debian packages: ${need[*]}"
      echo "install them as root, then run the command again:"
      echo "  apt-get update && apt-get install -y ${need[*]}"
    } >&2
    return 1
  fi
  echo "installing Debian packages: ${need[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
}
