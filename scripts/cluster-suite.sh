#!/usr/bin/env bash
# CI's cluster step (docs/RELIABILITY.md, "Past one database server"), after scripts/test has run
# the cluster suite itself (compat-tests/tests/cluster.rs): on the clusters of scripts/cluster.sh,
# the compatibility suite against one node of the three-node Galera cluster (priority off and on),
# then the PostgreSQL failover again with an asynchronous standby, whose figures say what such a
# failover loses. The clusters are stopped and removed whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/cluster.sh run bash -c '
  set -euo pipefail
  DOCKET_MYSQL_URL="${DOCKET_GALERA_URLS%%,*}" cargo test -p docket-compat-tests --test compat mysql::
  DOCKET_PG_HA_SYNC=off cargo test -p docket-compat-tests --test cluster postgres:: -- --nocapture
'
