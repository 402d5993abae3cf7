//! # docket-oracle
//!
//! The Oracle (19c+, 23ai) backend of docket: [`OracleDialect`] (how statements are spelled),
//! an [`OracleConnector`] (diesel-oci `OciConnection` + r2d2 pool: docket-diesel's shared
//! session over the [`OracleFamily`]) under the shared
//! [`SqlStore`](docket_core::backend::SqlStore), and migrations templated by
//! [`docket_core::migrate::plan`].
//!
//! What is particular to this backend:
//!
//! - **Claims.** Lock-and-fetch selects `FOR UPDATE SKIP LOCKED` on a `ROWID` subquery that
//!   carries the order and the row limit, then updates the keys, in one transaction (Oracle
//!   cannot limit rows in the query block that locks them; see [`OracleDialect`]).
//! - **Schedule-if-not-exists.** A plain `INSERT`; the session reports ORA-00001 as
//!   [`StoreError::Duplicate`](docket_core::StoreError), which the shared store counts as
//!   "already exists". Oracle rolls back only the failed statement, so a batch carries on
//!   past existing keys.
//! - **Times** are `TIMESTAMP(6)` columns holding UTC, bound and read as UTC wall-clock values.
//! - **Booleans** are `NUMBER(1)`; diesel-oci binds `true`/`false` as 1/0.
//! - **Work queue** (migrations `0003_ordering`, `0004_work_queue`): `next_for` reads candidates
//!   without locks, then locks one by key with `FOR UPDATE SKIP LOCKED`; custom keys are read
//!   with `JSON_VALUE ... RETURNING` from a `CLOB` column checked `IS JSON` (a custom order is
//!   indexed by a function-based index on the same expressions); sessions sort with
//!   `NLS_SORT = BINARY`. JSON the check refuses at intake (ORA-02290) is
//!   [`StoreError::RejectedItem`](docket_core::StoreError) naming the item. Intake inserts one
//!   item per statement (no multi-row `VALUES` before 23ai). Golden-tested and parsed only;
//!   not yet run against a server.
//! - **Run time.** The `oracle` crate under diesel-oci loads the Oracle client library (OCI,
//!   e.g. Instant Client) when the first connection opens; building needs no Oracle software.
//!
//! ```no_run
//! use docket_core::StoreConfig;
//! let store = docket_oracle::connect("oracle://docket:secret@127.0.0.1:1521/FREEPDB1", StoreConfig::default())?;
//! docket_oracle::migrate(&store, None)?;
//! # Ok::<(), docket_core::StoreError>(())
//! ```

mod connect;
mod dialect;
mod family;
mod migrate;

pub use connect::{connect, connect_with, OracleConnector, OracleOptions};
pub use dialect::{OracleDialect, TEXT_KEY_BYTES};
pub use family::OracleFamily;
pub use migrate::{migrate, MIGRATIONS};

use docket_core::explain::PlanQuery;

docket_core::backend!(
    OracleBackend,
    "oracle",
    ["oracle"],
    OracleDialect,
    PLAN_QUERY
);

/// How Oracle shows a plan (for `docket explain` and [`docket_core::explain::explain_plan`]):
/// `EXPLAIN PLAN FOR` writes it to the session's `plan_table` (emptied first), and
/// `DBMS_XPLAN.DISPLAY` reads it back. `EXPLAIN PLAN` does not execute the statement, so
/// explaining a claim claims nothing.
pub const PLAN_QUERY: PlanQuery = PlanQuery::Stored {
    clear: "DELETE FROM plan_table",
    prefix: "EXPLAIN PLAN FOR",
    display: "SELECT plan_table_output FROM TABLE(DBMS_XPLAN.DISPLAY())",
};

/// The Oracle store.
pub type OracleStore = docket_core::backend::SqlStore<OracleConnector>;
