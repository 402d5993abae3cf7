//! Bulk intake through a loaded file ([`crate::dialect::file_load`]): a large stream of items is
//! written to a private temporary file, loaded by the server into a session-private staging
//! table, and published into the docket table by one `INSERT ... SELECT`, so the batch appears
//! all together or not at all. Everything before the publishing statement touches only the
//! staging table, which the session drops at the end (and the server with the session).

use super::{duplicate_item, SqlConnector, SqlSession, SqlStore};
use crate::dialect::{FileLoad, Rendered, SqlWriter};
use crate::error::{DocketError, StoreError};
use crate::ident::TableName;
use crate::records::{ExecutionKey, NewItem};
use crate::store::row::decode_all;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a staged intake did.
pub(super) enum Staged {
    /// Inserted this many items.
    Inserted(u64),
    /// No file could be loaded (a path that is not a plain literal, the server's
    /// `local_infile` off, a client library that refuses local files, no right to create a
    /// temporary table). Nothing was read from the stream: the caller inserts rows instead.
    Refused,
}

impl<C: SqlConnector> SqlStore<C> {
    /// Inserts the items of `rows` through `load`: see the module documentation. `columns`
    /// are the item insert columns ([`crate::dialect::Statements::item_insert_columns`]);
    /// `per` items are checked for repeated ids at a time, as a multi-row insert would.
    pub(super) fn item_insert_staged(
        &self,
        load: &dyn FileLoad,
        columns: &[&'static str],
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
        per: usize,
    ) -> Result<Staged, StoreError> {
        let Ok(file) = IntakeFile::create() else {
            return Ok(Staged::Refused);
        };
        let staging = self.statements.table().intake();
        let dialect = self.connector.dialect();
        let drop_staging = render(dialect, |w| load.drop_staging(w, &staging));
        let create = render(dialect, |w| {
            load.create_staging(w, &staging, self.statements.table(), columns)
        });
        let file_columns: Vec<&str> = std::iter::once("seq")
            .chain(columns.iter().copied())
            .collect();
        let mut w = SqlWriter::new(dialect);
        if !load.load(&mut w, &staging, &file_columns, &file.path_text()) {
            return Ok(Staged::Refused);
        }
        let load_file = w.finish().sql;
        self.connector.with_session(&mut |s| {
            // A staging table left on this pooled connection by an intake that failed.
            s.execute(&drop_staging)?;
            // Loading the still empty file asks the server and the client library whether
            // local files may be loaded at all, before anything is read from the stream.
            if let Err(e) = s
                .execute(&create)
                .and_then(|_| s.execute_unprepared(&load_file))
            {
                tracing::debug!(error = %e, "bulk intake through a file refused; inserting rows");
                s.execute(&drop_staging)?;
                return Ok(Staged::Refused);
            }
            let staged =
                self.stage_and_publish(s, load, &file, &load_file, &staging, columns, rows, per);
            let dropped = s.execute(&drop_staging);
            let inserted = staged?;
            dropped?;
            Ok(Staged::Inserted(inserted))
        })
    }

    /// Writes `rows` to `file`, loads it into `staging`, and publishes it.
    #[allow(clippy::too_many_arguments)]
    fn stage_and_publish(
        &self,
        s: &mut dyn SqlSession,
        load: &dyn FileLoad,
        file: &IntakeFile,
        load_file: &str,
        staging: &TableName,
        columns: &[&str],
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
        per: usize,
    ) -> Result<u64, StoreError> {
        let written = self.write_file(load, file, rows, per)?;
        s.execute_unprepared(load_file)?;
        let count = self.statements.item_staged_count(staging);
        let loaded = decode_all(s.query(&count)?, |r| r.i64("n"))?;
        let loaded = loaded.first().copied().unwrap_or(0);
        if loaded != written.count as i64 {
            // The staging table's key skipped the lines repeating an earlier line's id.
            let skipped = s.query(&self.statements.item_staged_first_skipped(staging))?;
            let first = decode_all(skipped, |r| r.opt_i64("seq"))?;
            let seq = first.into_iter().flatten().next().unwrap_or(loaded + 1) as u64;
            return Err(StoreError::RepeatedItem {
                task: written.task,
                from: seq,
                to: seq,
            });
        }
        let publish = self.statements.item_publish(staging, columns);
        let settings = load.publish_settings();
        if let Some((set, _)) = settings {
            s.execute_unprepared(set)?;
        }
        let published = s.execute(&publish);
        if let Some((_, restore)) = settings {
            s.execute_unprepared(restore)?;
        }
        match published {
            Err(StoreError::Duplicate { .. }) => Err(self.staged_duplicate(s, staging)?),
            Ok(n) if n != written.count => Err(StoreError::conflict(format!(
                "published {n} of {} items",
                written.count
            ))),
            other => other,
        }
    }

    /// Writes the items of `rows` to `file`, `seq` numbered from 1. An id repeated within
    /// `per` consecutive items is refused here, as a multi-row insert does.
    fn write_file(
        &self,
        load: &dyn FileLoad,
        file: &IntakeFile,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
        per: usize,
    ) -> Result<Written, StoreError> {
        let mut out = BufWriter::with_capacity(1 << 20, &file.file);
        let mut line = Vec::with_capacity(1024);
        let mut written = Written {
            task: String::new(),
            count: 0,
        };
        let mut seen: HashSet<ExecutionKey> = HashSet::with_capacity(per);
        for row in rows {
            let item = row.map_err(|e| StoreError::Input(Box::new(e)))?;
            if written.count % per as u64 == 0 {
                seen.clear();
            }
            if !seen.insert(item.key.clone()) {
                return Err(duplicate_item(&item.key));
            }
            if written.count == 0 {
                written.task.clone_from(&item.key.task_name);
            }
            written.count += 1;
            line.clear();
            let seq = i64::try_from(written.count).unwrap_or(i64::MAX);
            load.write_row(&mut line, &self.statements.item_file_values(seq, &item));
            out.write_all(&line).map_err(StoreError::database)?;
        }
        out.flush().map_err(StoreError::database)?;
        Ok(written)
    }

    /// Which staged item the publishing insert found the table already has
    /// ([`StoreError::DuplicateItem`]); the staging table's key rules out repeats within it.
    fn staged_duplicate(
        &self,
        s: &mut dyn SqlSession,
        staging: &TableName,
    ) -> Result<StoreError, StoreError> {
        let existing = s.query(&self.statements.item_staged_existing(staging))?;
        let existing = decode_all(existing, |r| {
            Ok(ExecutionKey::new(r.text("task")?, r.text("name")?))
        })?;
        Ok(match existing.first() {
            Some(key) => duplicate_item(key),
            None => StoreError::conflict("the intake hit a duplicate key that it cannot find"),
        })
    }
}

/// What [`SqlStore::write_file`] wrote: the first item's task type and how many items.
struct Written {
    task: String,
    count: u64,
}

fn render(
    dialect: &'static dyn crate::dialect::Dialect,
    write: impl FnOnce(&mut SqlWriter<'_>),
) -> Rendered {
    let mut w = SqlWriter::new(dialect);
    write(&mut w);
    w.finish()
}

/// A new file in the temporary directory, readable only by this user, removed when dropped.
struct IntakeFile {
    path: PathBuf,
    file: File,
}

impl IntakeFile {
    fn create() -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "docket-intake-{}-{}-{nanos}.tsv",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path)?;
        Ok(Self { path, file })
    }

    /// The path as text (lossy: a path that is not UTF-8 is refused by [`FileLoad::load`]'s
    /// plain-literal check).
    fn path_text(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

impl Drop for IntakeFile {
    fn drop(&mut self) {
        // The file is ours alone; a failure to remove it leaves a temporary file behind.
        let _ = std::fs::remove_file(&self.path);
    }
}
