//! Recurring schedules: cron (via `croner`), fixed delay, daily at fixed UTC times.

use crate::error::DocketError;
use chrono::{DateTime, NaiveTime, TimeDelta, Utc};
use croner::Cron;
use std::str::FromStr;
use std::time::Duration;

/// When a recurring task runs next.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// A cron expression (5 fields, or 6 with seconds first), evaluated in UTC.
    Cron(Box<Cron>),
    /// A fixed delay after each completion (and after start-up for the first run).
    FixedDelay(Duration),
    /// Every day at each of these UTC times.
    Daily(Vec<NaiveTime>),
}

impl Schedule {
    /// Parses a cron expression; a bad one is [`DocketError::InvalidCron`].
    pub fn cron(expression: &str) -> Result<Self, DocketError> {
        Cron::from_str(expression)
            .map(|c| Schedule::Cron(Box::new(c)))
            .map_err(|e| DocketError::InvalidCron {
                expression: expression.to_owned(),
                reason: e.to_string(),
            })
    }

    /// A fixed delay; it must be positive and at most `chrono`'s range (about 292 million
    /// years).
    pub fn fixed_delay(delay: Duration) -> Result<Self, DocketError> {
        if delay.is_zero() || TimeDelta::from_std(delay).is_err() {
            return Err(DocketError::InvalidConfig(format!(
                "fixed delay must be positive and in range, got {delay:?}"
            )));
        }
        Ok(Schedule::FixedDelay(delay))
    }

    /// Daily at the given UTC times; at least one is needed.
    pub fn daily(times: impl IntoIterator<Item = NaiveTime>) -> Result<Self, DocketError> {
        let mut times: Vec<_> = times.into_iter().collect();
        if times.is_empty() {
            return Err(DocketError::InvalidConfig(
                "a daily schedule needs at least one time".into(),
            ));
        }
        times.sort();
        Ok(Schedule::Daily(times))
    }

    /// The first run time strictly after `after`, or `None` when the schedule has no more runs.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Cron(cron) => cron.find_next_occurrence(&after, false).ok(),
            Schedule::FixedDelay(delay) => TimeDelta::from_std(*delay)
                .ok()
                .and_then(|delay| after.checked_add_signed(delay)),
            Schedule::Daily(times) => {
                let today = after.date_naive();
                [today, today.succ_opt()?]
                    .into_iter()
                    .flat_map(|day| times.iter().map(move |t| day.and_time(*t).and_utc()))
                    .find(|at| *at > after)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 8, h, m, s).unwrap()
    }

    #[test]
    fn cron_fixed_delay_and_daily() {
        let every_5 = Schedule::cron("*/5 * * * *").unwrap();
        assert_eq!(every_5.next_after(at(10, 2, 0)), Some(at(10, 5, 0)));
        assert_eq!(every_5.next_after(at(10, 5, 0)), Some(at(10, 10, 0)));
        let seconds = Schedule::cron("*/10 * * * * *").unwrap();
        assert_eq!(seconds.next_after(at(10, 0, 1)), Some(at(10, 0, 10)));
        let delay = Schedule::fixed_delay(Duration::from_secs(30)).unwrap();
        assert_eq!(delay.next_after(at(1, 0, 0)), Some(at(1, 0, 30)));
        let daily = Schedule::daily([NaiveTime::from_hms_opt(9, 0, 0).unwrap()]).unwrap();
        assert_eq!(daily.next_after(at(8, 0, 0)), Some(at(9, 0, 0)));
        assert_eq!(
            daily.next_after(at(9, 0, 0)),
            Some(Utc.with_ymd_and_hms(2026, 3, 9, 9, 0, 0).unwrap())
        );
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        for bad in ["", "* * *", "61 * * * *", "a b c d e", "*/0 * * * *"] {
            assert!(
                matches!(Schedule::cron(bad), Err(DocketError::InvalidCron { .. })),
                "{bad}"
            );
        }
        assert!(Schedule::fixed_delay(Duration::ZERO).is_err());
        assert!(Schedule::fixed_delay(Duration::MAX).is_err());
        assert!(Schedule::daily([]).is_err());
    }
}
