//! Writes that race: a store that lets another writer change a row right after the dashboard
//! read it (between its check and its write), with no thread and no timing involved.

use super::tests::{send, Reply};
use super::{router, AppState};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use chrono::{DateTime, Duration, Utc};
use docket_core::dialect::Capabilities;
use docket_core::ordering::CustomKey;
use docket_core::records::{
    Assignment, Finishing, ForWorker, IndexChange, Item, ItemCount, ItemRead, ItemsQuery, NewItem,
};
use docket_core::store::{
    Changes, Completion, DeadCursor, DeadPage, DueParams, Execution, ExecutionKey, Guard, LagQuery,
    ListFilter, NameLag, NewExecution, PausedPage, PausedRead, PausedTask, PoisonRow, TaskSummary,
};
use docket_core::{
    Adopted, DocketError, ExecutionStore, QueueStore, Store, StoreConfig, StoreError, StoreInfo,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

type Hook = Box<dyn FnOnce(&dyn Store) + Send>;

/// Delegates every call to `inner`; after the next `execution_get` of `key`, runs `hook` once
/// on `inner` (another process's write landing between the dashboard's read and its write).
/// Counts the unbounded reads of the paused tasks (`paused_list`).
struct Racing {
    inner: Arc<dyn Store>,
    key: ExecutionKey,
    hook: Mutex<Option<Hook>>,
    paused_lists: AtomicUsize,
}

impl std::fmt::Debug for Racing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Racing").finish_non_exhaustive()
    }
}

impl Racing {
    fn arm(&self, hook: Hook) {
        *self.hook.lock().unwrap() = Some(hook);
    }
}

macro_rules! delegate {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(fn $name(&self $(, $arg: $ty)*) -> $ret { self.inner.$name($($arg),*) })*
    };
}

impl StoreInfo for Racing {
    delegate! {
        fn backend(&self) -> &'static str;
        fn capabilities(&self) -> Capabilities;
        fn config(&self) -> &StoreConfig;
        fn migrate(&self, up_to: Option<&str>) -> Result<Vec<String>, StoreError>;
        fn adopt(&self, up_to: Option<&str>) -> Result<Adopted, StoreError>;
    }
}

impl ExecutionStore for Racing {
    delegate! {
        fn check_schema(&self) -> Result<(), StoreError>;
        fn execution_insert(&self, row: &NewExecution) -> Result<bool, StoreError>;
        fn execution_insert_batch(&self, rows: &[NewExecution]) -> Result<u64, StoreError>;
        fn execution_list(&self, filter: &ListFilter) -> Result<Vec<Execution>, StoreError>;
        fn execution_fetch_due(&self, params: &DueParams<'_>) -> Result<Vec<Execution>, StoreError>;
        fn execution_lock_and_fetch_due(&self, params: &DueParams<'_>, picked_by: &str) -> Result<Vec<Execution>, StoreError>;
        fn execution_update(&self, key: &ExecutionKey, guard: Guard, changes: &Changes) -> Result<bool, StoreError>;
        fn execution_heartbeat(&self, key: &ExecutionKey, version: i64, now: DateTime<Utc>) -> Result<bool, StoreError>;
        fn execution_heartbeat_batch(&self, rows: &[(ExecutionKey, i64)], now: DateTime<Utc>) -> Vec<Result<bool, StoreError>>;
        fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> Result<bool, StoreError>;
        fn execution_complete_batch(&self, batch: &[Completion]) -> Result<Vec<bool>, StoreError>;
        fn execution_dead_page(&self, page: &DeadPage) -> Result<(Vec<Execution>, Option<DeadCursor>), StoreError>;
        fn execution_dead_counts(&self, older_than: DateTime<Utc>) -> Result<Vec<(String, i64)>, StoreError>;
        fn execution_summary(&self) -> Result<Vec<TaskSummary>, StoreError>;
        fn paused_page(&self, limit: i64) -> Result<PausedPage, StoreError>;
        fn paused_among(&self, names: &[String]) -> Result<Vec<PausedRead>, StoreError>;
        fn paused_set(&self, task_name: &str, at: DateTime<Utc>, by: Option<&str>) -> Result<bool, StoreError>;
        fn paused_clear(&self, task_name: &str) -> Result<bool, StoreError>;
        fn limit_list(&self) -> Result<Vec<docket_core::TaskLimit>, StoreError>;
        fn limit_set(&self, limit: &docket_core::TaskLimit, now: DateTime<Utc>) -> Result<(), StoreError>;
        fn limit_clear(&self, task_name: &str) -> Result<bool, StoreError>;
        fn limit_usage(&self, now: DateTime<Utc>, cap: i64) -> Result<Vec<docket_core::LimitUse>, StoreError>;
        fn execution_claim_limited(&self, params: &DueParams<'_>, picked_by: &str) -> Result<Vec<Execution>, StoreError>;
        fn execution_names_after(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>, StoreError>;
        fn execution_name_lag(&self, q: &LagQuery<'_>) -> Result<NameLag, StoreError>;
        fn execution_unresolved_names(&self, known: &[String]) -> Result<Vec<String>, StoreError>;
        fn execution_delete_unresolved(&self, known: &[String], before: DateTime<Utc>) -> Result<u64, StoreError>;
        fn server_time(&self) -> Result<DateTime<Utc>, StoreError>;
        fn execution_poisoned(&self) -> Vec<PoisonRow>;
    }

    fn paused_list(&self) -> Result<Vec<PausedTask>, StoreError> {
        self.paused_lists.fetch_add(1, Ordering::SeqCst);
        self.inner.paused_list()
    }

    fn execution_get(&self, key: &ExecutionKey) -> Result<Option<Execution>, StoreError> {
        let read = self.inner.execution_get(key)?;
        if *key == self.key {
            let hook = self.hook.lock().unwrap().take();
            if let Some(hook) = hook {
                hook(&*self.inner);
            }
        }
        Ok(read)
    }
}

impl QueueStore for Racing {
    delegate! {
        fn check_queue_schema(&self) -> Result<(), StoreError>;
        fn item_insert_stream(&self, rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>) -> Result<u64, StoreError>;
        fn item_counts(&self) -> Result<Vec<ItemCount>, StoreError>;
        fn order_index_create(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError>;
        fn order_index_drop(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError>;
        fn order_index_exists(&self, keys: &[CustomKey]) -> Result<(String, bool), StoreError>;
        fn item_get(&self, key: &ExecutionKey) -> Result<Option<Item>, StoreError>;
        fn item_next_for(&self, q: &ForWorker<'_>, deadline: DateTime<Utc>) -> Result<Option<Item>, StoreError>;
        fn item_list_for(&self, q: &ForWorker<'_>, limit: i64) -> Result<Vec<Item>, StoreError>;
        fn item_extend(&self, key: &ExecutionKey, n: i32) -> Result<bool, StoreError>;
        fn assignment_finish(&self, f: &Finishing<'_>) -> Result<bool, StoreError>;
        fn assignment_expired(&self, now: DateTime<Utc>) -> Result<Vec<Assignment>, StoreError>;
        fn assignment_list(&self, key: &ExecutionKey) -> Result<Vec<Assignment>, StoreError>;
        fn item_list_assigned(&self, q: &ItemsQuery<'_>) -> Result<Vec<ItemRead>, StoreError>;
    }
}

const TOKEN: &str = "s3cret-token-for-race-tests";

/// The seeded SQLite store of the handler tests behind [`Racing`] on `key`, and a dashboard
/// with a token over it.
fn racing(key: ExecutionKey) -> (tempfile::TempDir, Arc<Racing>, AppState) {
    let (dir, inner) = super::tests::seeded_store();
    let racing = Arc::new(Racing {
        inner,
        key,
        hook: Mutex::new(None),
        paused_lists: AtomicUsize::new(0),
    });
    let web = super::Dashboard::new(
        racing.clone(),
        super::Access::Token {
            token: Some(TOKEN.to_owned()),
            hosts: super::hosts::Hosts::new("127.0.0.1:80".parse().unwrap(), &[]),
            secure_cookies: false,
        },
    )
    .build()
    .unwrap();
    (dir, racing, web)
}

async fn api_post(web: &AppState, uri: &str, body: String) -> Reply {
    let req = Request::post(uri)
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(body))
        .unwrap();
    send(&router(web.clone()), req).await
}

/// Another writer moves the row to this time (and bumps its version) right after the read.
fn concurrent_move(at: DateTime<Utc>) -> Hook {
    Box::new(move |store: &dyn Store| {
        let moved = Changes {
            execution_time: Some(at),
            ..Changes::default()
        };
        assert!(store
            .execution_update(&ExecutionKey::new("email", "later"), Guard::Any, &moved)
            .unwrap());
    })
}

/// Finding 4: a request carrying the version it was shown must not overwrite a change that
/// landed between the dashboard's check and its write. Without the version in the write's
/// guard (the check read the version, the write was guarded by "not picked" only), the
/// reschedule below overwrote the concurrent move and answered 200.
#[tokio::test]
async fn a_change_between_check_and_write_is_never_overwritten() {
    let key = ExecutionKey::new("email", "later");
    let (_dir, store, web) = racing(key.clone());
    let theirs = DateTime::parse_from_rfc3339("2031-05-06T07:08:09Z")
        .unwrap()
        .with_timezone(&Utc);
    for action in ["reschedule", "run-now", "cancel"] {
        // The version the page showed: current when the dashboard checks it.
        let before = store.inner.execution_get(&key).unwrap().unwrap();
        let body = format!(
            r#"{{"version": {}, "at": "2030-01-02T03:04:05Z"}}"#,
            before.version
        );
        store.arm(concurrent_move(theirs + Duration::seconds(before.version)));
        let r = api_post(&web, &format!("/api/executions/email/later/{action}"), body).await;
        assert_eq!(r.status, StatusCode::CONFLICT, "{action}: {}", r.body);
        let after = store
            .inner
            .execution_get(&key)
            .unwrap()
            .expect("the row is still there");
        assert_eq!(
            after.execution_time,
            theirs + Duration::seconds(before.version),
            "{action}: the concurrent change stands"
        );
        assert_eq!(after.version, before.version + 1, "{action}: only theirs");
    }
}

/// The same for a confirmed bulk action: a failing row confirmed at one version and changed
/// right after the dashboard checked it is left alone and listed as skipped.
#[tokio::test]
async fn a_bulk_row_changed_after_its_check_is_left_alone() {
    let key = ExecutionKey::new("email", "later");
    let (_dir, store, web) = racing(key.clone());
    let failing = Changes {
        consecutive_failures: Some(2),
        ..Changes::default()
    };
    assert!(store
        .inner
        .execution_update(&key, Guard::Any, &failing)
        .unwrap());
    let shown = store.inner.execution_get(&key).unwrap().unwrap();
    let theirs = DateTime::parse_from_rfc3339("2031-05-06T07:08:09Z")
        .unwrap()
        .with_timezone(&Utc);
    store.arm(concurrent_move(theirs));
    let r = api_post(
        &web,
        "/api/tasks/email/bulk/cancel",
        format!(
            r#"{{"rows": [{{"instance": "later", "version": {}}}]}}"#,
            shown.version
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let result: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(result["done"], 0, "{result}");
    assert_eq!(result["skipped"][0]["instance"], "later", "{result}");
    let after = store
        .inner
        .execution_get(&key)
        .unwrap()
        .expect("not cancelled");
    assert_eq!(after.execution_time, theirs);
}

/// Finding 6, the read itself: the paused tasks were read whole (`paused_list`, every row of
/// `<table>_paused`) by the overview, `/api/lag`, `/metrics`, a task's page, an execution's
/// page and the pause API, and capped only afterwards. Now they read a bounded page and look
/// names up: no page calls `paused_list`. Without the fix this test counted one unbounded
/// read per page.
#[tokio::test]
async fn no_page_reads_the_paused_tasks_unbounded() {
    let (_dir, store, web) = racing(ExecutionKey::new("email", "later"));
    for name in ["email", "gone-1", "gone-2"] {
        assert!(store
            .inner
            .paused_set(name, Utc::now(), Some("test"))
            .unwrap());
    }
    for uri in [
        "/",
        "/api/overview",
        "/api/lag",
        "/metrics",
        "/tasks/email",
        "/api/tasks/email",
        "/executions/email/later",
        "/api/executions/email/later",
    ] {
        let req = Request::get(uri)
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        let r = send(&router(web.clone()), req).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.body);
        assert!(r.body.contains("email"), "{uri}: {}", r.body);
    }
    let r = api_post(&web, "/api/tasks/email/resume", String::new()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        store.paused_lists.load(Ordering::SeqCst),
        0,
        "the paused tasks were read whole"
    );
}
