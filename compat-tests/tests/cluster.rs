//! The cluster suite (docs/RELIABILITY.md, "Past one database server"): a three-node MariaDB
//! Galera cluster and a PostgreSQL primary with a synchronous standby, started by
//! `scripts/cluster.sh` (`scripts/cluster.sh run cargo test -p docket-compat-tests --test
//! cluster`). Without the cluster's variables every case fails with `NOT RUN:`.

const EXE: &str = env!("CARGO_BIN_EXE_reliab_worker");

mod galera {
    use super::EXE;
    use docket_compat_tests::cluster::{
        galera_exactly_once, galera_node_lost_multi_host, galera_one_node_against_three, NodeFault,
    };

    #[test]
    fn lock_and_fetch_priority_on() {
        galera_exactly_once(EXE, "lock-and-fetch", true);
    }

    #[test]
    fn lock_and_fetch_priority_off() {
        galera_exactly_once(EXE, "lock-and-fetch", false);
    }

    #[test]
    fn fetch_priority_on() {
        galera_exactly_once(EXE, "fetch", true);
    }

    #[test]
    fn fetch_priority_off() {
        galera_exactly_once(EXE, "fetch", false);
    }

    #[test]
    fn work_queue_across_nodes() {
        docket_compat_tests::cluster::galera_queue_across_nodes();
    }

    #[test]
    fn node_killed_and_back() {
        docket_compat_tests::cluster::galera_node_killed_and_back(EXE);
    }

    #[test]
    fn node_killed_multi_host() {
        galera_node_lost_multi_host(EXE, NodeFault::Killed);
    }

    #[test]
    fn node_cut_off_multi_host() {
        galera_node_lost_multi_host(EXE, NodeFault::CutOff);
    }

    #[test]
    fn node_cut_off_and_back() {
        docket_compat_tests::cluster::galera_node_cut_off(EXE);
    }

    #[test]
    fn one_node_against_three() {
        galera_one_node_against_three(EXE);
    }
}

mod postgres {
    use super::EXE;

    #[test]
    fn failover_to_the_standby() {
        docket_compat_tests::cluster::pg_failover(EXE);
    }
}
