//! What the pages show and the JSON API returns, read through the client and work-queue APIs
//! only (`SchedulerClient`, `WorkQueue`): no store call and no SQL of its own, and every read
//! bounded by a limit in its statement.
//!
//! States of an execution (`docs/WEB.md`): **due** (not picked, execution time passed),
//! **scheduled** (not picked, in the future), **running** (picked, heartbeat fresh), **dead**
//! (picked, heartbeat at least `dead_after` old: the scheduler's default heartbeat interval x
//! missed-heartbeats limit, 5 min x 6 = 30 min), and **failing** (consecutive failures > 0,
//! across the other four).

mod actions;
mod data;
mod reads;
mod views;

pub use actions::*;
pub use data::*;
pub use reads::*;
pub use views::*;
