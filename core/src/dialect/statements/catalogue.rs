//! Schema queries (columns, indexes) and the catalogue of every statement, for tooling and
//! golden tests.

use super::*;

impl Statements<'_> {
    /// One row if `column` exists on the table, none otherwise.
    pub fn column_exists(&self, column: &str) -> Rendered {
        let mut w = self.writer();
        self.dialect
            .catalog(&mut w, &self.table, Catalog::ColumnExists(column));
        w.finish()
    }

    /// One row if the index `index` exists on the table, none otherwise.
    pub fn index_exists(&self, index: &str) -> Rendered {
        let mut w = self.writer();
        self.dialect
            .catalog(&mut w, &self.table, Catalog::IndexExists(index));
        w.finish()
    }

    /// Every statement this renderer can emit, each rendered once with fixed sample arguments
    /// (now = 2026-01-01T00:00:00Z, tasks `report` and `email`, limit 10, claimer `node-1`),
    /// under a stable name. For tooling (`docket explain --all`) and golden tests: the list and
    /// its order only grow, so a backend's golden file stays comparable across versions.
    pub fn catalogue(&self) -> Vec<(&'static str, Rendered)> {
        let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or_default();
        let later = now + chrono::Duration::minutes(5);
        let tasks = ["report".to_owned(), "email".to_owned()];
        let key = ExecutionKey::new("report", "1");
        let keys = [key.clone(), ExecutionKey::new("email", "7")];
        let new = NewExecution {
            task_name: "report".into(),
            task_instance: "1".into(),
            task_data: Some(b"{}".to_vec()),
            execution_time: now,
            priority: Some(90),
            limit_key: None,
        };
        let claim = Changes {
            pick: Some(PickChange::Claim {
                by: "node-1".into(),
                at: now,
            }),
            ..Changes::default()
        };
        let reschedule = Changes {
            pick: Some(PickChange::Release),
            execution_time: Some(later),
            last_success: Some(now),
            consecutive_failures: Some(0),
            ..Changes::default()
        };
        let failure = Changes {
            pick: Some(PickChange::Release),
            execution_time: Some(later),
            last_failure: Some(now),
            consecutive_failures: Some(3),
            ..Changes::default()
        };
        let client = Changes {
            execution_time: Some(later),
            data: Some(Some(b"{}".to_vec())),
            priority: Some(Some(50)),
            ..Changes::default()
        };
        let filter = ListFilter {
            task_name: Some("report".into()),
            picked: Some(false),
            failing_only: true,
            limit: Some(10),
        };
        // With priority on, stores send the per-level forms (see `Level`); the single ordered
        // statement (`Level::Any`) is what they fall back to past `MAX_PROBED_LEVELS`.
        let forms: &[(Level, [&'static str; 3])] = if self.policy.priority {
            &[
                (Level::Any, ["due", "due_for_update", "lock_and_fetch"]),
                (
                    Level::Exactly(50),
                    [
                        "due_at_level",
                        "due_for_update_at_level",
                        "lock_and_fetch_at_level",
                    ],
                ),
                (
                    Level::Null,
                    [
                        "due_null_level",
                        "due_for_update_null_level",
                        "lock_and_fetch_null_level",
                    ],
                ),
            ]
        } else {
            &[(Level::Any, ["due", "due_for_update", "lock_and_fetch"])]
        };
        let second = NewExecution {
            task_name: "email".into(),
            task_instance: "7".into(),
            task_data: None,
            priority: None,
            limit_key: None,
            ..new.clone()
        };
        let mut all = vec![
            ("insert", self.insert(&new)),
            (
                "insert_many",
                self.insert_many(&[new.clone(), second.clone()]),
            ),
            (
                "insert_many_new",
                self.insert_many_new(&[new.clone(), second]),
            ),
            ("get", self.get(&key)),
        ];
        if self.policy.priority {
            all.push(("priority_levels", self.priority_levels(None)));
            all.push(("priority_levels_below", self.priority_levels(Some(5))));
        }
        for (level, [due, for_update, lock]) in forms {
            all.push((*due, self.due(&Due::new(*level, now, &tasks, 10))));
            all.push((
                *for_update,
                self.due_for_update(&Due::new(*level, now, &tasks, 10)),
            ));
            all.push((
                *lock,
                self.lock_and_fetch(&Due::new(*level, now, &tasks, 10), "node-1"),
            ));
        }
        all.extend([
            ("claim_keys", self.claim_keys(&keys, "node-1", now)),
            ("update_claim", self.update(&key, Guard::Version(1), &claim)),
            (
                "update_reschedule",
                self.update(&key, Guard::Version(2), &reschedule),
            ),
            ("update_client", self.update(&key, Guard::Unpicked, &client)),
            ("heartbeat", self.heartbeat(&key, 2, now)),
            (
                "heartbeat_versions",
                self.heartbeat_versions(&[(&keys[0], 2), (&keys[1], 5)], now),
            ),
            (
                "picked_at_versions",
                self.picked_at_versions(&[(&keys[0], 2), (&keys[1], 5)]),
            ),
            ("delete", self.delete(&key, Guard::Version(2))),
            (
                "delete_versions",
                self.delete_versions(&[(&keys[0], 2), (&keys[1], 5)]),
            ),
            (
                "update_versions",
                self.update_versions(&[(&keys[0], 2, &reschedule), (&keys[1], 5, &failure)]),
            ),
            ("dead", self.dead(now)),
            (
                "dead_page_first",
                self.dead_page(&DeadPage::first(now, 100)),
            ),
            (
                "dead_page_after",
                self.dead_page(&DeadPage {
                    task_name: Some("email".into()),
                    after: Some((now, keys[0].clone())),
                    ..DeadPage::first(now, 100)
                }),
            ),
            ("dead_counts", self.dead_counts(now)),
            ("paused_table_exists", self.paused_table_exists()),
            ("paused_list", self.paused_list()),
            ("paused_page", self.paused_page(200)),
            ("paused_count", self.paused_count()),
            ("paused_among", self.paused_among(&["email", "report"])),
            (
                "paused_insert",
                self.paused_insert("email", now, Some("docket web")),
            ),
            ("paused_delete", self.paused_delete("email")),
            ("lag_first_name", self.lag_next_name(None)),
            ("lag_next_name", self.lag_next_name(Some("email"))),
            ("lag_name_kind", self.lag_name_kind("email")),
            ("lag_head", self.lag_head("email", false, now, 1001)),
            ("lag_head_items", self.lag_head("label", true, now, 1001)),
            (
                "lag_count_scheduled",
                self.lag_count("email", LagRange::Scheduled, now, 1001),
            ),
            (
                "lag_count_picked",
                self.lag_count("email", LagRange::Picked, now, 1001),
            ),
            (
                "lag_count_due",
                self.lag_count("email", LagRange::Due, now, 1001),
            ),
            ("list", self.list(&filter)),
            ("summary", self.summary()),
            ("unresolved_names", self.unresolved_names(&tasks, false)),
            (
                "delete_unresolved",
                self.delete_unresolved(&tasks, now, false),
            ),
            ("column_exists", self.column_exists(Column::Priority.name())),
        ]);
        if self.policy.priority {
            all.push(("next_at_level", self.next_at_level(Level::Exactly(50), now)));
        }
        // Due-queries while the store holds poison rows back (their keys are excluded).
        let held_back = [ExecutionKey::new("report", "bad")];
        let due = Due {
            exclude: &held_back,
            ..Due::new(Level::Any, now, &tasks, 10)
        };
        all.extend([
            ("due_excluding", self.due(&due)),
            ("due_for_update_excluding", self.due_for_update(&due)),
            (
                "lock_and_fetch_excluding",
                self.lock_and_fetch(&due, "node-1"),
            ),
            // Adopting an existing table (`docket migrate --adopt`): its columns and indexes.
            ("table_columns", self.table_columns()),
            ("index_columns", self.index_columns()),
            // The server's clock, which the scheduler corrects its own by.
            ("server_time", self.server_time()),
        ]);
        all.extend(self.limits_catalogue(now, &tasks));
        all
    }

    /// The statements of limits (`0009_limits`): the rows, and one limited task's claim.
    fn limits_catalogue(
        &self,
        now: DateTime<Utc>,
        tasks: &[String],
    ) -> Vec<(&'static str, Rendered)> {
        let limit = crate::records::TaskLimit::new("email")
            .max_running(5)
            .rate_limit_per_key(20, std::time::Duration::from_secs(1));
        let full = ["acme".to_owned(), "globex".to_owned()];
        let claim = |full_keys, no_key_full| Due {
            limited: crate::records::Limited::Claim(crate::records::LimitedClaim {
                full_keys,
                no_key_full,
            }),
            ..Due::new(Level::Any, now, &tasks[1..], 10)
        };
        let key = ExecutionKey::new("email", "7");
        let by_task = Due {
            by_task: true,
            ..Due::new(Level::Any, now, tasks, 10)
        };
        vec![
            ("limits_table_exists", self.limits_table_exists()),
            ("limit_list", self.limit_list()),
            ("limit_lock", self.limit_lock("email")),
            ("limit_update", self.limit_update(&limit, now)),
            ("limit_insert", self.limit_insert(&limit, now)),
            ("limit_delete", self.limit_delete("email")),
            ("limit_running", self.limit_running("email")),
            ("limit_use", self.limit_use("email", None)),
            ("limit_use_rate", self.limit_use("email", Some(now))),
            ("limit_starts", self.limit_starts("email", now)),
            ("limit_starts_prune", self.limit_starts_prune("email", now)),
            (
                "limit_starts_insert",
                self.limit_starts_insert(&[(&key, Some("acme")), (&key, None)], now),
            ),
            ("limit_claimed", self.limit_claimed("email", 3)),
            // The ordinary claim of a table with limits, task by task (where the dialect can).
            ("due_for_update_by_task", self.due_for_update(&by_task)),
            (
                "lock_and_fetch_by_task",
                self.lock_and_fetch(&by_task, "node-1"),
            ),
            (
                "limited_due_for_update",
                self.due_for_update(&claim(&[], false)),
            ),
            (
                "limited_due_for_update_full_keys",
                self.due_for_update(&claim(&full, false)),
            ),
            (
                "limited_due_for_update_no_key_full",
                self.due_for_update(&claim(&full, true)),
            ),
        ]
    }

    /// The statements whose callers pass a list (keys, rows, ids: what batches and streams
    /// carry), each rendered with `n` items (n >= 1) under a stable name: for the rule that
    /// only statements whose text repeats are kept prepared ([`Rendered::sized_by_input`]).
    /// A test renders them at two lengths: the text differs exactly where it is marked.
    pub fn list_catalogue(&self, n: usize) -> Vec<(&'static str, Rendered)> {
        let (now, _, item) = crate::dialect::queue::sample_item();
        let keys: Vec<ExecutionKey> = (0..n)
            .map(|i| ExecutionKey::new("report", i.to_string()))
            .collect();
        let versioned: Vec<(&ExecutionKey, i64)> = keys.iter().map(|k| (k, 2)).collect();
        let later = |i: usize| Changes {
            pick: Some(PickChange::Release),
            execution_time: Some(now + chrono::Duration::seconds(i as i64)),
            ..Changes::default()
        };
        let changes: Vec<Changes> = (0..n).map(later).collect();
        let updates: Vec<_> = keys.iter().zip(&changes).map(|(k, c)| (k, 2, c)).collect();
        let same = later(0);
        let same_updates: Vec<_> = keys.iter().map(|k| (k, 2, &same)).collect();
        let rows: Vec<NewExecution> = keys
            .iter()
            .map(|k| NewExecution {
                task_name: k.task_name.clone(),
                task_instance: k.task_instance.clone(),
                task_data: None,
                execution_time: now,
                priority: Some(5),
                limit_key: None,
            })
            .collect();
        let items: Vec<_> = keys
            .iter()
            .map(|k| crate::records::NewItem {
                key: k.clone(),
                ..item.clone()
            })
            .collect();
        let ids: Vec<&str> = keys.iter().map(|k| k.task_instance.as_str()).collect();
        let tasks = ["report".to_owned()];
        let due = Due {
            exclude: &keys,
            ..Due::new(Level::Any, now, &tasks, 10)
        };
        vec![
            ("insert_many", self.insert_many(&rows)),
            ("insert_many_new", self.insert_many_new(&rows)),
            ("claim_keys", self.claim_keys(&keys, "node-1", now)),
            (
                "heartbeat_versions",
                self.heartbeat_versions(&versioned, now),
            ),
            ("picked_at_versions", self.picked_at_versions(&versioned)),
            ("delete_versions", self.delete_versions(&versioned)),
            ("update_versions", self.update_versions(&updates)),
            ("update_versions_same", self.update_versions(&same_updates)),
            ("due_excluding", self.due(&due)),
            ("item_insert_rows", self.item_insert_rows(&items)),
            ("item_ids_present", self.item_ids_present("review", &ids)),
            ("paused_among", self.paused_among(&ids)),
        ]
    }

    /// The database server's current time, one row with one column `server_time`
    /// ([`Dialect::server_time`]).
    pub fn server_time(&self) -> Rendered {
        let mut w = self.writer();
        self.dialect.server_time(&mut w);
        w.finish()
    }

    /// The table's columns (`name`, `data_type`), none when it does not exist.
    pub fn table_columns(&self) -> Rendered {
        let mut w = self.writer();
        self.dialect
            .catalog(&mut w, &self.table, Catalog::TableColumns);
        w.finish()
    }

    /// The key columns of the table's indexes (`index_name`, `position`, `column_name`).
    pub fn index_columns(&self) -> Rendered {
        let mut w = self.writer();
        self.dialect
            .catalog(&mut w, &self.table, Catalog::IndexColumns);
        w.finish()
    }
}
