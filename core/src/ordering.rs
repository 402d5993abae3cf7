//! The ordering policy: in which order eligible (due, unclaimed) rows are handed out.
//!
//! The policy is data. Dialects render it as `ORDER BY` ([`crate::dialect`]); the engine uses
//! [`Execution::cmp_in_hand_out_order`](crate::Execution::cmp_in_hand_out_order) to keep the same order for rows a backend returns unordered
//! (for example `UPDATE ... RETURNING`).

use crate::error::DocketError;
use chrono::{DateTime, Utc};

/// The primary ordering, applied after priority (when enabled).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PrimaryOrder {
    /// `execution_time` ascending: the scheduler default.
    #[default]
    ExecutionTime,
    /// Record date ascending, then record order ascending: the work-queue default (a missing
    /// record date was resolved to the start of the item's batch when it was enqueued).
    Fifo,
    /// Attributes of `custom_attributes`, in the given order; a missing attribute sorts last.
    /// Turning it on for a task type turns FIFO off for it.
    Custom(Vec<CustomKey>),
}

impl PrimaryOrder {
    /// Parses a custom order from comma-separated [`CustomKey::parse`] specs, e.g.
    /// `team:text:asc,score:number:desc`.
    pub fn parse_custom(spec: &str) -> Result<Self, DocketError> {
        spec.split(',')
            .map(CustomKey::parse)
            .collect::<Result<Vec<_>, _>>()
            .map(PrimaryOrder::Custom)
    }

    /// The keys of a custom order (none for the others).
    pub fn custom_keys(&self) -> &[CustomKey] {
        match self {
            PrimaryOrder::Custom(keys) => keys,
            _ => &[],
        }
    }
}

/// How a custom attribute compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// By Unicode code point (binary collation on every backend).
    Text,
    /// Numerically: a JSON number, or a JSON string holding a plain decimal (`"2"`, `"-3.5"`:
    /// [`NUMBER_TEXT`](crate::dialect::NUMBER_TEXT)), as OPENJSON's typed `WITH` columns convert
    /// it; any other value is missing.
    Number,
    /// As an instant: a JSON string in the record-date form `YYYY-MM-DDThh:mm:ss[.f...][Z]`
    /// (UTC; [`TIMESTAMP_TEXT`](crate::dialect::TIMESTAMP_TEXT)), compared as text, which is
    /// time order for that form (intake normalizes to `YYYY-MM-DDThh:mm:ss.ffffffZ`); any
    /// other value is missing.
    Timestamp,
}

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// Smallest first.
    #[default]
    Asc,
    /// Largest first.
    Desc,
}

/// One key of a [`PrimaryOrder::Custom`] ordering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomKey {
    /// The attribute's name in `custom_attributes`.
    pub attribute: AttributeName,
    /// How it compares.
    pub kind: KeyType,
    /// Direction; missing attributes sort last either way.
    pub direction: Direction,
}

impl CustomKey {
    /// Parses `name[:text|number|timestamp[:asc|desc]]` (default `text`, `asc`), e.g.
    /// `score:number:desc`.
    pub fn parse(spec: &str) -> Result<Self, DocketError> {
        let mut parts = spec.trim().split(':');
        let name = parts.next().unwrap_or_default();
        let bad = |what: &str| DocketError::InvalidConfig(format!("order key {spec:?}: {what}"));
        let kind = match parts.next() {
            None | Some("text") => KeyType::Text,
            Some("number") => KeyType::Number,
            Some("timestamp") => KeyType::Timestamp,
            Some(other) => {
                return Err(bad(&format!(
                    "type {other:?} is not text, number or timestamp"
                )))
            }
        };
        let direction = match parts.next() {
            None | Some("asc") => Direction::Asc,
            Some("desc") => Direction::Desc,
            Some(other) => return Err(bad(&format!("direction {other:?} is not asc or desc"))),
        };
        if parts.next().is_some() {
            return Err(bad("expected name[:type[:direction]]"));
        }
        Self::new(name, kind, direction)
    }

    /// A key; the name is validated (see [`AttributeName::parse`]).
    pub fn new(attribute: &str, kind: KeyType, direction: Direction) -> Result<Self, DocketError> {
        Ok(Self {
            attribute: AttributeName::parse(attribute)?,
            kind,
            direction,
        })
    }
}

/// Longest attribute name accepted.
pub const MAX_ATTRIBUTE_LEN: usize = 64;

/// A validated custom-attribute name: `[A-Za-z_][A-Za-z0-9_]*`, at most
/// [`MAX_ATTRIBUTE_LEN`] characters. Like an identifier, it cannot hold a quote, semicolon or
/// comment marker: the JSON path built from it (`$."name"`) is bound as a parameter where the
/// database takes one, and written as a literal where an index must match the query's text
/// (`Dialect::json_attribute`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AttributeName(String);

impl AttributeName {
    /// Validates `name`.
    pub fn parse(name: &str) -> Result<Self, DocketError> {
        let invalid = |reason| DocketError::InvalidAttribute {
            name: name.to_owned(),
            reason,
        };
        let mut chars = name.chars();
        match chars.next() {
            None => return Err(invalid("it is empty")),
            Some(c) if !(c.is_ascii_alphabetic() || c == '_') => {
                return Err(invalid("it must start with a letter or '_'"))
            }
            Some(_) => {}
        }
        if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(invalid("only letters, digits and '_' are allowed"));
        }
        if name.len() > MAX_ATTRIBUTE_LEN {
            return Err(invalid("it is longer than 64 characters"));
        }
        Ok(Self(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The SQL/JSON path of the attribute, `$."name"`.
    pub fn json_path(&self) -> String {
        format!("$.\"{}\"", self.0)
    }
}

impl std::fmt::Display for AttributeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which priority level a due-query (or a work-queue read) reads.
///
/// With priority on, stores probe levels one at a time, highest first (`Exactly`), then `Null`:
/// each probe is one index range `priority = ? AND execution_time <= ?` in execution-time order,
/// so its cost does not depend on how many future rows wait at that level. `Any` is the single
/// statement ordered by the whole policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Every level, ordered by the full policy.
    Any,
    /// Rows with this priority.
    Exactly(i16),
    /// Rows without priority.
    Null,
}

impl Level {
    /// Whether an execution with `priority` belongs to this level.
    pub fn holds(self, priority: Option<i16>) -> bool {
        match self {
            Level::Any => true,
            Level::Exactly(p) => priority == Some(p),
            Level::Null => priority.is_none(),
        }
    }

    /// The priority of [`Level::Exactly`]; `None` for the others.
    pub fn priority(self) -> Option<i16> {
        match self {
            Level::Exactly(p) => Some(p),
            Level::Any | Level::Null => None,
        }
    }
}

/// How a poll shares its batch among priority levels (only with priority on).
///
/// Every mode reads the same per-level index ranges with the same SQL; they differ only in
/// which levels a poll probes, in which order, with how much room and up to which
/// `execution_time` bound. The hand-out is decided in core, so it is identical on every backend.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PriorityMode {
    /// Higher priority first, always (db-scheduler's priority; the default). A level is served
    /// only when every level above it has no due work: it can starve.
    #[default]
    Strict,
    /// Each poll's batch goes to the level furthest behind its weighted share (stride
    /// scheduling over polls), unused room passing to the next level; see [`Weights`].
    Weighted(Weights),
    /// An execution's effective priority rises with the time it has been due; see [`Aging`].
    Aging(Aging),
}

/// Weights of [`PriorityMode::Weighted`].
///
/// A level's share of the executions handed out, while several levels have due work, is its
/// weight divided by the sum of the weights of the levels with due work. A poll gives its whole
/// batch to the level whose received count divided by weight is lowest (ties: the higher
/// level), so each poll stays one index range in the common case; a level found with less due
/// work than the room passes the rest on in the same order. A level that was idle does not bank
/// credit: it starts level with the least-served busy level. So a level with due work is served
/// at least once every `sum of weights / its weight` polls (rounded up).
///
/// A level without a configured weight takes the weight of the nearest configured level below
/// it, or, when none is below, of the lowest configured level; executions without priority
/// (NULL) take the lowest configured level's weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weights {
    /// `(level, weight)`, ascending by level, weights at least 1.
    by_level: Vec<(i16, u32)>,
}

impl Default for Weights {
    /// HIGH (90) 70, MEDIUM (50) 20, LOW (10) 10.
    fn default() -> Self {
        Self {
            by_level: vec![(10, 10), (50, 20), (90, 70)],
        }
    }
}

impl Weights {
    /// Weights per level; each at least 1, at least one level, no level twice.
    pub fn new(levels: &[(i16, u32)]) -> Result<Self, DocketError> {
        let bad = |msg: String| {
            Err(DocketError::InvalidConfig(format!(
                "priority weights: {msg}"
            )))
        };
        if levels.is_empty() {
            return bad("at least one level needs a weight".into());
        }
        let mut by_level = levels.to_vec();
        by_level.sort_unstable();
        for pair in by_level.windows(2) {
            if pair[0].0 == pair[1].0 {
                return bad(format!("level {} is given twice", pair[0].0));
            }
        }
        if let Some((level, _)) = by_level.iter().find(|(_, w)| *w == 0) {
            return bad(format!("level {level} has weight 0 (it would starve)"));
        }
        Ok(Self { by_level })
    }

    /// Parses `level:weight,...`, e.g. `90:70,50:20,10:10`.
    pub fn parse(spec: &str) -> Result<Self, DocketError> {
        let pairs = spec
            .split(',')
            .map(|pair| {
                let (level, weight) = pair.trim().split_once(':').ok_or_else(|| {
                    DocketError::InvalidConfig(format!(
                        "priority weights: {pair:?} is not level:weight"
                    ))
                })?;
                let number = |what: &str, text: &str| {
                    DocketError::InvalidConfig(format!(
                        "priority weights: {what} {text:?} is not a number in range"
                    ))
                };
                Ok((
                    level.trim().parse().map_err(|_| number("level", level))?,
                    weight
                        .trim()
                        .parse()
                        .map_err(|_| number("weight", weight))?,
                ))
            })
            .collect::<Result<Vec<_>, DocketError>>()?;
        Self::new(&pairs)
    }

    /// The weight of `level` (`None`: executions without priority), by the rule above.
    pub fn weight_of(&self, level: Option<i16>) -> u32 {
        let lowest = self.by_level.first().map_or(1, |(_, w)| *w);
        let Some(level) = level else {
            return lowest;
        };
        self.by_level
            .iter()
            .rev()
            .find(|(l, _)| *l <= level)
            .map_or(lowest, |(_, w)| *w)
    }

    /// The configured `(level, weight)` pairs, ascending by level.
    pub fn levels(&self) -> &[(i16, u32)] {
        &self.by_level
    }
}

/// The state of [`PriorityMode::Weighted`] between hand-outs (stride scheduling): per level
/// that was busy in the last round, what it received divided by its weight (its pass).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stride {
    passes: Vec<(Level, f64)>,
}

impl Stride {
    /// `levels` (given in tie-break order: higher level first) lowest pass first, each with its
    /// pass. A level that was idle in the last round starts level with the least-served busy
    /// one: idle time banks no credit.
    pub fn order(&self, levels: impl IntoIterator<Item = Level>) -> Vec<(Level, f64)> {
        let floor = self
            .passes
            .iter()
            .map(|(_, p)| *p)
            .reduce(f64::min)
            .unwrap_or(0.0);
        let mut order: Vec<(usize, Level, f64)> = levels
            .into_iter()
            .enumerate()
            .map(|(i, level)| {
                let pass = self
                    .passes
                    .iter()
                    .find(|(l, _)| *l == level)
                    .map_or(floor, |b| b.1);
                (i, level, pass)
            })
            .collect();
        order.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)));
        order.into_iter().map(|(_, l, p)| (l, p)).collect()
    }

    /// Ends a round: `served` holds each level of the round's [`Stride::order`] with its pass
    /// there and what it received; they are the busy levels of the next round.
    pub fn settle(
        &mut self,
        weights: &Weights,
        served: impl IntoIterator<Item = (Level, f64, usize)>,
    ) {
        self.passes = served
            .into_iter()
            .map(|(level, pass, received)| {
                let weight = f64::from(weights.weight_of(level.priority()).max(1));
                (level, pass + received as f64 / weight)
            })
            .collect();
    }
}

/// Settings of [`PriorityMode::Aging`].
///
/// An execution of level `L` that has been due for `wait` has the effective priority
/// `L + min(cap, floor(wait / step))`; executions without priority age from one below the
/// lowest level present. Due executions are handed out by effective priority (higher first),
/// then by level (higher first), then by execution time. So an execution of level `L` goes
/// before fresh executions of level `H > L` once it has been due for `(H - L + 1) x step`,
/// provided `cap > H - L`; with a smaller cap it never passes them.
///
/// The poll reads each level's index range up to an `execution_time` bound computed from these
/// values (`now - k x step`), so it stays one index range per level and band; the oldest due
/// time of each level is cached with the level list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aging {
    step: std::time::Duration,
    cap: i16,
}

impl Default for Aging {
    /// One level per minute, at most 100 levels.
    fn default() -> Self {
        Self {
            step: std::time::Duration::from_secs(60),
            cap: 100,
        }
    }
}

impl Aging {
    /// One level per `step` of waiting, at most `cap` levels; `step` at least a millisecond,
    /// `cap` at least 1.
    pub fn new(step: std::time::Duration, cap: i16) -> Result<Self, DocketError> {
        if step < std::time::Duration::from_millis(1) {
            return Err(DocketError::InvalidConfig(format!(
                "priority aging: step must be at least 1 ms, got {step:?}"
            )));
        }
        if cap < 1 {
            return Err(DocketError::InvalidConfig(format!(
                "priority aging: cap must be at least 1, got {cap}"
            )));
        }
        Ok(Self { step, cap })
    }

    /// The waiting time that raises the effective priority by one.
    pub fn step(&self) -> std::time::Duration {
        self.step
    }

    /// The most an execution's priority rises.
    pub fn cap(&self) -> i16 {
        self.cap
    }

    /// The effective priority of an execution of base level `base` due since `due_at`.
    pub fn effective(&self, base: i32, due_at: DateTime<Utc>, now: DateTime<Utc>) -> i32 {
        let wait = (now - due_at).to_std().unwrap_or_default();
        let steps = wait.as_nanos() / self.step.as_nanos().max(1);
        base + i32::from(self.cap).min(i32::try_from(steps).unwrap_or(i32::MAX))
    }

    /// The latest `execution_time` of an execution of base level `base` whose effective
    /// priority is at least `target` at `now` (`target - base` within `0..=cap`).
    pub fn due_by(&self, base: i32, target: i32, now: DateTime<Utc>) -> DateTime<Utc> {
        let steps = u32::try_from((target - base).max(0)).unwrap_or(u32::MAX);
        chrono::Duration::from_std(self.step.saturating_mul(steps))
            .ok()
            .and_then(|wait| now.checked_sub_signed(wait))
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }
}

/// Priority toggle in front of a primary order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrderingPolicy {
    /// When true, `priority` descending comes first, NULL priority ranking below every value.
    /// When false, no statement reads or writes the `priority` column.
    pub priority: bool,
    /// How a poll shares its batch among levels (with priority on; ignored with it off).
    pub mode: PriorityMode,
    /// The order after priority.
    pub primary: PrimaryOrder,
}

impl OrderingPolicy {
    /// Execution time only, priority off (the default).
    pub fn execution_time() -> Self {
        Self::default()
    }

    /// Priority descending, then execution time.
    pub fn priority_then_execution_time() -> Self {
        Self {
            priority: true,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Execution;
    use chrono::{TimeZone, Utc};

    fn exec(priority: Option<i16>, secs: i64) -> Execution {
        let mut e = Execution::new(
            "t",
            &format!("{priority:?}-{secs}"),
            Utc.timestamp_opt(secs, 0).unwrap(),
        );
        e.priority = priority;
        e
    }

    #[test]
    fn priority_desc_nulls_last_then_time() {
        let mut rows = [
            exec(None, 1),
            exec(Some(1), 2),
            exec(Some(3), 5),
            exec(Some(3), 4),
        ];
        let policy = OrderingPolicy::priority_then_execution_time();
        rows.sort_by(|a, b| a.cmp_in_hand_out_order(b, &policy));
        let order: Vec<_> = rows
            .iter()
            .map(|e| (e.priority, e.execution_time.timestamp()))
            .collect();
        assert_eq!(
            order,
            vec![(Some(3), 4), (Some(3), 5), (Some(1), 2), (None, 1)]
        );
        rows.sort_by(|a, b| a.cmp_in_hand_out_order(b, &OrderingPolicy::execution_time()));
        assert_eq!(rows[0].priority, None);
    }

    #[test]
    fn weights_follow_the_documented_rule() {
        let w = Weights::default();
        assert_eq!(w.weight_of(Some(90)), 70);
        assert_eq!(
            w.weight_of(Some(120)),
            70,
            "above the highest: the highest below"
        );
        assert_eq!(
            w.weight_of(Some(60)),
            20,
            "between: the nearest configured level below"
        );
        assert_eq!(w.weight_of(Some(10)), 10);
        assert_eq!(w.weight_of(Some(-5)), 10, "below every level: the lowest");
        assert_eq!(w.weight_of(None), 10, "NULL: the lowest");
        assert_eq!(Weights::parse("90:70, 50:20,10:10").unwrap(), w);
        for bad in ["", "90", "90:0", "90:1,90:2", "x:1", "90:-1", "40000:1"] {
            assert!(Weights::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn aging_raises_by_step_up_to_the_cap() {
        let a = Aging::new(std::time::Duration::from_secs(60), 5).unwrap();
        let now = Utc.timestamp_opt(1_000_000, 0).unwrap();
        let ago = |s: i64| now - chrono::Duration::seconds(s);
        assert_eq!(a.effective(10, now, now), 10);
        assert_eq!(a.effective(10, ago(59), now), 10);
        assert_eq!(a.effective(10, ago(60), now), 11);
        assert_eq!(a.effective(10, ago(3600), now), 15, "capped");
        assert_eq!(a.effective(10, now + chrono::Duration::seconds(5), now), 10);
        // The bound reaches exactly the executions with that effective priority or more.
        assert_eq!(a.due_by(10, 12, now), ago(120));
        assert_eq!(a.effective(10, a.due_by(10, 12, now), now), 12);
        assert_eq!(a.due_by(10, 9, now), now);
        assert!(Aging::new(std::time::Duration::ZERO, 5).is_err());
        assert!(Aging::new(std::time::Duration::from_secs(1), 0).is_err());
    }

    #[test]
    fn custom_orders_parse_from_specs() {
        let order = PrimaryOrder::parse_custom("team, score:number:desc,at:timestamp").unwrap();
        let keys: Vec<_> = order
            .custom_keys()
            .iter()
            .map(|k| (k.attribute.as_str(), k.kind, k.direction))
            .collect();
        assert_eq!(
            keys,
            [
                ("team", KeyType::Text, Direction::Asc),
                ("score", KeyType::Number, Direction::Desc),
                ("at", KeyType::Timestamp, Direction::Asc),
            ]
        );
        for bad in [
            "",
            "a:int",
            "a:text:up",
            "a:text:asc:x",
            "a';--:text",
            "a,,b",
        ] {
            assert!(PrimaryOrder::parse_custom(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn attribute_names_reject_sql_and_path_syntax() {
        for bad in [
            "", "1a", "a'b", "a\"b", "a;b", "a--b", "a/*b", "a.b", "a b", "a$", "é",
        ] {
            assert!(AttributeName::parse(bad).is_err(), "{bad:?} accepted");
        }
        let ok = AttributeName::parse("score_2").unwrap();
        assert_eq!(ok.json_path(), "$.\"score_2\"");
        assert!(AttributeName::parse(&"a".repeat(65)).is_err());
    }
}
