//! One due-query's parameters, all three in one place, in the order a poll hands them down:
//!
//! 1. [`DueParams`]: one poll, as the engine asks for it (now, the tasks, how many, how long a
//!    claiming poll may read on);
//! 2. [`Due`]: one statement of that poll at one priority level, as the planner sends it to the
//!    store ([`DueParams::at_level`]): its room, how far due, the keys to leave out;
//! 3. [`DueFilter`]: the part of that statement a dialect writes, its `WHERE` on level, time
//!    and task names ([`Due::filter`]).

use super::ExecutionKey;
use crate::clock::Clock;
use crate::ordering::Level;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// Parameters of the due-queries: one poll.
#[derive(Debug, Clone, Copy)]
pub struct DueParams<'a> {
    /// The clock's now.
    pub now: DateTime<Utc>,
    /// Only these tasks (unknown task names are left alone).
    pub task_names: &'a [String],
    /// At most this many rows.
    pub limit: i64,
    /// A claiming poll (lock-and-fetch) over several priority levels that holds rows stops
    /// reading further levels once it has run this long (the scheduler gives its heartbeat
    /// interval): its rows are stamped when claimed and get heartbeats only once the poll
    /// returns, and over a slow link one poll of every level took longer than the dead
    /// window. `None`: every level is read.
    pub claim_for: Option<Duration>,
    /// The clock a claim reads its stamp (the claimed rows' heartbeat) from as it starts;
    /// `None`: every claim of the poll is stamped `now`.
    pub clock: Option<&'a dyn Clock>,
    /// Whether the limited tasks' due rows are read too (`0009_limits`): for views of what is
    /// due only. A poll leaves them out (`false`): their own claim keeps their limits.
    pub include_limited: bool,
}

impl<'a> DueParams<'a> {
    /// A poll of at most `limit` rows of `task_names` due at `now` that reads every level and
    /// stamps every claim `now` (no `claim_for`, no `clock`).
    pub fn new(now: DateTime<Utc>, task_names: &'a [String], limit: i64) -> Self {
        Self {
            now,
            task_names,
            limit,
            claim_for: None,
            clock: None,
            include_limited: false,
        }
    }

    /// The poll's statement at `level`: at most `room` rows due by `due_by`, leaving out
    /// `exclude`.
    pub fn at_level(
        &self,
        level: Level,
        room: i64,
        due_by: DateTime<Utc>,
        exclude: &'a [ExecutionKey],
    ) -> Due<'a> {
        Due {
            exclude,
            due_by,
            limited: match self.include_limited {
                true => Limited::Included,
                false => Limited::LeftOut,
            },
            ..Due::new(level, self.now, self.task_names, room)
        }
    }
}

/// What a due-query asks for: rows of `task_names` at `level`, due by `due_by`, at most `limit`,
/// leaving out the keys in `exclude` (rows a store holds back, such as poison rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due<'a> {
    /// Which priority level.
    pub level: Level,
    /// The clock's now (the claim time of a claiming due-query).
    pub now: DateTime<Utc>,
    /// Rows due at or before this (`now` unless an aging poll reads a band of older rows).
    pub due_by: DateTime<Utc>,
    /// Only these tasks.
    pub task_names: &'a [String],
    /// At most this many rows.
    pub limit: i64,
    /// Never these rows.
    pub exclude: &'a [ExecutionKey],
    /// The limited tasks (`0009_limits`): left out (the default), included, or claimed.
    pub limited: Limited<'a>,
    /// A claim read task by task: one index range per name of `task_names` (the lag index,
    /// `task_name` first), each up to `limit` rows, merged in hand-out order up to `limit`.
    /// For a claim whose index range of due rows holds many rows of tasks it leaves out (a
    /// limited task's held-back backlog): it reads none of them. Only where the dialect claims
    /// so ([`Capabilities::claims_by_task`](crate::dialect::Capabilities::claims_by_task)),
    /// with the due rows in time order (priority off, no custom order).
    pub by_task: bool,
}

/// What a due-query does with the limited tasks (`0009_limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Limited<'a> {
    /// Leaves them out: every claim but their own, and the scheduler's fetch (whose optimistic
    /// claim checks no limit), since they are claimed by their own claim.
    #[default]
    LeftOut,
    /// Reads them as any other task: views of what is due, which claim nothing.
    Included,
    /// The claim of one limited task, leaving out its keys with no room.
    Claim(LimitedClaim<'a>),
}

/// The claim of one limited task ([`Due::limited`]): its keys with no room left, left out in
/// the statement (the claim checks each row's key again; this only spares reading them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitedClaim<'a> {
    /// Keys with no room left.
    pub full_keys: &'a [String],
    /// Whether executions without a key have no room left.
    pub no_key_full: bool,
}

impl<'a> Due<'a> {
    /// A due-query excluding nothing.
    pub fn new(level: Level, now: DateTime<Utc>, task_names: &'a [String], limit: i64) -> Self {
        Self {
            level,
            now,
            due_by: now,
            task_names,
            limit,
            exclude: &[],
            limited: Limited::LeftOut,
            by_task: false,
        }
    }

    /// The filter a dialect writes for this query, on a table with (or without) the per-level
    /// index.
    pub fn filter(&self, level_index: bool) -> DueFilter<'a> {
        DueFilter {
            level: self.level,
            due_by: self.due_by,
            task_names: self.task_names,
            level_index,
        }
    }
}

/// What a due-query selects, for [`Dialect::due_filter`](crate::dialect::Dialect::due_filter).
#[derive(Debug, Clone, Copy)]
pub struct DueFilter<'a> {
    /// Which priority level.
    pub level: Level,
    /// Rows due at or before this.
    pub due_by: DateTime<Utc>,
    /// Only these tasks.
    pub task_names: &'a [String],
    /// Whether the table has
    /// [`Syntax::due_level_index`](crate::dialect::Syntax::due_level_index).
    pub level_index: bool,
}
