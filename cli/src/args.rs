//! The arguments several subcommands share (where the table lives, a task type, a custom
//! order) and their parsers: one module below `main`, imported by each subcommand.

use docket_core::{OrderingPolicy, StoreConfig, TableName};

/// Where the docket table lives; shared by the commands that open a database.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Target {
    /// Database URL: postgres://USER@HOST/DB (or postgresql://) or sqlite://PATH.
    #[arg(long, value_name = "URL")]
    pub(crate) database_url: String,
    /// The executions table, optionally schema-qualified.
    #[arg(long, value_name = "TABLE", default_value = TableName::DEFAULT, value_parser = parse_table)]
    pub(crate) table: TableName,
}

/// Where a work-queue task type's items live: the table and the task type, shared by the
/// commands that work on one type (`enqueue`, `index`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TypeTarget {
    #[command(flatten)]
    pub(crate) target: Target,
    /// The work-queue task type.
    #[arg(long, value_name = "TASK")]
    pub(crate) task: String,
}

/// A work-queue task type's order, shared by `enqueue` (which normalizes attributes for it)
/// and `queue --worker` (which lists in it).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OrderArg {
    /// Custom order instead of FIFO: comma-separated `attribute[:text|number|timestamp[:asc|desc]]`,
    /// e.g. `team,score:number:desc` (missing attributes sort last).
    #[arg(long, value_name = "KEYS", value_parser = parse_order)]
    pub(crate) order: Option<docket_core::PrimaryOrder>,
}

impl OrderArg {
    /// The queue settings: this order for `task`, FIFO for the others.
    pub(crate) fn config(&self, task: &str) -> docket_core::QueueConfig {
        let mut config = docket_core::QueueConfig::default();
        if let Some(order) = &self.order {
            config.orders.insert(task.to_owned(), order.clone());
        }
        config
    }
}

pub(crate) fn parse_order(value: &str) -> Result<docket_core::PrimaryOrder, String> {
    docket_core::PrimaryOrder::parse_custom(value).map_err(|e| e.to_string())
}

/// Validates `--table` (nothing unvalidated ever reaches SQL).
pub(crate) fn parse_table(value: &str) -> Result<TableName, String> {
    TableName::parse(value).map_err(|e| e.to_string())
}

/// The store configuration for a table and priority toggle.
pub(crate) fn store_config(table: &TableName, priority: bool) -> StoreConfig {
    StoreConfig {
        table: table.clone(),
        ordering: OrderingPolicy {
            priority,
            ..OrderingPolicy::default()
        },
    }
}
