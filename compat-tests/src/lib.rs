//! # docket-compat-tests
//!
//! One compatibility suite, written once against [`harness::Harness`] and instantiated per
//! backend and per priority toggle by [`compat_suite!`], so test names read
//! `postgres::priority_on::due_order_reference`.
//!
//! Servers come from `DOCKET_<BACKEND>_URL`, else a throwaway server started from local binaries
//! ([`servers`]). When neither exists, every test of that backend fails with `NOT RUN: ...`:
//! a missing server is never reported as a pass.

pub mod backends;
pub mod cases;
pub mod cluster;
pub mod db_scheduler;
pub mod faults;
pub mod harness;
pub mod limits_cluster;
pub mod netfault;
pub mod reliability;
pub mod servers;
pub mod statements;
pub mod worker;

pub use harness::{Ctx, DbSchedulerDdl, DbSchedulerTypes, Foreign, Harness, Need, Space, Toggle};

/// Instantiates the whole suite for one harness, once per priority toggle.
#[macro_export]
macro_rules! compat_suite {
    ($harness:expr) => {
        /// The suite with the priority toggle off.
        mod priority_off {
            $crate::compat_cases!($harness, $crate::Toggle::Off);
        }
        /// The suite with the priority toggle on.
        mod priority_on {
            $crate::compat_cases!($harness, $crate::Toggle::On);
        }
    };
}

/// The list of cases, handed to the macro `[$callback]` after `{ $args }`: every function here runs for
/// every backend and toggle (as `#[test]`s through [`compat_cases!`], or as the run-time
/// list [`cases`]).
#[macro_export]
#[doc(hidden)]
macro_rules! with_compat_cases {
    ([$($callback:tt)*] { $($args:tt)* }) => {
        $($callback)*! { { $($args)* }
            crud_round_trip,
            schedule_if_not_exists_and_replace,
            batch_is_all_or_nothing,
            hostile_names_are_data,
            due_order_reference,
            due_order_null_priority_last,
            due_batches_span_levels_in_order,
            many_priority_levels_keep_order,
            level_cache_staleness_is_bounded,
            weighted_priority_serves_every_level,
            aging_priority_serves_old_executions,
            queue_priority_modes_serve_every_level,
            due_excludes_future_and_picked,
            fetch_claim_is_optimistic,
            lock_and_fetch_claims_in_order,
            heartbeat_batch_answers_each_execution,
            complete_batch_is_fenced_per_execution,
            concurrent_fetch_claimers_never_double_claim,
            concurrent_lock_and_fetch_claimers_never_double_claim,
            heartbeat_and_dead_detection,
            own_running_execution_is_not_revived,
            revived_execution_fences_old_owner,
            failed_heartbeat_spares_the_others,
            recurring_runs_repeatedly_and_exists_once,
            retry_backoff_and_max_retries,
            panicking_handler_is_a_failure,
            undeserializable_data_fails_only_that_execution,
            unknown_tasks_are_left_alone,
            summary_and_failing_list,
            timestamps_round_trip,
            schema_with_only_base_migration,
            scheduler_runs_on_every_migration_prefix,
            end_to_end_fetch,
            end_to_end_lock_and_fetch,
            client_wakes_scheduler,
            basic_flow,
            gateway_flow,
            adjudication_flow,
            queue_priority_composes_in_front,
            queue_fifo_by_record_date_then_order,
            queue_concurrent_workers_never_share_items,
            queue_returned_and_abandoned_hide_until_deadline,
            queue_custom_order_two_keys,
            queue_extend_allows_a_third_assignment,
            queue_needs_its_migrations,
            queue_items_are_not_unknown_tasks,
            queue_hostile_input_is_data,
            queue_concurrent_next_for_never_starves,
            queue_bad_input_is_rejected,
            queue_custom_timestamp_key,
            queue_custom_order_converts_text,
            queue_per_assignment_deadlines,
            db_scheduler_table_is_adopted,
            adopting_an_incompatible_table_names_the_column,
            migrating_a_foreign_table_names_adopt,
            poison_rows_never_block_a_poll,
            poll_failures_are_listener_events,
            mixed_fleet_with_db_scheduler_nodes,
            queue_intake_streams_all_or_nothing,
            queue_large_batches_keep_every_byte,
            queue_order_index_serves_the_same_order,
            queue_items_with_assignments_in_one_read,
            queue_unreadable_item_is_listed_in_its_place,
            dead_executions_are_paged,
            dead_detection_reads_past_rows_it_leaves_alone,
            lag_per_task_level_and_task_type,
            paused_task_is_not_claimed_and_resumed_one_is,
            paused_tasks_are_read_in_bounded_pages,
            scheduler_clock_follows_the_server,
            max_running_holds_across_stores_and_frees_slots,
            per_key_limit_never_holds_back_other_keys,
            rate_limit_counts_starts_in_their_window,
            limits_need_their_migration,
            schedulers_run_limited_tasks_to_the_end,
            claim_beside_a_limited_backlog_keeps_time_order,
        }
    };
}

/// One `#[test]` per case for one harness and toggle.
#[macro_export]
#[doc(hidden)]
macro_rules! compat_cases {
    ({ $harness:expr, $toggle:expr } $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::cases::$case(&$harness, $toggle);
            }
        )*
    };
    ($harness:expr, $toggle:expr) => {
        $crate::with_compat_cases!([$crate::compat_cases] { $harness, $toggle });
    };
}

/// A case of the suite: its name and its function.
pub type Case = (&'static str, fn(&dyn Harness, Toggle));

/// Builds [`cases`] from the list.
#[macro_export]
#[doc(hidden)]
macro_rules! case_list {
    ({} $($case:ident),* $(,)?) => {
        vec![$((stringify!($case), $crate::cases::$case as fn(&dyn $crate::Harness, $crate::Toggle))),*]
    };
}

/// Every case of the suite, for a harness chosen at run time (`tests/live.rs`: the SQL Server
/// and Oracle suites run when their URL is set when the tests run, without a rebuild).
pub fn cases() -> Vec<Case> {
    with_compat_cases!([case_list] {})
}
