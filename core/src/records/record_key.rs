//! The FIFO keys in their JSON form: `{"hitOrder": 1, "hitOrderDate": "2020-03-11T10:15:55.935"}`.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Record order and record date of an item (the FIFO keys). Serialized as
/// `{"hitOrder": 1, "hitOrderDate": "2020-03-11T10:15:55.935"}`: the date is UTC, written with
/// milliseconds and no zone; on input milliseconds are optional and a `Z` or offset is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RecordKey {
    /// Record date (compared first).
    #[serde(
        rename = "hitOrderDate",
        serialize_with = "write_date",
        deserialize_with = "read_date"
    )]
    pub date: DateTime<Utc>,
    /// The record's number in its batch, 1-based.
    #[serde(rename = "hitOrder")]
    pub order: i64,
}

/// The output form of a record date: `YYYY-MM-DDThh:mm:ss.sss` (UTC).
pub fn format_record_date(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3f").to_string()
}

/// Parses a record date: ISO-8601 `YYYY-MM-DDThh:mm:ss[.fff]` (UTC), or RFC 3339 with a `Z` or
/// an offset (converted to UTC). The error says what was expected.
pub fn parse_record_date(value: &str) -> Result<DateTime<Utc>, String> {
    let value = value.trim();
    let parsed = match DateTime::parse_from_rfc3339(value) {
        Ok(t) => Some(t.with_timezone(&Utc)),
        Err(_) => NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%S%.f")
            .ok()
            .map(|t| t.and_utc()),
    };
    // Four-digit years only: every backend stores them, and their text sorts as time.
    parsed
        .filter(|t| (1000..=9999).contains(&chrono::Datelike::year(t)))
        .ok_or_else(|| {
            format!(
                "{value:?} is not a date of the form YYYY-MM-DDThh:mm:ss[.sss] \
                 (years 1000 to 9999)"
            )
        })
}

fn write_date<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_record_date(*t))
}

fn read_date<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let text = String::deserialize(d)?;
    parse_record_date(&text).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn json_form_round_trips() {
        let key: RecordKey =
            serde_json::from_str(r#"{"hitOrder": 1, "hitOrderDate": "2020-03-11T10:15:55.935"}"#)
                .unwrap();
        let expected = Utc.with_ymd_and_hms(2020, 3, 11, 10, 15, 55).unwrap()
            + chrono::Duration::milliseconds(935);
        assert_eq!(
            key,
            RecordKey {
                date: expected,
                order: 1
            }
        );
        assert_eq!(
            serde_json::to_string(&key).unwrap(),
            r#"{"hitOrderDate":"2020-03-11T10:15:55.935","hitOrder":1}"#
        );
        let no_millis: RecordKey =
            serde_json::from_str(r#"{"hitOrder": 2, "hitOrderDate": "2020-03-11T10:15:55"}"#)
                .unwrap();
        assert_eq!(
            no_millis.date,
            expected - chrono::Duration::milliseconds(935)
        );
    }

    #[test]
    fn bad_dates_are_rejected() {
        for bad in [
            "",
            "2020-13-01T00:00:00",
            "2020-03-11",
            "yesterday",
            "2020-03-11T25:00:00",
            "+10000-01-01T00:00:00",
            "0999-01-01T00:00:00",
            "10000-01-01T00:00:00Z",
        ] {
            assert!(parse_record_date(bad).is_err(), "{bad:?}");
        }
        assert!(parse_record_date("2020-03-11T10:15:55Z").is_ok());
    }
}
