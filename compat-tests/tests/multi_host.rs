//! A MySQL/MariaDB URL naming several hosts (`mysql://user@h1,h2/db`, for a Galera cluster
//! without a proxy): the store opens its connections on the first host that answers. The
//! Galera case (a node killed under running schedulers) is in the cluster suite.

use docket::store::ExecutionStore;
use docket::{SchedulerClient, StoreConfig};
use docket_compat_tests::backends::Mysql;
use docket_compat_tests::Harness;
use std::sync::Arc;

/// `url` with `host` named before its own host.
fn with_host_first(url: &str, host: &str) -> String {
    let at = url
        .find('@')
        .or_else(|| url.find("://").map(|i| i + 2))
        .expect("a URL");
    format!("{}{host},{}", &url[..=at], &url[at + 1..])
}

#[test]
fn a_host_that_is_down_is_skipped() {
    let space = Mysql.space();
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    let url = with_host_first(&space.url(), "127.0.0.1:1");
    assert_eq!(docket::mysql::MysqlManager::new(&url).hosts(), 2, "{url}");
    let store = docket::mysql::connect(&url, StoreConfig::default())
        .unwrap_or_else(|e| panic!("the second host answers ({url}): {e}"));
    docket::mysql::migrate(&store, None).expect("migrate");
    let store = Arc::new(store);
    let client = SchedulerClient::new(store.clone()).expect("client");
    client
        .schedule(docket::TaskDescriptor::<()>::named("t").instance("1"))
        .expect("scheduled through the second host");
    assert!(
        store
            .execution_get(&docket::ExecutionKey::new("t", "1"))
            .expect("read through the second host")
            .is_some(),
        "the row is there"
    );
}

#[test]
fn every_host_down_is_a_clear_error() {
    let err = docket::mysql::connect_with(
        "mysql://root@127.0.0.1:1,127.0.0.1:2/db",
        StoreConfig::default(),
        &docket::mysql::MysqlOptions {
            connection_timeout: std::time::Duration::from_secs(2),
            ..Default::default()
        },
    )
    .expect_err("nothing listens there");
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
}
