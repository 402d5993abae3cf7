//! Connections: a tiberius client per connection, each on its own current-thread tokio
//! runtime (so the blocking `SqlConnector` API drives it with `block_on` from any thread),
//! in a small pool (a mutex-guarded list of idle connections, a size limit and a wait),
//! handed out as [`Lease`]s and returned (or dropped when broken) when the lease ends.

use crate::error::MssqlError;
use docket_core::StoreError;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tiberius::{Client, Config};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

/// Sent on every new connection, before it is pooled.
///
/// - `XACT_ABORT OFF`: a failed statement ends only itself (a duplicate key in a batch
///   insert, a row the `ISJSON` check refuses), and docket's transactions roll back
///   explicitly on any error.
/// - The seven options SQL Server requires, with these values, to create an index on a
///   computed column (a custom order's index, see `MssqlDialect`), to insert, update or
///   delete rows of a table that has one (otherwise the statement fails, error 1934), and for
///   the optimizer to use it. tiberius logs in as an ODBC client, which gets `ANSI_NULLS`,
///   `ANSI_PADDING`, `ANSI_WARNINGS`, `CONCAT_NULL_YIELDS_NULL` and `QUOTED_IDENTIFIER` on,
///   but `ARITHABORT` off (implied by `ANSI_WARNINGS` only at compatibility level 90 and
///   up): all seven are stated here rather than relied on.
pub(crate) const SESSION_OPTIONS: &str = "SET XACT_ABORT OFF; \
    SET ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT, CONCAT_NULL_YIELDS_NULL, \
    QUOTED_IDENTIFIER ON; SET NUMERIC_ROUNDABORT OFF";

/// One open connection: its runtime and client.
pub(crate) struct Conn {
    pub(crate) rt: Runtime,
    pub(crate) client: Client<Compat<TcpStream>>,
    /// Set when the connection failed below the SQL level; it is dropped, not reused.
    pub(crate) broken: bool,
}

impl Conn {
    fn open(config: &Config) -> Result<Conn, MssqlError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = rt.block_on(async {
            let tcp = TcpStream::connect(config.get_addr()).await?;
            tcp.set_nodelay(true)?;
            let mut client = Client::connect(config.clone(), tcp.compat_write()).await?;
            client
                .simple_query(SESSION_OPTIONS)
                .await?
                .into_results()
                .await?;
            Ok::<_, MssqlError>(client)
        })?;
        Ok(Conn {
            rt,
            client,
            broken: false,
        })
    }
}

struct State {
    idle: Vec<Conn>,
    open: usize,
}

pub(crate) struct Pool {
    config: Config,
    max: usize,
    timeout: Duration,
    state: Mutex<State>,
    freed: Condvar,
}

impl Pool {
    /// A pool of at most `max` connections to `config`'s server, waiting up to `timeout` for
    /// one; opens the first now, so a wrong address or login fails here.
    pub(crate) fn open(config: Config, max: usize, timeout: Duration) -> Result<Self, MssqlError> {
        let first = Conn::open(&config)?;
        Ok(Pool {
            config,
            max,
            timeout,
            state: Mutex::new(State {
                idle: vec![first],
                open: 1,
            }),
            freed: Condvar::new(),
        })
    }

    /// The server's address.
    pub(crate) fn addr(&self) -> String {
        self.config.get_addr().to_string()
    }

    /// Connections open, and of those idle.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let state = self.lock();
        (state.open, state.idle.len())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection: an idle one, a new one while fewer than `max` are open, else the next
    /// one returned within the timeout.
    pub(crate) fn get(&self) -> Result<Lease<'_>, MssqlError> {
        let deadline = Instant::now() + self.timeout;
        let mut state = self.lock();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(Lease {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match Conn::open(&self.config) {
                    Ok(conn) => Ok(Lease {
                        pool: self,
                        conn: Some(conn),
                    }),
                    Err(e) => {
                        self.lock().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(MssqlError::PoolTimeout(self.timeout));
            }
            state = self
                .freed
                .wait_timeout(state, deadline - now)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

/// A connection taken from the pool; returned (or dropped when broken) on drop.
pub(crate) struct Lease<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
}

impl Lease<'_> {
    pub(crate) fn conn(&mut self) -> Result<&mut Conn, StoreError> {
        self.conn
            .as_mut()
            .ok_or_else(|| StoreError::connection("connection already returned"))
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let mut state = self.pool.lock();
            if conn.broken {
                state.open -= 1;
            } else {
                state.idle.push(conn);
            }
        }
        self.pool.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option an index on a computed column needs, with the value it needs.
    #[test]
    fn sessions_state_the_options_of_indexed_computed_columns() {
        let (on, off) = SESSION_OPTIONS.split(';').map(str::trim).fold(
            (Vec::new(), Vec::new()),
            |(mut on, mut off), stmt| {
                let stmt = stmt.strip_prefix("SET ").expect("a SET statement");
                let (names, value) = stmt.rsplit_once(' ').expect("SET names value");
                let names = names.split(',').map(|n| n.trim().to_owned());
                match value {
                    "ON" => on.extend(names),
                    "OFF" => off.extend(names),
                    other => panic!("unexpected value {other}"),
                }
                (on, off)
            },
        );
        for needed in [
            "ANSI_NULLS",
            "ANSI_PADDING",
            "ANSI_WARNINGS",
            "ARITHABORT",
            "CONCAT_NULL_YIELDS_NULL",
            "QUOTED_IDENTIFIER",
        ] {
            assert!(on.iter().any(|n| n == needed), "{needed} ON: {on:?}");
        }
        assert_eq!(off, ["XACT_ABORT", "NUMERIC_ROUNDABORT"]);
    }
}
