//! Limits the whole cluster keeps (`0009_limits`): per task, at most n executions running and at
//! most n starts in any window, for the task as a whole and for each key given at scheduling
//! ([`TaskInstance::limit_key`](crate::TaskInstance::limit_key)). One row per limited task in
//! `<table>_limits`; the starts a rate limit counts in `<table>_starts`.

use crate::error::DocketError;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::time::Duration;

/// Longest limit key (the `limit_key` column is `VARCHAR(100)`).
pub const MAX_LIMIT_KEY_LEN: usize = 100;

/// At most `count` starts in any window of length `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Starts allowed per window.
    pub count: u32,
    /// The window.
    pub per: Duration,
}

impl Rate {
    /// How long a start is counted: the window and a margin of a twentieth of it, at most
    /// 50 ms. A start is stamped when claimed and its handler begins a little later (a
    /// thread takes it up); the margin keeps the handlers' own starts, not only the claims,
    /// at most `count` in any window of `per`.
    pub fn counted_for(&self) -> Duration {
        self.per + self.margin()
    }

    /// How late a handler may begin after its claim was counted (the scheduler hands back a
    /// claimed execution that would begin later): a twentieth of the window, at most 50 ms.
    pub fn margin(&self) -> Duration {
        (self.per / 20).min(Duration::from_millis(50))
    }
}

/// The limits of one task, as stored in `<table>_limits` (every scheduler on the table sees the
/// same values). Built with [`TaskLimit::new`] and the setters; a limit left `None` does not
/// apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLimit {
    /// The task.
    pub task_name: String,
    /// At most this many of the task's executions picked at once, across all schedulers.
    pub max_running: Option<u32>,
    /// At most this many of the task's executions start in any window.
    pub rate: Option<Rate>,
    /// At most this many picked at once per key (executions without a key share one count).
    pub max_running_per_key: Option<u32>,
    /// At most this many starts per key in any window.
    pub rate_per_key: Option<Rate>,
}

impl TaskLimit {
    /// No limit yet on `task_name`; add them with the setters.
    pub fn new(task_name: impl Into<String>) -> Self {
        Self {
            task_name: task_name.into(),
            max_running: None,
            rate: None,
            max_running_per_key: None,
            rate_per_key: None,
        }
    }

    /// Never more than `n` of the task's executions picked at once across all schedulers.
    pub fn max_running(mut self, n: u32) -> Self {
        self.max_running = Some(n);
        self
    }

    /// Never more than `n` starts of the task in any window of length `per`.
    pub fn rate_limit(mut self, n: u32, per: Duration) -> Self {
        self.rate = Some(Rate { count: n, per });
        self
    }

    /// Never more than `n` executions of one key picked at once.
    pub fn max_running_per_key(mut self, n: u32) -> Self {
        self.max_running_per_key = Some(n);
        self
    }

    /// Never more than `n` starts of one key in any window of length `per`.
    pub fn rate_limit_per_key(mut self, n: u32, per: Duration) -> Self {
        self.rate_per_key = Some(Rate { count: n, per });
        self
    }

    /// Checks the limit can be stored: a valid task name, at least one limit, each window at
    /// least one millisecond and at most a year, each count at most `i32::MAX`.
    pub fn validate(&self) -> Result<(), DocketError> {
        let bad = |why: String| DocketError::InvalidLimit {
            task: self.task_name.clone(),
            reason: why,
        };
        let name = &self.task_name;
        if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(bad(
                "the task name must be 1 to 100 characters, no control characters".into(),
            ));
        }
        if self.max_running.is_none()
            && self.rate.is_none()
            && self.max_running_per_key.is_none()
            && self.rate_per_key.is_none()
        {
            return Err(bad("no limit given".into()));
        }
        let counts = [
            self.max_running,
            self.max_running_per_key,
            self.rate.map(|r| r.count),
            self.rate_per_key.map(|r| r.count),
        ];
        if counts.into_iter().flatten().any(|n| n > i32::MAX as u32) {
            return Err(bad(format!("a count is above {}", i32::MAX)));
        }
        for rate in [self.rate, self.rate_per_key].into_iter().flatten() {
            if rate.per < Duration::from_millis(1) || rate.per > Duration::from_secs(366 * 86_400) {
                return Err(bad(format!(
                    "a rate window of {:?} (from 1 ms to a year)",
                    rate.per
                )));
            }
        }
        Ok(())
    }

    /// How late after its claim one of its executions may begin: the smallest margin of its
    /// rate limits ([`Rate::margin`]); `None` without a rate limit.
    pub fn start_margin(&self) -> Option<Duration> {
        [self.rate, self.rate_per_key]
            .into_iter()
            .flatten()
            .map(|r| r.margin())
            .min()
    }

    /// The room its task-wide limits (`max_running`, `rate_limit`) leave, given the task's
    /// picked executions and its starts counted in the rate's window; `None` without a
    /// task-wide limit (per-key limits alone bound no task-wide room).
    pub fn task_room(&self, running: i64, started: i64) -> Option<i64> {
        let running_room = self.max_running.map(|n| i64::from(n) - running);
        let rate_room = self.rate.map(|r| i64::from(r.count) - started);
        match (running_room, rate_room) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// How long its starts are counted: the longest of its rate limits'
    /// [`Rate::counted_for`] (`None` without a rate limit).
    pub fn longest_window(&self) -> Option<Duration> {
        [self.rate, self.rate_per_key]
            .into_iter()
            .flatten()
            .map(|r| r.counted_for())
            .max()
    }
}

/// A limit with what it holds now, for the dashboard, `/metrics` and `docket limits list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitUse {
    /// The limit.
    pub limit: TaskLimit,
    /// Executions of the task picked now.
    pub running: i64,
    /// Keys with at least one execution picked now.
    pub running_keys: i64,
    /// Starts in the last window of the task's rate limit (of the per-key one when the task has
    /// none); 0 without a rate limit.
    pub started_in_window: i64,
    /// Due executions of the task waiting (held back while at the limit), counted up to the
    /// cap the caller gave.
    pub due_waiting: i64,
}

/// What a task's limits leave room for in one claim, from what runs and what started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitRoom {
    /// At most this many for the task as a whole.
    pub task: i64,
    /// Per key (`None`: executions without a key) the room left, for keys that have used some;
    /// a key not listed has the full per-key room.
    pub keys: HashMap<Option<String>, i64>,
    /// The per-key room of a key with nothing running and nothing started (`None`: no per-key
    /// limit).
    pub per_key: Option<i64>,
}

impl LimitRoom {
    /// The room `limit` leaves at `now`, for a claim of at most `want`, given the task's picked
    /// executions per key (`running`) and its recent starts (`starts`, any order).
    pub fn new(
        limit: &TaskLimit,
        want: i64,
        now: DateTime<Utc>,
        running: &[(Option<String>, i64)],
        starts: &[(Option<String>, DateTime<Utc>)],
    ) -> Self {
        let in_window = |rate: Rate, key: Option<&Option<String>>| {
            let counted = chrono::Duration::from_std(rate.counted_for());
            let since = now - counted.unwrap_or(chrono::Duration::MAX);
            starts
                .iter()
                .filter(|(k, at)| *at > since && key.is_none_or(|key| k == key))
                .count() as i64
        };
        let mut task = want;
        if let Some(n) = limit.max_running {
            task = task.min(i64::from(n) - running.iter().map(|(_, c)| c).sum::<i64>());
        }
        if let Some(rate) = limit.rate {
            task = task.min(i64::from(rate.count) - in_window(rate, None));
        }
        let per_key = match (limit.max_running_per_key, limit.rate_per_key) {
            (None, None) => None,
            (a, b) => Some(
                [a, b.map(|r| r.count)]
                    .into_iter()
                    .flatten()
                    .map(i64::from)
                    .min()
                    .unwrap_or(0),
            ),
        };
        let mut keys = HashMap::new();
        if per_key.is_some() {
            let used = running
                .iter()
                .map(|(k, _)| k)
                .chain(starts.iter().map(|(k, _)| k));
            for key in used {
                if keys.contains_key(key) {
                    continue;
                }
                let mut room = i64::MAX;
                if let Some(n) = limit.max_running_per_key {
                    let now_running: i64 = running
                        .iter()
                        .filter(|(k, _)| k == key)
                        .map(|(_, c)| c)
                        .sum();
                    room = room.min(i64::from(n) - now_running);
                }
                if let Some(rate) = limit.rate_per_key {
                    room = room.min(i64::from(rate.count) - in_window(rate, Some(key)));
                }
                keys.insert(key.clone(), room.max(0));
            }
        }
        Self {
            task: task.max(0),
            keys,
            per_key,
        }
    }

    /// The keys with no room left (a claim leaves them out in its statement), and whether
    /// executions without a key have none.
    pub fn full_keys(&self) -> (Vec<String>, bool) {
        let mut full = Vec::new();
        let mut no_key_full = false;
        for (key, room) in &self.keys {
            if *room > 0 {
                continue;
            }
            match key {
                Some(k) => full.push(k.clone()),
                None => no_key_full = true,
            }
        }
        full.sort();
        (full, no_key_full)
    }

    /// Takes one slot for an execution of `key` if there is room; `false` otherwise.
    pub fn take(&mut self, key: &Option<String>) -> bool {
        if self.task <= 0 {
            return false;
        }
        if let Some(per_key) = self.per_key {
            let room = self.keys.entry(key.clone()).or_insert(per_key);
            if *room <= 0 {
                return false;
            }
            *room -= 1;
        }
        self.task -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).expect("in range")
    }

    #[test]
    fn task_room_counts_running_and_the_window() {
        let limit = TaskLimit::new("t")
            .max_running(3)
            .rate_limit(5, Duration::from_secs(1));
        let running = [(None, 1), (Some("a".to_owned()), 1)];
        let room = LimitRoom::new(&limit, 10, at(2_000), &running, &[]);
        assert_eq!(room.task, 1, "3 minus 2 running");
        // Four starts in the last second and its 50 ms margin (one at exactly the start of
        // that is out of it).
        let starts: Vec<_> = [950, 951, 1_500, 1_999, 2_000]
            .into_iter()
            .map(|ms| (None, at(ms)))
            .collect();
        let room = LimitRoom::new(&limit, 10, at(2_000), &[], &starts);
        assert_eq!(room.task, 1, "5 minus the 4 starts after 950 ms");
        assert_eq!(LimitRoom::new(&limit, 0, at(2_000), &[], &[]).task, 0);
    }

    #[test]
    fn per_key_room_is_taken_key_by_key() {
        let limit = TaskLimit::new("t").max_running_per_key(1);
        let running = [(Some("busy".to_owned()), 1)];
        let mut room = LimitRoom::new(&limit, 10, at(0), &running, &[]);
        assert_eq!(room.full_keys(), (vec!["busy".to_owned()], false));
        assert!(!room.take(&Some("busy".to_owned())));
        assert!(room.take(&Some("idle".to_owned())));
        assert!(!room.take(&Some("idle".to_owned())), "one per key");
        assert!(room.take(&None), "no key: one count of its own");
        assert!(!room.take(&None));
        assert_eq!(room.task, 8);
    }

    #[test]
    fn validation_names_what_is_wrong() {
        assert!(TaskLimit::new("t").validate().is_err(), "no limit");
        assert!(TaskLimit::new("t")
            .rate_limit(1, Duration::ZERO)
            .validate()
            .is_err());
        assert!(TaskLimit::new("t").max_running(0).validate().is_ok());
        assert!(TaskLimit::new("").max_running(1).validate().is_err());
    }
}
