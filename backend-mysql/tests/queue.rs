//! The work queue on a live MariaDB/MySQL server: `DOCKET_MYSQL_URL` (a server URL without a
//! database; the test creates and drops its own), else `mysql://root@127.0.0.1:3306`. Skipped,
//! with a message, when no server answers.

mod common;

use diesel::connection::SimpleConnection;
use diesel::{Connection, MysqlConnection};
use docket_core::StoreConfig;
use std::sync::Arc;

fn server() -> String {
    std::env::var("DOCKET_MYSQL_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "mysql://root@127.0.0.1:3306".to_owned())
        .trim_end_matches('/')
        .to_owned()
}

#[test]
fn work_queue_on_a_live_server() {
    let admin = server();
    let Ok(mut conn) = MysqlConnection::establish(&admin) else {
        eprintln!("skipped: no MySQL/MariaDB server at {admin}");
        return;
    };
    let database = format!("docket_queue_{}", std::process::id());
    conn.batch_execute(&format!("CREATE DATABASE `{database}`"))
        .unwrap();
    let url = format!("{admin}/{database}");
    let run = || {
        for priority in [false, true] {
            let mut config = StoreConfig::with_priority(priority);
            config.table = docket_core::TableName::parse(&format!("queue_{priority}")).unwrap();
            let store = docket_mysql::connect(&url, config).unwrap();
            docket_mysql::migrate(&store, None).unwrap();
            common::scenario(Arc::new(store));
        }
    };
    let outcome = std::panic::catch_unwind(run);
    conn.batch_execute(&format!("DROP DATABASE `{database}`"))
        .unwrap();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
