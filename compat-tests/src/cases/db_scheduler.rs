//! Moving from db-scheduler: adopting a table made by db-scheduler's DDL, poison rows, and a
//! mixed fleet (db-scheduler's statement shapes from foreign threads next to docket
//! schedulers on one table).

use super::{counting_task, strings, WORK};
use crate::db_scheduler::{java_serialized_hello, DbSchedulerNode};
use crate::harness::{
    create_db_scheduler_table, Ctx, DbSchedulerTypes, Foreign, Harness, Need, Space, Toggle,
};
use chrono::Duration;
use docket_core::dialect::{Rendered, SqlWriter};
use docket_core::store::Adopted;
use docket_core::{
    Clock, ExecutionKey, ManualClock, PollingStrategy, Scheduler, SchedulerConfig, SchedulerEvent,
    StoreConfig, StoreError, TableName, Task, TaskDescriptor, TaskError,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

/// How a case adopts a space's table: the library's `StoreInfo::adopt` here, the binary's
/// `docket migrate --adopt` in the CLI tests.
pub type Adopt<'a> = &'a dyn Fn(&dyn Space, Option<&str>) -> Adopted;

const REPORT: TaskDescriptor = TaskDescriptor::new("report");
const EMAIL: TaskDescriptor = TaskDescriptor::new("email");

fn key(task: &str, id: &str) -> ExecutionKey {
    ExecutionKey::new(task, id)
}

/// The tasks of the adoption flow: `report` reads its data (JSON), `email` ignores it. Each
/// run is recorded as `task/instance`, each failure's message kept.
fn tasks(ran: &Arc<Mutex<Vec<String>>>) -> Vec<Task> {
    let record = |ran: &Arc<Mutex<Vec<String>>>| {
        let ran = Arc::clone(ran);
        move |e: &docket_core::Execution| {
            ran.lock()
                .unwrap()
                .push(format!("{}/{}", e.task_name, e.task_instance));
        }
    };
    let (report_ran, email_ran) = (record(ran), record(ran));
    vec![
        Task::one_time(REPORT, move |e, _| {
            report_ran(e);
            let text: Option<String> = e.data().map_err(|err| TaskError::new(err.to_string()))?;
            assert_eq!(text.as_deref(), Some("hello"));
            Ok(())
        }),
        Task::one_time(EMAIL, move |e, _| {
            email_ran(e);
            Ok(())
        }),
    ]
}

fn scheduler(
    space: &dyn Space,
    priority: bool,
    clock: &ManualClock,
    polling: PollingStrategy,
    tasks: Vec<Task>,
    events: &Arc<Mutex<Vec<SchedulerEvent>>>,
) -> Scheduler {
    let seen = Arc::clone(events);
    Scheduler::builder(space.store(StoreConfig::with_priority(priority), None))
        .clock(Arc::new(clock.clone()))
        .config(SchedulerConfig {
            // One worker: `run_due` runs executions in hand-out order.
            threads: 1,
            polling,
            scheduler_name: "docket-1".into(),
            ..SchedulerConfig::default()
        })
        .tasks(tasks)
        .listener(Arc::new(move |e: &SchedulerEvent| {
            seen.lock().unwrap().push(e.clone())
        }))
        .build()
        .expect("the adopted table has what the scheduler needs")
}

/// db-scheduler's table, adopted with `StoreInfo::adopt`; see [`adoption_flow`].
pub fn db_scheduler_table_is_adopted(h: &dyn Harness, t: Toggle) {
    adoption_flow(h, t, &|space, to| {
        space
            .store(StoreConfig::default(), None)
            .adopt(to)
            .expect("the db-scheduler table is adopted")
    });
}

/// A table made by db-scheduler's DDL (priority off: an older one without `priority`; on:
/// today's, without its priority index), with rows inserted as db-scheduler inserts them
/// (`consecutive_failures` NULL, Java-serialized or JSON `task_data`), is adopted by `adopt`.
/// A docket scheduler runs every row of its tasks; data that is not docket's fails only its
/// execution, with a clear error; rows of unknown tasks stay untouched. Then (priority off:
/// after the priority migration) a priority-on scheduler runs db-scheduler rows with
/// priorities in priority order.
///
/// Run for every DDL variant the backend lists ([`Space::db_scheduler_variants`]), each
/// written by a node in that variant's session time zone.
pub fn adoption_flow(h: &dyn Harness, t: Toggle, adopt: Adopt<'_>) {
    for types in h.space().db_scheduler_variants() {
        adoption_flow_on(h, t, adopt, types);
    }
}

fn adoption_flow_on(h: &dyn Harness, t: Toggle, adopt: Adopt<'_>, types: DbSchedulerTypes) {
    let space = h.space();
    let foreign = space.foreign_in(types.node_time_zone);
    let ddl = types.ddl(foreign.dialect(), t.on());
    for stmt in &ddl.table {
        foreign.batch(stmt).expect("db-scheduler's DDL runs");
    }
    let clock = ManualClock::new(Ctx::t0());
    let t0 = clock.now();
    let node = DbSchedulerNode::new(&*foreign, TableName::default(), "db-scheduler-1", t.on())
        .in_zone(types.node_time_zone);
    let json = Some(b"\"hello\"".to_vec());
    let rows = [
        (
            key("report", "java"),
            Some(java_serialized_hello()),
            Some(50),
        ),
        (key("report", "json"), json, Some(50)),
        (key("email", "low"), None, Some(10)),
        (key("email", "high"), None, Some(90)),
        (key("legacy", "1"), Some(java_serialized_hello()), Some(50)),
        (key("legacy", "2"), None, None),
    ];
    for (k, data, priority) in &rows {
        node.insert(k, data.clone(), t0 - Duration::minutes(1), *priority)
            .expect("db-scheduler's insert");
    }
    let legacy_before: Vec<_> = [key("legacy", "1"), key("legacy", "2")]
        .iter()
        .map(|k| node.get(k).unwrap().expect("inserted"))
        .collect();

    let base = |m: &str| format!("{m}@scheduled_tasks");
    if t.on() {
        // The migration guide's mixed-fleet path: up to 0002 only, so db-scheduler keeps its
        // table shape; priority-on schedulers run on it below.
        let done = adopt(&*space, Some("0002_priority"));
        assert_eq!(done.adopted, [base("0001_base"), base("0002_priority")]);
        assert_eq!(
            done.created_indexes.len(),
            1,
            "only the missing priority index is created: {done:?}"
        );
        assert_eq!(
            adopt(&*space, Some("0002_priority")),
            Adopted::default(),
            "adopting twice does nothing"
        );
    } else {
        let done = adopt(&*space, Some("0001_base"));
        assert_eq!(
            done,
            Adopted {
                adopted: vec![base("0001_base")],
                ..Adopted::default()
            },
            "the base indexes exist: nothing is created"
        );
    }

    // Every row of docket's tasks runs once; Java data fails its execution only.
    let ran = Arc::new(Mutex::new(Vec::new()));
    let events = Arc::new(Mutex::new(Vec::new()));
    let first = scheduler(
        &*space,
        t.on(),
        &clock,
        PollingStrategy::fetch(),
        tasks(&ran),
        &events,
    );
    assert_eq!(first.run_due().unwrap(), 4);
    let mut expected = strings(&["report/java", "report/json", "email/low", "email/high"]);
    let mut got = ran.lock().unwrap().clone();
    if t.on() {
        let at = |id: &str| got.iter().position(|r| r == id).unwrap();
        assert!(
            at("email/high") < at("email/low"),
            "priority order: {got:?}"
        );
    }
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    let failures: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            SchedulerEvent::ExecutionFailed {
                execution, error, ..
            } => Some(format!("{}: {error}", execution.task_instance)),
            _ => None,
        })
        .collect();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].starts_with("java: ") && failures[0].contains("Java-serialized"),
        "a clear error: {failures:?}"
    );
    let java = node
        .get(&key("report", "java"))
        .unwrap()
        .expect("retried later");
    assert_eq!((java.picked, java.consecutive_failures), (false, 1));
    // The instants docket wrote (the retry time, the failure) read the same from the node's
    // session, whatever its time zone.
    let docket_view = space
        .store(StoreConfig::default(), None)
        .execution_get(&key("report", "java"))
        .unwrap()
        .expect("retried later");
    assert_eq!(
        (java.execution_time, java.last_failure),
        (docket_view.execution_time, docket_view.last_failure),
        "{}",
        types.time
    );
    assert_eq!(docket_view.last_failure, Some(t0), "{}", types.time);
    assert_eq!(
        node.count().unwrap(),
        3,
        "report/java and the legacy rows remain"
    );
    for before in &legacy_before {
        assert_eq!(
            node.get(&before.key()).unwrap().as_ref(),
            Some(before),
            "rows of unknown tasks stay untouched"
        );
    }
    assert_eq!(first.check_unresolved().unwrap(), strings(&["legacy"]));

    // Priority on (priority off: after the priority migration, applied as usual).
    if !t.on() {
        space.migrate(&StoreConfig::with_priority(true), None);
        assert!(
            space
                .store(StoreConfig::default(), None)
                .migrate(None)
                .unwrap()
                .is_empty(),
            "up to date"
        );
    }
    let node = DbSchedulerNode::new(&*foreign, TableName::default(), "db-scheduler-1", true)
        .in_zone(types.node_time_zone);
    for (id, priority) in [("p10", Some(10)), ("p90", Some(90)), ("none", None)] {
        node.insert(&key("email", id), None, t0, priority).unwrap();
    }
    ran.lock().unwrap().clear();
    let second = scheduler(
        &*space,
        true,
        &clock,
        PollingStrategy::lock_and_fetch(),
        tasks(&ran),
        &events,
    );
    assert_eq!(second.run_due().unwrap(), 3);
    assert_eq!(
        *ran.lock().unwrap(),
        strings(&["email/p90", "email/p10", "email/none"]),
        "priority first, NULL last"
    );
    for before in &legacy_before {
        assert_eq!(node.get(&before.key()).unwrap().as_ref(), Some(before));
    }
    // The rest of docket's migrations apply on top of the adopted ones.
    space
        .store(StoreConfig::default(), None)
        .migrate(None)
        .expect("the remaining migrations apply");
    assert!(
        adopt(&*space, None).applied.is_empty(),
        "adopted and migrated"
    );
}

/// `ALTER TABLE scheduled_tasks <rest>` in the space's dialect.
fn alter(foreign: &dyn Foreign, rest: &str) -> Rendered {
    let mut w = SqlWriter::new(foreign.dialect());
    w.push("ALTER TABLE ")
        .table(&TableName::default())
        .push(" ")
        .push(rest);
    w.finish()
}

/// A column of the wrong type or a missing column is a typed error naming the column, and
/// nothing is recorded or created.
pub fn adopting_an_incompatible_table_names_the_column(h: &dyn Harness, _t: Toggle) {
    let space = h.space();
    let foreign = space.foreign();
    create_db_scheduler_table(&*space, &*foreign, false);
    let store = space.store(StoreConfig::default(), None);
    foreign
        .execute(&alter(&*foreign, "ADD priority VARCHAR(10)"))
        .unwrap();
    match store.adopt(None) {
        Err(StoreError::Incompatible { column, reason, .. }) => {
            assert_eq!(column, "priority");
            assert!(reason.contains("integer"), "{reason}");
        }
        other => panic!("expected Incompatible, got {other:?}"),
    }
    foreign
        .execute(&alter(&*foreign, "DROP COLUMN picked_by"))
        .unwrap();
    let err = store.adopt(None).expect_err("picked_by is missing");
    assert!(
        matches!(&err, StoreError::Incompatible { column, reason, .. }
            if column == "picked_by" && reason == "is missing"),
        "{err}"
    );
    assert!(err.to_string().contains("picked_by"), "{err}");
    // Nothing was recorded: a plain migration still finds a table it does not know.
    assert!(matches!(
        store.migrate(None),
        Err(StoreError::NeedsAdopt { .. })
    ));
}

/// A plain migration of a table made by db-scheduler's DDL (no docket history) is a typed
/// error naming `--adopt`, and touches nothing: the table keeps its rows and its shape, and
/// adopting it afterwards works as on a table never migrated.
pub fn migrating_a_foreign_table_names_adopt(h: &dyn Harness, t: Toggle) {
    let space = h.space();
    let foreign = space.foreign();
    create_db_scheduler_table(&*space, &*foreign, t.on());
    let node = DbSchedulerNode::new(&*foreign, TableName::default(), "db-scheduler-1", t.on());
    node.insert(&key("email", "1"), None, Ctx::t0(), Some(50))
        .unwrap();
    let store = space.store(StoreConfig::with_priority(t.on()), None);
    let err = store.migrate(None).expect_err("the table is not docket's");
    assert!(matches!(err, StoreError::NeedsAdopt { .. }), "{err}");
    assert!(err.to_string().contains("--adopt"), "{err}");
    assert_eq!(node.count().unwrap(), 1, "the row is still there");
    let adopted = store.adopt(None).expect("adopting works afterwards");
    assert_eq!(adopted.adopted[0], "0001_base@scheduled_tasks");
    assert!(store.migrate(None).unwrap().is_empty(), "up to date");
}

/// A row that cannot be decoded (each backend's own unreadable value: PostgreSQL's
/// `-infinity`, MySQL's zero date, ...) next to good rows, with both polling strategies: the
/// good rows are handed out in one poll, the poison row is reported (event with key and
/// column) and never left claimed, and later polls leave it out until the hold-back ends.
pub fn poison_rows_never_block_a_poll(h: &dyn Harness, t: Toggle) {
    for polling in [PollingStrategy::fetch(), PollingStrategy::lock_and_fetch()] {
        let ctx = Ctx::new(h, t);
        if polling == PollingStrategy::lock_and_fetch() {
            ctx.require(Need::LockAndFetch);
        }
        let client = ctx.client();
        for id in ["1", "2", "3", "bad"] {
            client.schedule(WORK.instance(id)).unwrap();
        }
        let bad = key("work", "bad");
        let foreign = ctx.space.foreign();
        let (poison, column) = ctx.space.poison(&TableName::default(), &bad);
        foreign
            .transaction(&mut |s| poison.iter().try_for_each(|p| s.execute(p).map(drop)))
            .expect("the poison value is accepted by the database");
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        let (task, runs) = counting_task(WORK);
        let scheduler = ctx
            .scheduler("s1", polling)
            .task(task)
            .listener(Arc::new(move |e: &SchedulerEvent| {
                seen.lock().unwrap().push(e.clone())
            }))
            .build()
            .unwrap();
        let state = || picked_and_version(&*foreign, &bad);

        assert_eq!(scheduler.run_due().unwrap(), 3, "{polling:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        let handed = events.lock().unwrap().iter().find_map(|e| match e {
            SchedulerEvent::Handed { executions, .. } => Some(super::ids(executions)),
            _ => None,
        });
        let mut first = handed.expect("a poll handed rows out");
        first.sort();
        assert_eq!(first, strings(&["1", "2", "3"]), "one poll, every good row");
        let reported = || {
            events
                .lock()
                .unwrap()
                .iter()
                .filter_map(|e| match e {
                    SchedulerEvent::PoisonRow { key, column, .. } => Some((key.clone(), *column)),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(reported(), [(bad.clone(), column)], "{polling:?}");
        let (picked, version) = state();
        assert!(!picked, "never left claimed ({polling:?})");

        // Not picked afterwards, not reported again while held back.
        assert_eq!(scheduler.run_due().unwrap(), 0);
        assert_eq!(state(), (false, version), "untouched by later polls");
        assert_eq!(reported().len(), 1);

        // After the hold-back it is read, reported and skipped again: still never claimed.
        ctx.clock.advance(std::time::Duration::from_secs(11 * 60));
        assert_eq!(scheduler.run_due().unwrap(), 0);
        assert_eq!(reported().len(), 2);
        assert!(!state().0);
    }
}

/// `picked` and `version` of a row, read with plain SQL (docket cannot decode it).
fn picked_and_version(foreign: &dyn Foreign, key: &ExecutionKey) -> (bool, i64) {
    let mut w = SqlWriter::new(foreign.dialect());
    w.push("SELECT picked, version FROM ")
        .table(&TableName::default())
        .push(" WHERE task_name = ")
        .bind(key.task_name.as_str())
        .push(" AND task_instance = ")
        .bind(key.task_instance.as_str());
    let mut row = foreign
        .query(&w.finish())
        .unwrap()
        .pop()
        .expect("the row exists");
    (row.bool("picked").unwrap(), row.i64("version").unwrap())
}

/// A failed poll of a started scheduler (here: its table was dropped) is a listener event.
pub fn poll_failures_are_listener_events(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let (task, _) = counting_task(WORK);
    let scheduler = ctx
        .scheduler("s1", PollingStrategy::fetch())
        .task(task)
        .listener(Arc::new(move |e: &SchedulerEvent| {
            if let SchedulerEvent::PollFailed { error } = e {
                let _ = tx.lock().unwrap().send(error.clone());
            }
        }))
        .build()
        .unwrap();
    let foreign = ctx.space.foreign();
    let mut drop_table = SqlWriter::new(foreign.dialect());
    drop_table.push("DROP TABLE ").table(&TableName::default());
    foreign.execute(&drop_table.finish()).unwrap();
    scheduler.start().unwrap();
    let error = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the failed poll is reported");
    assert!(!error.is_empty());
    scheduler.stop();
}

/// db-scheduler nodes (foreign threads sending its pick, lock-and-fetch, heartbeat and
/// completion statements) and docket schedulers (both polling strategies) work one table:
/// every execution runs exactly once. Then fencing, both ways: a revival by either side
/// rejects the old owner's heartbeat and completion.
pub fn mixed_fleet_with_db_scheduler_nodes(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let foreign = ctx.space.foreign();
    let now = ctx.clock.now();
    let table = TableName::default();
    let n = 120;
    let client = ctx.client();
    let node0 = DbSchedulerNode::new(&*foreign, table.clone(), "dbs-0", t.on());
    for i in 0..n {
        let id = format!("{i:03}");
        if i % 2 == 0 {
            client.schedule(WORK.instance(&id)).unwrap();
        } else {
            node0
                .insert(&key("work", &id), None, now, Some((i % 7) as i16 * 10))
                .unwrap();
        }
    }
    let runs: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let record = |by: &str, id: &str| {
        runs.lock()
            .unwrap()
            .entry(id.to_owned())
            .or_default()
            .push(by.to_owned());
    };
    let docket_runs = Arc::clone(&runs);
    let work = Task::one_time(WORK, move |e, ctx| {
        docket_runs
            .lock()
            .unwrap()
            .entry(e.task_instance.clone())
            .or_default()
            .push(ctx.scheduler_name.clone());
        Ok(())
    });
    let lock_and_fetch = foreign.dialect().capabilities().lock_and_fetch.is_some();
    let mut strategies = vec![("docket-fetch", PollingStrategy::fetch())];
    if lock_and_fetch {
        strategies.push(("docket-lock", PollingStrategy::lock_and_fetch()));
    }
    let schedulers: Vec<_> = strategies
        .into_iter()
        .map(|(name, polling)| ctx.build(name, polling, vec![work.clone()]))
        .collect();
    for s in &schedulers {
        s.start().unwrap();
    }
    // db-scheduler's generic lock-and-fetch limits and locks in one query block; a dialect
    // that cannot (Oracle) has only its fetch-then-pick shape.
    let generic_lock = foreign.dialect().capabilities().limit_with_lock;
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for (i, locking) in [(1, false), (2, generic_lock)] {
            let (foreign, done, record) = (&*foreign, &done, &record);
            let table = table.clone();
            scope.spawn(move || {
                let node = DbSchedulerNode::new(foreign, table, &format!("dbs-{i}"), t.on());
                while !done.load(Ordering::SeqCst) {
                    let picked = if locking {
                        node.lock_and_fetch(now, 5).unwrap()
                    } else {
                        let due = node.due(now, 5).unwrap();
                        due.iter()
                            .filter_map(|e| node.pick(e, now).unwrap())
                            .collect()
                    };
                    if picked.is_empty() {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                    for e in picked {
                        record(&node.name, &e.task_instance);
                        assert!(node.heartbeat(&e, now).unwrap(), "our heartbeat holds");
                        assert!(node.complete(&e).unwrap(), "our completion holds");
                    }
                }
            });
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        while node0.count().unwrap() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        done.store(true, Ordering::SeqCst);
    });
    for s in &schedulers {
        s.stop();
    }
    assert_eq!(node0.count().unwrap(), 0, "every execution completed");
    let runs = runs.lock().unwrap().clone();
    let twice: Vec<_> = runs.iter().filter(|(_, by)| by.len() != 1).collect();
    assert!(twice.is_empty(), "ran more than once: {twice:?}");
    assert_eq!(runs.len(), n);
    let mut by: HashMap<&str, usize> = HashMap::new();
    for who in runs.values().flatten() {
        *by.entry(who.as_str()).or_default() += 1;
    }
    eprintln!("mixed fleet ({}): runs by node {by:?}", h.name());

    fencing_both_ways(&ctx, &*foreign, t);
}

/// A db-scheduler node's pick revived by docket, and a docket execution revived by a
/// db-scheduler node: the old owner's heartbeat and completion change nothing.
fn fencing_both_ways(ctx: &Ctx, foreign: &dyn Foreign, t: Toggle) {
    let node = DbSchedulerNode::new(foreign, TableName::default(), "dbs-1", t.on());
    let (rescue_task, rescued) = counting_task(WORK);
    let rescuer = ctx.build(
        "docket-rescuer",
        PollingStrategy::fetch(),
        vec![rescue_task],
    );

    // db-scheduler picks, goes silent; docket revives and runs it; the node is fenced.
    ctx.client().schedule(WORK.instance("f1")).unwrap();
    let due = node.due(ctx.clock.now(), 10).unwrap();
    let picked = node
        .pick(&due[0], ctx.clock.now())
        .unwrap()
        .expect("picked");
    ctx.clock.advance(std::time::Duration::from_secs(7 * 60));
    assert_eq!(rescuer.detect_dead().unwrap(), 1);
    assert!(!node.heartbeat(&picked, ctx.clock.now()).unwrap(), "fenced");
    assert!(!node.complete(&picked).unwrap(), "fenced");
    assert_eq!(rescuer.run_due().unwrap(), 1);
    assert_eq!(rescued.load(Ordering::SeqCst), 1);
    assert_eq!(node.get(&key("work", "f1")).unwrap(), None);

    // docket runs (and hangs); db-scheduler's dead detection revives it and runs it itself;
    // docket's heartbeat and completion are rejected (LostExecution).
    let super::lifecycle::Hanging {
        scheduler: owner,
        started: started_rx,
        release: release_tx,
        lost,
    } = super::lifecycle::hanging(ctx, "docket-owner", PollingStrategy::fetch());
    ctx.client().schedule(WORK.instance("d1")).unwrap();
    std::thread::scope(|s| {
        let running = s.spawn(|| owner.run_due().unwrap());
        started_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the execution starts within 60 s");
        ctx.clock.advance(std::time::Duration::from_secs(7 * 60));
        let older_than = ctx.clock.now() - Duration::minutes(6);
        let dead = node.dead(older_than).unwrap();
        assert_eq!(super::ids(&dead), strings(&["d1"]));
        assert!(node.revive(&dead[0], ctx.clock.now()).unwrap());
        owner.heartbeat().unwrap();
        let revived = node.get(&key("work", "d1")).unwrap().expect("revived");
        assert_eq!(
            (revived.picked, revived.last_heartbeat),
            (false, None),
            "docket's heartbeat was rejected"
        );
        let mine = node
            .pick(&revived, ctx.clock.now())
            .unwrap()
            .expect("the node picks the revived execution");
        assert!(node.complete(&mine).unwrap());
        release_tx.send(()).unwrap();
        assert_eq!(running.join().unwrap(), 1);
    });
    assert_eq!(*lost.lock().unwrap(), strings(&["d1"]), "docket was fenced");
    assert_eq!(node.count().unwrap(), 0);
}
