//! Several servers behind one URL: `mysql://user:pass@h1:3306,h2:3306,h3:3306/db`, for a
//! Galera cluster without a proxy in front. A new connection goes to the first host that
//! accepts it and answers a query, in the order the URL gives them (libpq's multi-host URLs
//! do the same); connections already open stay where they are until they break.

use diesel::r2d2::{ConnectionManager, Error, ManageConnection};
use diesel::sql_types::Text;
use diesel::{MysqlConnection, QueryableByName, RunQueryDsl};

/// Opens the pool's connections on the first usable host of a (multi-host) MySQL URL.
///
/// A host is usable when it accepts the connection and is not a Galera node that is out of
/// its cluster's primary component (its `wsrep_ready` status is `OFF`; a server without a
/// Galera provider is always usable). Such a node accepts connections and even answers
/// `SELECT 1`, but refuses every statement on a table (error 1047, "WSREP has not yet
/// prepared node for application use"), so the next host is tried. The same check validates a
/// pooled connection at check-out, so the connections left on a node that drops out are
/// replaced by connections to the next host. With one host, this is diesel's
/// [`ConnectionManager`] unchanged (its `SELECT 1`, no extra query).
#[derive(Debug)]
pub struct MysqlManager {
    hosts: Vec<ConnectionManager<MysqlConnection>>,
}

impl MysqlManager {
    /// A manager for `url`: one host, or several separated by commas.
    pub fn new(url: &str) -> Self {
        Self {
            hosts: host_urls(url)
                .into_iter()
                .map(ConnectionManager::new)
                .collect(),
        }
    }

    /// How many hosts it tries.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }
}

impl From<ConnectionManager<MysqlConnection>> for MysqlManager {
    fn from(host: ConnectionManager<MysqlConnection>) -> Self {
        Self { hosts: vec![host] }
    }
}

impl ManageConnection for MysqlManager {
    type Connection = MysqlConnection;
    type Error = Error;

    fn connect(&self) -> Result<MysqlConnection, Error> {
        let (last, earlier) = match self.hosts.split_last() {
            Some(split) => split,
            None => return Err(Error::ConnectionError(no_host())),
        };
        for host in earlier {
            // This host's failure is the next one's to report, if that one fails too.
            if let Ok(mut conn) = host.connect() {
                if self.is_valid(&mut conn).is_ok() {
                    return Ok(conn);
                }
            }
        }
        let mut conn = last.connect()?;
        if !earlier.is_empty() {
            self.is_valid(&mut conn)?;
        }
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut MysqlConnection) -> Result<(), Error> {
        match self.hosts.as_slice() {
            [] => Err(Error::ConnectionError(no_host())),
            [one] => one.is_valid(conn),
            [..] => in_primary_component(conn),
        }
    }

    fn has_broken(&self, conn: &mut MysqlConnection) -> bool {
        self.hosts.first().is_none_or(|host| host.has_broken(conn))
    }
}

#[derive(QueryableByName)]
struct Status {
    #[diesel(sql_type = Text, column_name = "Variable_name")]
    name: String,
    #[diesel(sql_type = Text, column_name = "Value")]
    value: String,
}

/// `Ok` unless the server runs a Galera provider (`wsrep_provider_name` not empty; a MariaDB
/// without a cluster reports `wsrep_ready = OFF` with no provider, MySQL neither) and its
/// `wsrep_ready` is not `ON`.
fn in_primary_component(conn: &mut MysqlConnection) -> Result<(), Error> {
    let status: Vec<Status> = diesel::sql_query(
        "SHOW STATUS WHERE Variable_name IN ('wsrep_provider_name', 'wsrep_ready')",
    )
    .load(conn)
    .map_err(Error::QueryError)?;
    let value = |name: &str| {
        status
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
            .map(|s| s.value.as_str())
    };
    let galera = value("wsrep_provider_name").is_some_and(|p| !p.is_empty());
    if galera && !value("wsrep_ready").is_some_and(|r| r.eq_ignore_ascii_case("ON")) {
        return Err(Error::QueryError(diesel::result::Error::QueryBuilderError(
            "a Galera node outside its primary component (wsrep_ready is not ON)".into(),
        )));
    }
    Ok(())
}

fn no_host() -> diesel::ConnectionError {
    diesel::ConnectionError::InvalidConnectionUrl("the URL names no host".into())
}

/// One URL per host of `url`: `scheme://userinfo@h1,h2/rest` gives `scheme://userinfo@h1/rest`
/// and `scheme://userinfo@h2/rest`. A URL without a comma in its host part is returned as it
/// is (a comma in the user name or password, before the `@`, is not a separator).
pub fn host_urls(url: &str) -> Vec<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return vec![url.to_owned()];
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    if !hosts.contains(',') {
        return vec![url.to_owned()];
    }
    hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|h| format!("{scheme}://{userinfo}{h}{tail}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::host_urls;

    #[test]
    fn one_url_per_host() {
        assert_eq!(
            host_urls("mysql://root:p,w@127.0.0.1:4306,127.0.0.1:4307,[::1]:4308/db?x=1"),
            [
                "mysql://root:p,w@127.0.0.1:4306/db?x=1",
                "mysql://root:p,w@127.0.0.1:4307/db?x=1",
                "mysql://root:p,w@[::1]:4308/db?x=1",
            ]
        );
        assert_eq!(host_urls("mysql://a,b"), ["mysql://a", "mysql://b"]);
        assert_eq!(
            host_urls("mysql://root:p,w@h:1/db"),
            ["mysql://root:p,w@h:1/db"]
        );
        assert_eq!(host_urls("not a url"), ["not a url"]);
    }
}
