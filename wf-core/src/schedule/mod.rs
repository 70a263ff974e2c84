//! Schedules: start a workflow on an interval or a calendar, with an overlap policy and a
//! bounded catch-up window. The specs and policies users write, and a schedule's stored state
//! with the pure decisions made on it; the runtime's scheduler carries them out.
//!
//! May import: `data`, `workflow` (a schedule action names a workflow type).

mod policy;
mod spec;
pub(crate) mod state;

pub use policy::{
    OverlapPolicy, ScheduleAction, ScheduleDescription, SchedulePolicies, ScheduledAction,
    ACTION_ID_SUFFIX_BYTES,
};
pub use spec::{format_utc, CalendarSpec, IntervalSpec, ScheduleSpec, MAX_INTERVAL_MS};
