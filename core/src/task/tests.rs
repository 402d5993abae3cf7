use super::*;
use chrono::TimeZone;

const EMAIL: TaskDescriptor<String> = TaskDescriptor::new("email");

#[test]
fn builder_fills_defaults_and_validates() {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let row = EMAIL
        .instance("1")
        .data("hi".to_owned())
        .into_new_execution(now, Priority::MEDIUM)
        .unwrap();
    assert_eq!((row.execution_time, row.priority), (now, Some(50)));
    assert_eq!(row.task_data.as_deref(), Some(&b"\"hi\""[..]));
    let err = EMAIL
        .instance("")
        .into_new_execution(now, Priority::LOW)
        .unwrap_err();
    assert!(matches!(
        err,
        DocketError::InvalidName {
            what: "instance id",
            ..
        }
    ));
    assert!(Priority::try_from_i64(40_000).is_err());
}

#[test]
fn exponential_backoff_and_max_retries() {
    let p = FailurePolicy::exponential(Duration::from_secs(10), 2.0).max_retries(3);
    assert_eq!(p.delay(1), Some(Duration::from_secs(10)));
    assert_eq!(p.delay(3), Some(Duration::from_secs(40)));
    assert!(!p.gives_up(3) && p.gives_up(4));
    let huge = p.delay(10_000).expect("a delay");
    assert!(
        huge <= Duration::from_secs(3_150_000_000),
        "huge exponents are capped, not overflowing: {huge:?}"
    );
    let odd = FailurePolicy::exponential(Duration::from_secs(1), f64::NAN);
    assert_eq!(odd.delay(2), Some(Duration::ZERO));
}

#[test]
fn task_error_is_an_error_with_its_source() {
    fn parse(text: &str) -> Result<i32, TaskError> {
        Ok(text.parse::<i32>()?)
    }
    let err = parse("x").unwrap_err();
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err.clone());
    assert_eq!(boxed.to_string(), "invalid digit found in string");
    let source = std::error::Error::source(&err).expect("the parse error is kept");
    assert!(source.downcast_ref::<std::num::ParseIntError>().is_some());
    let plain = TaskError::new("smtp down");
    assert_eq!(plain.to_string(), "smtp down");
    assert!(std::error::Error::source(&plain).is_none());
    let wrapped = TaskError::with_source("sending failed", plain);
    assert_eq!(wrapped.message(), "sending failed");
    assert_eq!(
        std::error::Error::source(&wrapped).map(ToString::to_string),
        Some("smtp down".to_owned())
    );
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Mail {
    to: String,
}

fn execution(data: Option<&[u8]>) -> Execution {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    Execution {
        task_data: data.map(<[u8]>::to_vec),
        picked: true,
        ..Execution::new("mail", "7", now)
    }
}

#[test]
fn typed_data_decodes_or_fails_with_a_clear_message() {
    let ok = decode::<Mail>(&execution(Some(br#"{"to":"a@b"}"#))).unwrap();
    assert_eq!(ok, Mail { to: "a@b".into() });
    let bad = decode::<Mail>(&execution(Some(br#"{"too":1}"#))).unwrap_err();
    assert!(
        bad.message().contains("mail/7") && bad.message().contains("Mail"),
        "{bad}"
    );
    assert!(std::error::Error::source(&bad).is_some());
    let missing = decode::<Mail>(&execution(None)).unwrap_err();
    assert!(missing.message().contains("missing"), "{missing}");
    decode::<()>(&execution(None)).expect("no data is unit");
    assert_eq!(decode::<Option<Mail>>(&execution(None)).unwrap(), None);
}

#[test]
fn descriptor_names_need_not_be_static() {
    let tenant = String::from("tenant-42");
    let d: TaskDescriptor<Mail> = TaskDescriptor::named(format!("mail-{tenant}"));
    drop(tenant);
    let instance = d.instance("1");
    assert_eq!(
        (d.name(), instance.task_name()),
        ("mail-tenant-42", "mail-tenant-42")
    );
    let task = Task::typed(d.clone(), |_, _| Ok(()));
    assert_eq!(task.name(), "mail-tenant-42");
}
