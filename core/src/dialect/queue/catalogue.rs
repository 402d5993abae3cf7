//! The work queue's statements as a catalogue, for tooling and golden tests.

use super::*;

impl Statements<'_> {
    /// Every work-queue statement, rendered with fixed sample arguments (as
    /// [`Statements::catalogue`]): FIFO and a two-key custom order.
    pub fn queue_catalogue(&self) -> Vec<(&'static str, Rendered)> {
        let (now, key, item) = sample_item();
        let later = now + chrono::Duration::minutes(30);
        let custom = PrimaryOrder::Custom(sample_custom_keys());
        let fifo = ForWorker::new("w1", "review", &PrimaryOrder::Fifo, now);
        let by_custom = ForWorker {
            order: &custom,
            ..fifo
        };
        let mut all = vec![
            ("item_insert", self.item_insert(&item)),
            ("item_get", self.item_get(&key)),
            ("item_next_fifo", self.item_eligible(&fifo, Some(1), true)),
            (
                "item_next_custom",
                self.item_eligible(&by_custom, Some(1), true),
            ),
            ("item_list_fifo", self.item_eligible(&fifo, Some(10), false)),
            (
                "item_lock_one",
                self.item_eligible(
                    &ForWorker {
                        key: Some(&key),
                        ..by_custom
                    },
                    Some(1),
                    true,
                ),
            ),
            ("item_claim", self.item_claim(&key, "w1")),
            ("item_release", self.item_release(&key, "w1", true)),
            ("item_extend", self.item_extend(&key, 1)),
            ("assignment_delete", self.assignment_delete(&key, "w1")),
            (
                "assignment_insert",
                self.assignment_insert(&key, "w1", now, later),
            ),
            (
                "assignment_finish",
                self.assignment_finish(&Finishing {
                    key: &key,
                    worker: "w1",
                    how: Finish::Return,
                    now,
                    hidden_until: later,
                }),
            ),
            ("assignment_expired", self.assignment_expired(now)),
            ("assignment_list", self.assignment_list(&key)),
            (
                "item_list_assigned",
                self.item_list_assigned(&ItemsQuery {
                    assignments: 10,
                    ..ItemsQuery::new("review", 50)
                }),
            ),
            (
                "item_list_assigned_one",
                self.item_list_assigned(&ItemsQuery {
                    item: Some("batch-1/1"),
                    held_by: Some("w1"),
                    assignments: 100,
                    ..ItemsQuery::new("review", 1)
                }),
            ),
        ];
        if self.policy().priority {
            // The weighted and aging modes: the levels, then a claim at one level and band.
            let aged = ForWorker {
                level: Level::Exactly(5),
                arrived_by: now - chrono::Duration::minutes(10),
                ..fifo
            };
            all.push(("item_levels", self.item_levels(&fifo)));
            all.push((
                "item_next_at_level",
                self.item_eligible(&aged, Some(1), true),
            ));
        }
        all
    }

    /// The statements of a bulk intake through `load` ([`crate::dialect::file_load`]), in the order
    /// they are sent, with sample arguments (the file `/tmp/docket-intake-1-0-0.tsv`).
    pub fn bulk_intake_catalogue(&self, load: &dyn FileLoad) -> Vec<(&'static str, Rendered)> {
        let path = "/tmp/docket-intake-1-0-0.tsv";
        let mut all = vec![
            ("staging_drop", self.item_staging_drop(load)),
            ("staging_create", self.item_staging_create(load)),
        ];
        all.extend(
            self.item_staging_load(load, path)
                .map(|r| ("staging_load", r)),
        );
        all.extend([
            ("staged_count", self.item_staged_count()),
            ("staged_first_skipped", self.item_staged_first_skipped()),
            ("item_publish", self.item_publish()),
            ("staged_existing", self.item_staged_existing()),
        ]);
        all
    }

    /// The statements of streaming intake and of indexed custom orders, with sample arguments:
    /// a two-row insert, the id check, the per-type counts, and (where the dialect indexes with
    /// generated columns) the claim and the listing that sort by them.
    pub fn queue_scale_catalogue(&self) -> Result<Vec<(&'static str, Rendered)>, StoreError> {
        let (now, key, first) = sample_item();
        let second = NewItem {
            key: ExecutionKey::new("review", "batch-1/2"),
            record: RecordKey {
                date: now,
                order: 2,
            },
            custom_attributes: None,
            priority: None,
            ..first.clone()
        };
        let custom = PrimaryOrder::Custom(sample_custom_keys());
        let by_custom = ForWorker::new("w1", "review", &custom, now);
        let mut all = vec![
            ("item_insert_rows", self.item_insert_rows(&[first, second])),
            (
                "item_ids_present",
                self.item_ids_present("review", &["batch-1/1", "batch-1/2"]),
            ),
            ("item_counts", self.item_counts()),
        ];
        let index = self.order_index(&sample_custom_keys())?;
        if !index.order_by.is_empty() {
            all.push((
                "item_next_custom_indexed",
                self.item_eligible_indexed(&by_custom, Some(1), true, Some(&index)),
            ));
            all.push((
                "item_list_custom_indexed",
                self.item_eligible_indexed(&by_custom, Some(10), false, Some(&index)),
            ));
            let one = ForWorker {
                key: Some(&key),
                ..by_custom
            };
            all.push((
                "item_lock_one_indexed",
                self.item_eligible_indexed(&one, Some(1), true, Some(&index)),
            ));
        }
        Ok(all)
    }
}
