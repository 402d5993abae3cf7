//! Intake: the one resolver that turns records into validated item rows, for typed batches
//! and CSV files alike (see [`Intake`]), and the public name rules of the work queue.

use super::{after, normalize_attributes, to_millis, NewItem, Record, RecordKey, MAX_WORKER_LEN};
use crate::error::{DocketError, Result};
use crate::ordering::PrimaryOrder;
use crate::store::ExecutionKey;
use crate::task::{validate_key, validate_name, MAX_INSTANCE_ID_LEN};
use chrono::{DateTime, Utc};
use serde_json::Value as Json;

/// Longest batch name: leaves room for `/<row>` within the item id's 250 characters.
pub const MAX_BATCH_NAME_LEN: usize = MAX_INSTANCE_ID_LEN - 21;

/// The batch id used when none is given: the start time, compactly, e.g.
/// `20261130T131727.123Z` (UTC, milliseconds).
pub fn default_batch_id(started: DateTime<Utc>) -> String {
    started.format("%Y%m%dT%H%M%S%.3fZ").to_string()
}

/// Validates a worker name as the assignments table stores it: not empty, at most
/// [`MAX_WORKER_LEN`] characters, no control characters. The error is
/// [`DocketError::InvalidName`] with `what` = `"worker"`.
pub fn validate_worker(worker: &str) -> Result<()> {
    validate_name("worker", worker, MAX_WORKER_LEN)
}

/// Why [`Intake::resolve`] refused a record. Nothing of the record was resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The item id is not a valid instance id.
    #[error("invalid item id {id:?}: {reason}")]
    Id {
        /// The rejected id.
        id: String,
        /// Why (as [`DocketError::InvalidName`] says it).
        reason: &'static str,
    },
    /// An attribute could not be normalized for the task type's custom order.
    #[error("item {item}: attribute {name}: {reason}")]
    Attribute {
        /// Item id.
        item: String,
        /// The attribute.
        name: String,
        /// Why.
        reason: String,
    },
    /// The record arrives after year 9999.
    #[error("item {item}: it arrives after year 9999")]
    TooLate {
        /// Item id.
        item: String,
    },
}

/// The typed API's form: [`DocketError::InvalidName`] for an id, [`DocketError::InvalidItem`]
/// otherwise.
impl From<Rejection> for DocketError {
    fn from(rejection: Rejection) -> Self {
        match rejection {
            Rejection::Id { id, reason } => DocketError::InvalidName {
                what: "instance id",
                value: id,
                reason,
            },
            Rejection::Attribute { item, name, reason } => DocketError::InvalidItem {
                item,
                reason: format!("attribute {name}: {reason}"),
            },
            Rejection::TooLate { item } => DocketError::InvalidItem {
                item,
                reason: "it arrives after year 9999".to_owned(),
            },
        }
    }
}

/// Resolves the records of one batch into item rows, in order: the one intake resolver, used by
/// typed [`Batch`](super::Batch)es ([`WorkQueue::resolve_at`](super::WorkQueue::resolve_at))
/// and CSV files (`queue::csv`, feature `csv`) alike.
///
/// [`Intake::new`] checks the batch's arguments once (task type, `max_assignments`, batch
/// name) and truncates its start time to milliseconds; [`Intake::resolve`] then takes one
/// [`Record`] at a time: it numbers the records (the record order, 1-based), checks the item
/// id, fills a missing record date with the start time, and normalizes the attributes for the
/// task type's custom order ([`normalize_attributes`](super::normalize_attributes)). A record
/// it refuses is a [`Rejection`]; the typed API turns it into a [`DocketError`] ([`From`]),
/// CSV intake into an error naming the line and column.
#[derive(Debug, Clone, PartialEq)]
pub struct Intake {
    task_type: String,
    max_assignments: i32,
    batch_id: String,
    started: DateTime<Utc>,
    order: PrimaryOrder,
    numbered: i64,
}

impl Intake {
    /// A batch of `task_type` items with `max_assignments` each (>= 1), named `batch` (default:
    /// [`default_batch_id`] of `started`; at most [`MAX_BATCH_NAME_LEN`] characters), started
    /// at `started` (truncated to milliseconds), for a task type in `order`.
    pub fn new(
        task_type: &str,
        max_assignments: i32,
        batch: Option<&str>,
        started: DateTime<Utc>,
        order: PrimaryOrder,
    ) -> Result<Self> {
        if max_assignments < 1 {
            return Err(DocketError::InvalidConfig(format!(
                "max_assignments must be at least 1, got {max_assignments}"
            )));
        }
        validate_key(task_type, "0")?;
        let started = to_millis(started);
        let batch_id = match batch {
            Some(name) => {
                validate_name("batch name", name, MAX_BATCH_NAME_LEN)?;
                name.to_owned()
            }
            None => default_batch_id(started),
        };
        Ok(Self {
            task_type: task_type.to_owned(),
            max_assignments,
            batch_id,
            started,
            order,
            numbered: 0,
        })
    }

    /// The task type.
    pub fn task_type(&self) -> &str {
        &self.task_type
    }

    /// The batch id (given, or the default from the start time).
    pub fn batch_id(&self) -> &str {
        &self.batch_id
    }

    /// The batch's start time (to milliseconds).
    pub fn started(&self) -> DateTime<Utc> {
        self.started
    }

    /// How many records have been numbered (resolved or rejected) so far.
    pub fn numbered(&self) -> u64 {
        self.numbered.unsigned_abs()
    }

    /// The id for the next record when it brings none: `<batch id>/<its record order>`.
    pub fn default_id(&self) -> String {
        format!("{}/{}", self.batch_id, self.numbered + 1)
    }

    /// Resolves the next record: its record order is one more than the last one's (rejected
    /// records take their number too), its arrival is the start time plus `arrives_after`, a
    /// missing record date is the start time, times are truncated to milliseconds, and the
    /// attributes are normalized (JSON `null` dropped, custom keys converted).
    pub fn resolve(&mut self, record: Record) -> std::result::Result<NewItem, Rejection> {
        self.numbered += 1;
        let Record {
            id,
            data,
            arrives_after,
            record_date,
            mut attributes,
            priority,
        } = record;
        if let Err(DocketError::InvalidName { reason, .. }) =
            validate_name("instance id", &id, MAX_INSTANCE_ID_LEN)
        {
            return Err(Rejection::Id { id, reason });
        }
        if let Err((name, reason)) = normalize_attributes(&self.order, &mut attributes) {
            return Err(Rejection::Attribute {
                item: id,
                name,
                reason,
            });
        }
        let Some(available_at) = after(self.started, arrives_after.unwrap_or_default()) else {
            return Err(Rejection::TooLate { item: id });
        };
        Ok(NewItem {
            key: ExecutionKey::new(&self.task_type, id),
            data,
            available_at,
            record: RecordKey {
                order: self.numbered,
                date: record_date.map(to_millis).unwrap_or(self.started),
            },
            custom_attributes: (!attributes.is_empty())
                .then(|| Json::Object(attributes).to_string()),
            max_assignments: self.max_assignments,
            priority,
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::ordering::{CustomKey, Direction, KeyType};
    use chrono::TimeZone;
    use serde_json::json;
    use std::time::Duration;

    /// A batch start with microseconds (CSV intake's tests use it too).
    pub(in crate::queue) fn started() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 13, 17, 27).unwrap()
            + chrono::Duration::microseconds(123_456)
    }

    fn fifo(batch: Option<&str>) -> Intake {
        Intake::new("label", 2, batch, started(), PrimaryOrder::Fifo).unwrap()
    }

    fn attributes(value: Json) -> serde_json::Map<String, Json> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn records_are_numbered_dated_and_truncated() {
        let mut intake = fifo(Some("monday"));
        let millis = Utc.with_ymd_and_hms(2026, 11, 30, 13, 17, 27).unwrap()
            + chrono::Duration::milliseconds(123);
        assert_eq!(intake.started(), millis);
        assert_eq!(intake.batch_id(), "monday");
        assert_eq!(intake.default_id(), "monday/1");
        let dated = Utc.with_ymd_and_hms(2020, 3, 11, 10, 15, 55).unwrap()
            + chrono::Duration::microseconds(935_999);
        let first = intake
            .resolve(Record {
                data: Some(b"x".to_vec()),
                record_date: Some(dated),
                priority: Some(7),
                arrives_after: Some(Duration::from_secs(60)),
                attributes: attributes(json!({"note": "a", "gone": null})),
                ..Record::new("a")
            })
            .unwrap();
        assert_eq!(
            first,
            NewItem {
                key: ExecutionKey::new("label", "a"),
                data: Some(b"x".to_vec()),
                available_at: millis + chrono::Duration::seconds(60),
                record: RecordKey {
                    order: 1,
                    date: dated - chrono::Duration::microseconds(999),
                },
                custom_attributes: Some(r#"{"note":"a"}"#.to_owned()),
                max_assignments: 2,
                priority: Some(7),
            }
        );
        assert_eq!(intake.default_id(), "monday/2");
        let second = intake.resolve(Record::new("b")).unwrap();
        assert_eq!(
            second.record,
            RecordKey {
                order: 2,
                date: millis
            }
        );
        assert_eq!(second.available_at, millis);
        assert_eq!(second.custom_attributes, None);
        assert_eq!(intake.numbered(), 2);
    }

    #[test]
    fn the_default_batch_id_is_the_start_time() {
        let intake = fifo(None);
        assert_eq!(intake.batch_id(), "20261130T131727.123Z");
        assert_eq!(intake.default_id(), "20261130T131727.123Z/1");
        assert_eq!(intake.task_type(), "label");
    }

    #[test]
    fn bad_records_are_rejected_and_keep_their_number() {
        let mut intake = Intake::new(
            "label",
            1,
            None,
            started(),
            PrimaryOrder::Custom(vec![CustomKey::new(
                "score",
                KeyType::Number,
                Direction::Desc,
            )
            .unwrap()]),
        )
        .unwrap();
        let long = "x".repeat(MAX_INSTANCE_ID_LEN + 1);
        assert_eq!(
            intake.resolve(Record::new(long.clone())),
            Err(Rejection::Id {
                id: long,
                reason: "too long"
            })
        );
        assert_eq!(
            intake.resolve(Record::new("")),
            Err(Rejection::Id {
                id: String::new(),
                reason: "must not be empty"
            })
        );
        let bad = Record {
            attributes: attributes(json!({"score": "lots"})),
            ..Record::new("bad")
        };
        assert_eq!(
            intake.resolve(bad),
            Err(Rejection::Attribute {
                item: "bad".to_owned(),
                name: "score".to_owned(),
                reason: "not a number".to_owned(),
            })
        );
        let far = Record {
            arrives_after: Some(Duration::from_secs(10_000 * 366 * 24 * 3600)),
            ..Record::new("far")
        };
        assert_eq!(
            intake.resolve(far),
            Err(Rejection::TooLate {
                item: "far".to_owned()
            })
        );
        let good = Record {
            attributes: attributes(json!({"score": " 12 "})),
            ..Record::new("good")
        };
        let good = intake.resolve(good).unwrap();
        assert_eq!(good.record.order, 5);
        assert_eq!(good.custom_attributes.as_deref(), Some(r#"{"score":12}"#));
    }

    #[test]
    fn rejections_become_the_typed_api_errors() {
        let err = DocketError::from(Rejection::Id {
            id: String::new(),
            reason: "must not be empty",
        });
        assert!(
            matches!(&err, DocketError::InvalidName { what: "instance id", value, reason: "must not be empty" } if value.is_empty()),
            "{err:?}"
        );
        let err = DocketError::from(Rejection::Attribute {
            item: "bad".to_owned(),
            name: "score".to_owned(),
            reason: "not a number".to_owned(),
        });
        assert!(
            matches!(&err, DocketError::InvalidItem { item, reason } if item == "bad" && reason == "attribute score: not a number"),
            "{err:?}"
        );
        let err = DocketError::from(Rejection::TooLate {
            item: "far".to_owned(),
        });
        assert!(
            matches!(&err, DocketError::InvalidItem { item, reason } if item == "far" && reason == "it arrives after year 9999"),
            "{err:?}"
        );
    }

    #[test]
    fn arguments_are_checked_once() {
        let new = |task: &str, max: i32, batch: Option<&str>| {
            Intake::new(task, max, batch, started(), PrimaryOrder::Fifo)
        };
        let r = new("t", 0, None);
        assert!(
            matches!(&r, Err(DocketError::InvalidConfig(m)) if m == "max_assignments must be at least 1, got 0"),
            "{r:?}"
        );
        let r = new("", 1, None);
        assert!(
            matches!(
                &r,
                Err(DocketError::InvalidName {
                    what: "task name",
                    ..
                })
            ),
            "{r:?}"
        );
        let long = "b".repeat(MAX_BATCH_NAME_LEN + 1);
        let r = new("t", 1, Some(&long));
        assert!(
            matches!(
                &r,
                Err(DocketError::InvalidName {
                    what: "batch name",
                    reason: "too long",
                    ..
                })
            ),
            "{r:?}"
        );
        // The longest name leaves room for any record order in a default id.
        let longest = "b".repeat(MAX_BATCH_NAME_LEN);
        assert!(new("t", 1, Some(&longest)).is_ok());
        let id = format!("{longest}/{}", i64::MAX);
        assert!(validate_name("instance id", &id, MAX_INSTANCE_ID_LEN).is_ok());
    }

    #[test]
    fn worker_names() {
        assert!(validate_worker("w1").is_ok());
        assert!(validate_worker(&"w".repeat(MAX_WORKER_LEN)).is_ok());
        for (bad, why) in [
            ("", "must not be empty"),
            ("a\tb", "must not contain control characters"),
        ] {
            let r = validate_worker(bad);
            assert!(
                matches!(&r, Err(DocketError::InvalidName { what: "worker", reason, .. }) if *reason == why),
                "{r:?}"
            );
        }
        let r = validate_worker(&"w".repeat(MAX_WORKER_LEN + 1));
        assert!(
            matches!(
                &r,
                Err(DocketError::InvalidName {
                    what: "worker",
                    reason: "too long",
                    ..
                })
            ),
            "{r:?}"
        );
    }
}
