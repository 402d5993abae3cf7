//! Bulk intake through loaded files ([`crate::dialect::file_load`]): a large stream of items is
//! written to private temporary files of [`ROWS_PER_FILE`] rows, each loaded by the server into
//! a session-private staging table while the next is written, and published into the docket
//! table by one `INSERT ... SELECT`, so the batch appears all together or not at all.
//! Everything before the publishing statement touches only the staging table, which the
//! session drops at the end (and the server with the session).

use super::queue::duplicate_item;
use super::{SqlConnector, SqlSession, SqlStore};
use crate::dialect::FileLoad;
use crate::error::{DocketError, StoreError};
use crate::records::{ExecutionKey, NewItem};
use crate::store::row::decode_all;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};

/// What a staged intake did.
pub(super) enum Staged {
    /// Inserted this many items.
    Inserted(u64),
    /// No file could be loaded (a path that is not a plain literal, the server's
    /// `local_infile` off, a client library that refuses local files, no right to create a
    /// temporary table). Nothing was read from the stream: the caller inserts rows instead.
    Refused,
}

/// Items per file: while the server loads one file, the intake writes the next.
const ROWS_PER_FILE: u64 = 16_384;

/// What the writer (the caller's thread) hands the loader (a thread holding the session).
enum ToLoader {
    /// Load this file into the staging table (then remove it).
    Load(IntakeFile),
    /// Every row is written: publish.
    Publish(Written),
}

impl<C: SqlConnector> SqlStore<C> {
    /// Inserts the items of `rows` through `load`: see the module documentation. The
    /// caller's thread reads the stream and writes files; a scoped thread holds one session
    /// and loads them as they come, so reading and loading overlap.
    pub(super) fn item_insert_staged(
        &self,
        load: &dyn FileLoad,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
    ) -> Result<Staged, StoreError> {
        let (to_loader, inbox) = mpsc::sync_channel(1);
        let (answer, ready) = mpsc::sync_channel(1);
        std::thread::scope(|scope| {
            let loader = scope.spawn(move || {
                self.connector
                    .with_session(&mut |s| self.run_loader(s, load, &inbox, &answer))
            });
            let joined = || {
                loader.join().unwrap_or_else(|_| {
                    Err(StoreError::conflict("the intake's loading thread panicked"))
                })
            };
            // The loader says whether a file can be loaded at all before a row is read.
            if ready.recv() != Ok(true) {
                drop(to_loader);
                return joined();
            }
            match self.write_files(load, rows, &to_loader) {
                Ok(written) => {
                    // A loader that stopped has its own error to give.
                    let _ = to_loader.send(ToLoader::Publish(written));
                    drop(to_loader);
                    joined()
                }
                Err(None) => {
                    drop(to_loader);
                    joined()
                }
                Err(Some(e)) => {
                    drop(to_loader);
                    let _ = joined();
                    Err(e)
                }
            }
        })
    }

    /// The loading side, on one session: creates the staging table, tries an empty file,
    /// loads the files it is sent, publishes, and drops the staging table whatever happened.
    fn run_loader(
        &self,
        s: &mut dyn SqlSession,
        load: &dyn FileLoad,
        inbox: &Receiver<ToLoader>,
        ready: &SyncSender<bool>,
    ) -> Result<Staged, StoreError> {
        let drop_staging = self.statements.item_staging_drop(load);
        // A staging table left on this pooled connection by an intake that failed.
        s.execute(&drop_staging)?;
        let probe = IntakeFile::create().map_err(StoreError::database);
        let allowed = probe.and_then(|file| {
            s.execute(&self.statements.item_staging_create(load))?;
            s.execute_unprepared(&self.load_statement(load, &file)?)
        });
        if let Err(e) = allowed {
            // Worth an operator's attention: the rows still go in, several times slower. The
            // error names the cause in the database's or the client's words.
            tracing::warn!(error = %e, "bulk intake through a file refused; inserting rows instead");
            s.execute(&drop_staging)?;
            let _ = ready.send(false);
            return Ok(Staged::Refused);
        }
        let _ = ready.send(true);
        let published = self.load_files(s, load, inbox);
        let dropped = s.execute(&drop_staging);
        let inserted = published?;
        dropped?;
        Ok(Staged::Inserted(inserted))
    }

    fn load_statement(&self, load: &dyn FileLoad, file: &IntakeFile) -> Result<String, StoreError> {
        match self.statements.item_staging_load(load, &file.path_text()) {
            Some(stmt) => Ok(stmt.sql),
            None => Err(StoreError::conflict(format!(
                "the intake file {} has no plain path",
                file.path.display()
            ))),
        }
    }

    /// Loads each file sent until the writer says publish (or stops: its error is returned).
    fn load_files(
        &self,
        s: &mut dyn SqlSession,
        load: &dyn FileLoad,
        inbox: &Receiver<ToLoader>,
    ) -> Result<u64, StoreError> {
        loop {
            match inbox.recv() {
                Ok(ToLoader::Load(file)) => {
                    s.execute_unprepared(&self.load_statement(load, &file)?)?
                }
                Ok(ToLoader::Publish(written)) => return self.publish(s, load, written),
                Err(_) => return Err(StoreError::conflict("the intake stopped before its end")),
            }
        }
    }

    /// Checks that every written row was staged, and publishes them in one statement.
    fn publish(
        &self,
        s: &mut dyn SqlSession,
        load: &dyn FileLoad,
        written: Written,
    ) -> Result<u64, StoreError> {
        let loaded = decode_all(s.query(&self.statements.item_staged_count())?, |r| {
            r.i64("n")
        })?;
        let loaded = loaded.first().copied().unwrap_or(0);
        if loaded != written.count as i64 {
            // The staging table's key skipped the lines repeating an earlier line's id.
            let skipped = s.query(&self.statements.item_staged_first_skipped())?;
            let first = decode_all(skipped, |r| r.opt_i64("seq"))?;
            let seq = first.into_iter().flatten().next().unwrap_or(loaded + 1) as u64;
            return Err(StoreError::RepeatedItem {
                task: written.task,
                from: seq,
                to: seq,
            });
        }
        let publish = self.statements.item_publish();
        let settings = load.publish_settings();
        if let Some((set, _)) = settings {
            s.execute_unprepared(set)?;
        }
        let published = s.execute(&publish);
        let restored = settings.map_or(Ok(()), |(_, restore)| s.execute_unprepared(restore));
        // The publishing insert's own error comes first; a failed restore only after success.
        let published = match published {
            Err(StoreError::Duplicate { .. }) => Err(self.staged_duplicate(s)?),
            Ok(n) if n != written.count => Err(StoreError::conflict(format!(
                "published {n} of {} items",
                written.count
            ))),
            other => other,
        };
        published.and_then(|n| restored.map(|()| n))
    }

    /// Writes the items of `rows` to files of [`ROWS_PER_FILE`] rows, `seq` numbered from 1,
    /// each sent to the loader when full. A repeated id is left to the staging table's key.
    /// `Err(None)`: the loader stopped (it has the error).
    fn write_files(
        &self,
        load: &dyn FileLoad,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
        to_loader: &SyncSender<ToLoader>,
    ) -> Result<Written, Option<StoreError>> {
        let mut line = Vec::with_capacity(1024);
        let mut written = Written {
            task: String::new(),
            count: 0,
        };
        let mut file: Option<IntakeFile> = None;
        let send = |file: IntakeFile| {
            let file = file.flushed().map_err(|e| Some(StoreError::database(e)))?;
            to_loader.send(ToLoader::Load(file)).map_err(|_| None)
        };
        for row in rows {
            let item = row.map_err(|e| StoreError::Input(Box::new(e)))?;
            if written.count == 0 {
                written.task.clone_from(&item.key.task_name);
            }
            written.count += 1;
            line.clear();
            let seq = i64::try_from(written.count).unwrap_or(i64::MAX);
            load.write_row(&mut line, &self.statements.item_file_values(seq, item));
            let out = match &mut file {
                Some(out) => out,
                None => file.insert(IntakeFile::create().map_err(StoreError::database)?),
            };
            out.write(&line).map_err(StoreError::database)?;
            if written.count.is_multiple_of(ROWS_PER_FILE) {
                file.take().map(send).transpose()?;
            }
        }
        file.take().map(send).transpose()?;
        Ok(written)
    }

    /// Which staged item the publishing insert found the table already has
    /// ([`StoreError::DuplicateItem`]); the staging table's key rules out repeats within it.
    fn staged_duplicate(&self, s: &mut dyn SqlSession) -> Result<StoreError, StoreError> {
        let existing = s.query(&self.statements.item_staged_existing())?;
        let existing = decode_all(existing, |r| {
            Ok(ExecutionKey::new(r.text("task")?, r.text("name")?))
        })?;
        Ok(match existing.first() {
            Some(key) => duplicate_item(key),
            None => StoreError::conflict("the intake hit a duplicate key that it cannot find"),
        })
    }
}

/// What [`SqlStore::write_files`] wrote: the first item's task type and how many items.
struct Written {
    task: String,
    count: u64,
}

/// A new file in the temporary directory, readable only by this user, written through a
/// buffer, removed when dropped.
struct IntakeFile {
    path: PathBuf,
    out: BufWriter<File>,
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
        Ok(Self {
            path,
            out: BufWriter::with_capacity(1 << 20, file),
        })
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.out.write_all(bytes)
    }

    /// The file with everything written on disk, ready to be loaded.
    fn flushed(mut self) -> std::io::Result<Self> {
        self.out.flush()?;
        Ok(self)
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
