use super::*;
use crate::dialect::Ansi;
use std::collections::HashSet;

#[test]
fn catalogue_names_are_unique_and_binds_match_placeholders() {
    for policy in [
        OrderingPolicy::execution_time(),
        OrderingPolicy::priority_then_execution_time(),
    ] {
        let s = Statements::new(&Ansi, TableName::default(), policy);
        let catalogue = s.catalogue();
        let names: HashSet<_> = catalogue.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), catalogue.len());
        for (name, r) in &catalogue {
            assert_eq!(r.sql.matches('?').count(), r.binds.len(), "{name}");
        }
    }
}

#[test]
fn batch_statements_bind_what_they_say() {
    for policy in [
        OrderingPolicy::execution_time(),
        OrderingPolicy::priority_then_execution_time(),
    ] {
        let s = Statements::new(&Ansi, TableName::default(), policy);
        let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0).unwrap();
        let rows: Vec<_> = (0..3)
            .map(|i| NewExecution {
                task_name: "t".into(),
                task_instance: i.to_string(),
                task_data: None,
                execution_time: now,
                priority: Some(1),
                limit_key: None,
            })
            .collect();
        let insert = s.insert_many(&rows);
        // Without limit keys the statement does not name `limit_key`: one bind less per row
        // than the room kept for it.
        assert_eq!(insert.binds.len(), 3 * (s.insert_binds_per_row() - 1));
        assert_eq!(insert.sql.matches("), (").count(), 2, "{}", insert.sql);
        assert!(!insert.sql.contains("limit_key"));
        // One row with a key: every row binds it (NULL for the others).
        let mut keyed = rows.clone();
        keyed[1].limit_key = Some("customer-1".into());
        let insert = s.insert_many(&keyed);
        assert_eq!(insert.binds.len(), 3 * s.insert_binds_per_row());
        assert!(insert.sql.contains("limit_key"), "{}", insert.sql);
    }
}

#[test]
fn update_versions_sets_shared_values_once_and_differing_ones_per_row() {
    let s = Statements::new(
        &Ansi,
        TableName::default(),
        OrderingPolicy::execution_time(),
    );
    let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0).unwrap();
    let (a, b) = (ExecutionKey::new("t", "1"), ExecutionKey::new("t", "2"));
    let release = |at, failures| Changes {
        pick: Some(PickChange::Release),
        execution_time: Some(at),
        consecutive_failures: Some(failures),
        ..Changes::default()
    };
    let (ca, cb) = (
        release(now, 0),
        release(now + chrono::Duration::minutes(1), 0),
    );
    let r = s.update_versions(&[(&a, 3, &ca), (&b, 4, &cb)]);
    assert_eq!(
        r.sql,
        "UPDATE \"scheduled_tasks\" SET picked = ?, picked_by = ?, last_heartbeat = ?, \
         execution_time = CASE WHEN (task_name = ? AND task_instance = ?) THEN ? \
         WHEN (task_name = ? AND task_instance = ?) THEN ? ELSE execution_time END, \
         consecutive_failures = ?, version = version + 1 WHERE \
         (task_name = ? AND task_instance IN (?, ?) AND version = CASE task_instance \
         WHEN ? THEN ? WHEN ? THEN ? END)"
    );
    assert_eq!(r.binds.len(), 17);
    assert_eq!(r.binds[13], Value::from("1"));
    assert_eq!(r.binds[14], Value::BigInt(3));
    // Keys grouped by task name, in the order each name first appears.
    let c = ExecutionKey::new("u", "1");
    let d = s.delete_versions(&[(&a, 3), (&c, 5), (&b, 4)]);
    assert_eq!(
        d.sql,
        "DELETE FROM \"scheduled_tasks\" WHERE (task_name = ? AND task_instance IN (?, ?) AND \
         version = CASE task_instance WHEN ? THEN ? WHEN ? THEN ? END) OR (task_name = ? AND \
         task_instance = ? AND version = ?)"
    );
    assert_eq!(
        d.binds,
        ["t", "1", "2", "1"]
            .map(Value::from)
            .into_iter()
            .chain([Value::BigInt(3), Value::from("2"), Value::BigInt(4)])
            .chain([Value::from("u"), Value::from("1"), Value::BigInt(5)])
            .collect::<Vec<_>>()
    );
}

#[test]
fn priority_off_catalogue_never_names_priority_outside_the_column_check() {
    let s = Statements::new(
        &Ansi,
        TableName::default(),
        OrderingPolicy::execution_time(),
    );
    for (name, r) in s.catalogue() {
        if name != "column_exists" {
            assert!(!r.sql.contains("priority"), "{name}: {}", r.sql);
        }
    }
}
