//! Wake-ups across processes on PostgreSQL: `NOTIFY` when due work is committed, `LISTEN` in
//! each scheduler (see [`docket_core::store::WakeSignals`] and docs/DESIGN.md, "Wake-ups").
//!
//! - **The channel** is `docket_` followed by the validated table name (`schema.table` where
//!   qualified), cut to PostgreSQL's 63 bytes. `LISTEN` takes an identifier, so it is quoted by
//!   the dialect; `NOTIFY` goes through `pg_notify($1, $2)` with the channel and an empty
//!   payload as binds. Two tables whose qualified names share their first 56 characters share a
//!   channel, and so do same-named tables of different schemas when unqualified: a spurious
//!   wake-up, one empty poll, never a missed one.
//! - **Sending is debounced**: the first announcement after a quiet spell is sent at once, on
//!   the caller's thread (one round trip, after its commit); announcements within
//!   [`DEBOUNCE`] of the last signal become one signal sent by a helper thread at the end of
//!   the window. A burst of 10,000 single-row transactions is at most one signal per window.
//!   (Inside one transaction PostgreSQL folds identical notifications itself.)
//! - **Listening** holds a connection of its own (opened from the store's URL, or taken from
//!   the pool when the store was built on the application's pool) and reads what the server
//!   sent without a round trip (libpq's `PQconsumeInput`, through diesel's
//!   `notifications_iter`), every [`LISTEN_TICK`]; every [`LISTEN_CHECK`] of silence it runs
//!   `SELECT 1`, so a connection the network lost is noticed and replaced.

use crate::dialect::PgDialect;
use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, Pool, PooledConnection};
use diesel::sql_types::Text;
use diesel::{Connection, PgConnection, RunQueryDsl};
use docket_core::dialect::{Dialect, SqlWriter};
use docket_core::ident::TableName;
use docket_core::store::{WakeListener, WakeSignals};
use docket_core::StoreError;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Announcements closer together than this become one signal.
pub const DEBOUNCE: Duration = Duration::from_millis(2);

/// How often a listener reads what the server sent.
pub const LISTEN_TICK: Duration = Duration::from_millis(2);

/// How long a listener stays silent before it checks its connection with `SELECT 1`.
pub const LISTEN_CHECK: Duration = Duration::from_secs(30);

/// Longest channel name PostgreSQL accepts (`NAMEDATALEN - 1`).
const MAX_CHANNEL: usize = 63;

/// The channel of `table`: `docket_<schema.table>`, at most 63 bytes (the name is ASCII).
pub fn channel(table: &TableName) -> String {
    let name = match table.schema() {
        Some(schema) => format!("docket_{schema}.{}", table.table()),
        None => format!("docket_{}", table.table()),
    };
    name.chars().take(MAX_CHANNEL).collect()
}

/// `SELECT pg_notify($1, '')` for `channel`: the channel and the payload are binds.
pub fn notify_statement(channel: &str) -> docket_core::dialect::Rendered {
    let mut w = SqlWriter::new(&PgDialect);
    w.push("SELECT pg_notify(")
        .bind(channel.to_owned())
        .push(", ")
        .bind(String::new())
        .push(")");
    w.finish()
}

/// Where a listener's connection comes from.
#[derive(Clone, Default)]
pub(crate) enum ListenFrom {
    /// A connection of its own, from the URL the store was opened with.
    Url(Arc<str>),
    /// One of the pool's connections, held while listening (`from_pool`).
    #[default]
    Pool,
}

impl std::fmt::Debug for ListenFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password.
        f.write_str(match self {
            ListenFrom::Url(_) => "Url(..)",
            ListenFrom::Pool => "Pool",
        })
    }
}

#[derive(Debug, Default)]
struct SendState {
    /// When the last signal was sent (or started).
    last: Option<Instant>,
    /// A signal is being sent.
    sending: bool,
    /// An announcement is waiting for the window to end.
    pending: bool,
    /// The helper thread that sends pending signals is running.
    helper: bool,
}

/// The wake-up signals of one table on one PostgreSQL store.
#[derive(Debug)]
pub struct PgSignals {
    /// The store's pool: signals go out on its connections (and a listener may hold one).
    pool: Pool<ConnectionManager<PgConnection>>,
    listen_from: ListenFrom,
    channel: String,
    listen_sql: String,
    state: Mutex<SendState>,
    changed: Condvar,
}

impl PgSignals {
    pub(crate) fn new(
        pool: Pool<ConnectionManager<PgConnection>>,
        listen_from: ListenFrom,
        table: &TableName,
    ) -> Self {
        let channel = channel(table);
        let listen_sql = format!("LISTEN {}", PgDialect.quote_ident(&channel));
        Self {
            pool,
            listen_from,
            channel,
            listen_sql,
            state: Mutex::new(SendState::default()),
            changed: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, SendState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends one signal through the pool (its own transaction: after the caller's commit).
    fn send(&self) {
        // Plain diesel on a pooled connection: the channel is a bind, nothing kept prepared.
        let sent = self
            .pool
            .get()
            .map_err(|e| e.to_string())
            .and_then(|mut conn| {
                diesel::sql_query("SELECT pg_notify($1, '')")
                    .bind::<Text, _>(&self.channel)
                    .execute(&mut conn)
                    .map_err(|e| e.to_string())
            });
        if let Err(err) = sent {
            tracing::warn!(%err, channel = %self.channel, "cannot send a wake-up signal; schedulers will find the work by polling");
        }
    }

    /// The helper: sends what was announced during a window once the window ends; leaves
    /// after a second with nothing to send.
    fn send_pending(self: Arc<Self>) {
        let mut st = self.state();
        loop {
            if st.pending && !st.sending {
                let since = st.last.map_or(DEBOUNCE, |l| l.elapsed());
                if since >= DEBOUNCE {
                    st.pending = false;
                    st.sending = true;
                    st.last = Some(Instant::now());
                    drop(st);
                    self.send();
                    st = self.state();
                    st.sending = false;
                    continue;
                }
                st = self
                    .changed
                    .wait_timeout(st, DEBOUNCE - since)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            let (next, timeout) = self
                .changed
                .wait_timeout(st, Duration::from_secs(1))
                .unwrap_or_else(PoisonError::into_inner);
            st = next;
            if timeout.timed_out() && !st.pending {
                st.helper = false;
                return;
            }
        }
    }
}

/// [`WakeSignals`] behind an `Arc` (the helper thread holds one).
#[derive(Debug)]
pub(crate) struct Shared(pub(crate) Arc<PgSignals>);

impl WakeSignals for Shared {
    fn announce(&self) {
        let signals = &self.0;
        let mut st = signals.state();
        let quiet = st.last.is_none_or(|l| l.elapsed() >= DEBOUNCE);
        if quiet && !st.sending {
            st.sending = true;
            st.last = Some(Instant::now());
            drop(st);
            signals.send();
            let mut st = signals.state();
            st.sending = false;
            signals.changed.notify_all();
            return;
        }
        st.pending = true;
        if !st.helper {
            let helper = Arc::clone(signals);
            let started = std::thread::Builder::new()
                .name("docket-notify".into())
                .spawn(move || helper.send_pending());
            match started {
                Ok(_) => st.helper = true,
                Err(err) => {
                    // No helper: send now rather than not at all.
                    tracing::warn!(%err, "cannot start the wake-up sender thread");
                    st.pending = false;
                    drop(st);
                    signals.send();
                    return;
                }
            }
        }
        signals.changed.notify_all();
    }

    fn listen(&self) -> Result<Box<dyn WakeListener>, StoreError> {
        let signals = &self.0;
        let mut conn = match &signals.listen_from {
            ListenFrom::Url(url) => {
                ListenConn::Own(PgConnection::establish(url).map_err(StoreError::connection)?)
            }
            ListenFrom::Pool => {
                ListenConn::Pooled(signals.pool.get().map_err(docket_diesel::pool)?)
            }
        };
        conn.get()
            .batch_execute(&signals.listen_sql)
            .map_err(docket_diesel::db)?;
        Ok(Box::new(PgListener {
            conn,
            heard: Instant::now(),
        }))
    }

    fn channel(&self) -> &str {
        &self.0.channel
    }
}

/// A listener's connection.
enum ListenConn {
    /// Opened for the listener, closed with it.
    Own(PgConnection),
    /// The pool's, handed back when the listener ends (after `UNLISTEN *`).
    Pooled(PooledConnection<ConnectionManager<PgConnection>>),
}

impl ListenConn {
    fn get(&mut self) -> &mut PgConnection {
        match self {
            ListenConn::Own(c) => c,
            ListenConn::Pooled(c) => c,
        }
    }
}

/// One `LISTEN`ing connection.
struct PgListener {
    conn: ListenConn,
    /// When the connection last answered (a notification or a check).
    heard: Instant,
}

impl PgListener {
    /// Consumes every notification received so far; how many.
    fn drain(&mut self) -> Result<usize, StoreError> {
        let mut n = 0;
        for note in self.conn.get().notifications_iter() {
            note.map_err(StoreError::connection)?;
            n += 1;
        }
        Ok(n)
    }
}

impl WakeListener for PgListener {
    fn wait(&mut self, timeout: Duration) -> Result<bool, StoreError> {
        let until = Instant::now() + timeout;
        loop {
            if self.drain()? > 0 {
                self.heard = Instant::now();
                return Ok(true);
            }
            if self.heard.elapsed() >= LISTEN_CHECK {
                diesel::sql_query("SELECT 1")
                    .execute(self.conn.get())
                    .map_err(StoreError::connection)?;
                self.heard = Instant::now();
            }
            let now = Instant::now();
            if now >= until {
                return Ok(false);
            }
            std::thread::sleep(LISTEN_TICK.min(until - now));
        }
    }
}

impl Drop for PgListener {
    fn drop(&mut self) {
        if let ListenConn::Pooled(conn) = &mut self.conn {
            // Best effort: a connection that cannot run it is broken, and the pool drops it.
            let _ = conn.batch_execute("UNLISTEN *");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_is_prefixed_qualified_and_cut_to_63_bytes() {
        let t = |s| TableName::parse(s).unwrap();
        assert_eq!(channel(&t("scheduled_tasks")), "docket_scheduled_tasks");
        assert_eq!(channel(&t("app.jobs")), "docket_app.jobs");
        let long = format!("{}.{}", "s".repeat(40), "a".repeat(50));
        let cut = channel(&t(&long));
        assert_eq!(cut.len(), 63);
        assert!(cut.starts_with("docket_sss"), "{cut}");
    }

    #[test]
    fn notify_binds_channel_and_payload() {
        let stmt = notify_statement("docket_x");
        assert_eq!(stmt.sql, "SELECT pg_notify($1, $2)");
        assert_eq!(stmt.binds.len(), 2);
    }
}
