//! Schedules: start a workflow on an interval or a calendar, with an overlap policy and a
//! bounded catch-up window, and pause, unpause, trigger, delete, list and describe them.
//!
//! A schedule is a row in the store holding its spec, action, policies and progress. The time
//! keeper looks at due schedules, starts their actions and moves them on; each action's
//! workflow id is derived from the schedule id and the fire time and started with
//! `UseExisting`, so a scheduler that crashes midway and retries never starts one twice, and
//! several engines on one store cannot either (updates are version-checked).

use crate::client::{Client, StartOptions};
use crate::data::payload::{Payload, PayloadError};
use crate::data::run::{IdConflictPolicy, RunStatus};
use crate::engine::Shared;
use crate::error::WfError;
use crate::store::{ScheduleRow, StoreError};
use crate::workflow::WorkflowDefinition;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;
/// How many recent actions a schedule remembers.
const RECENT: usize = 10;
/// How often a schedule with buffered actions checks whether it may start the next one.
const BUFFER_RECHECK_MS: i64 = 1_000;
/// The most fire times processed in one pass (an absurdly fine interval after an outage).
const MAX_FIRES_PER_PASS: usize = 10_000;

/// When a schedule fires: the union of its intervals and calendars.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleSpec {
    /// Fixed intervals, anchored at the Unix epoch plus an offset.
    pub intervals: Vec<IntervalSpec>,
    /// Calendar matches (UTC).
    pub calendars: Vec<CalendarSpec>,
}

/// Every `every`, at `offset` past each multiple of `every` since the Unix epoch
/// (`every: 1 h, offset: 15 min` fires at :15 each hour).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSpec {
    /// The period (at least one millisecond).
    pub every: Duration,
    /// Shift of each fire within the period (less than `every`).
    pub offset: Duration,
}

/// A calendar match in UTC; an empty list means "any". `day_of_week` counts from Sunday = 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarSpec {
    /// Minutes 0-59.
    pub minute: Vec<u8>,
    /// Hours 0-23.
    pub hour: Vec<u8>,
    /// Days of the month 1-31.
    pub day_of_month: Vec<u8>,
    /// Months 1-12.
    pub month: Vec<u8>,
    /// Days of the week 0-6, Sunday = 0.
    pub day_of_week: Vec<u8>,
}

impl CalendarSpec {
    /// Every day at `hour:minute` UTC.
    pub fn daily_at(hour: u8, minute: u8) -> Self {
        CalendarSpec {
            minute: vec![minute],
            hour: vec![hour],
            ..Default::default()
        }
    }

    fn check(&self) -> Result<(), String> {
        let ranges: [(&str, &[u8], u8, u8); 5] = [
            ("minute", &self.minute, 0, 59),
            ("hour", &self.hour, 0, 23),
            ("day_of_month", &self.day_of_month, 1, 31),
            ("month", &self.month, 1, 12),
            ("day_of_week", &self.day_of_week, 0, 6),
        ];
        for (field, values, lo, hi) in ranges {
            if let Some(v) = values.iter().find(|v| **v < lo || **v > hi) {
                return Err(format!("calendar {field} {v} is outside {lo}..={hi}"));
            }
        }
        Ok(())
    }

    fn matches(list: &[u8], v: u32) -> bool {
        list.is_empty() || list.iter().any(|x| u32::from(*x) == v)
    }

    /// The first matching minute strictly after `after_ms`, within five years.
    fn next_after(&self, after_ms: i64) -> Option<i64> {
        let start = (after_ms.div_euclid(MINUTE_MS) + 1) * MINUTE_MS;
        let mut day = start.div_euclid(DAY_MS);
        for _ in 0..(366 * 5) {
            let (_, month, dom) = civil_from_days(day);
            let dow = (day + 4).rem_euclid(7) as u32; // 1970-01-01 was a Thursday
            if Self::matches(&self.month, month)
                && Self::matches(&self.day_of_month, dom)
                && Self::matches(&self.day_of_week, dow)
            {
                for h in 0..24u32 {
                    if !Self::matches(&self.hour, h) {
                        continue;
                    }
                    for m in 0..60u32 {
                        let t = day * DAY_MS + i64::from(h) * 3_600_000 + i64::from(m) * MINUTE_MS;
                        if t >= start && Self::matches(&self.minute, m) {
                            return Some(t);
                        }
                    }
                }
            }
            day += 1;
        }
        None
    }
}

impl ScheduleSpec {
    /// Fires every `every` (at multiples of `every` since the Unix epoch).
    pub fn every(every: Duration) -> Self {
        ScheduleSpec {
            intervals: vec![IntervalSpec {
                every,
                offset: Duration::ZERO,
            }],
            calendars: Vec::new(),
        }
    }

    /// Fires on a calendar match.
    pub fn calendar(calendar: CalendarSpec) -> Self {
        ScheduleSpec {
            intervals: Vec::new(),
            calendars: vec![calendar],
        }
    }

    /// Adds another spec's fire times to this one's.
    pub fn and(mut self, other: ScheduleSpec) -> Self {
        self.intervals.extend(other.intervals);
        self.calendars.extend(other.calendars);
        self
    }

    fn check(&self) -> Result<(), String> {
        if self.intervals.is_empty() && self.calendars.is_empty() {
            return Err("a schedule spec needs at least one interval or calendar".into());
        }
        for i in &self.intervals {
            if i.every.as_millis() == 0 {
                return Err("an interval must be at least 1 ms".into());
            }
            if i.offset >= i.every {
                return Err(format!(
                    "interval offset {:?} must be less than its period {:?}",
                    i.offset, i.every
                ));
            }
        }
        self.calendars.iter().try_for_each(CalendarSpec::check)
    }

    /// The first fire time strictly after `after_ms`.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let intervals = self.intervals.iter().map(|i| {
            let every = i.every.as_millis() as i64;
            let offset = i.offset.as_millis() as i64;
            ((after_ms - offset).div_euclid(every) + 1) * every + offset
        });
        let calendars = self.calendars.iter().filter_map(|c| c.next_after(after_ms));
        intervals.chain(calendars).min()
    }
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `2026-01-01T09:30:00Z` for a time in ms since the Unix epoch.
pub fn format_utc(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(DAY_MS));
    let in_day = ms.rem_euclid(DAY_MS) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60
    )
}

/// What a schedule does when an action is due while the previous one still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum OverlapPolicy {
    /// Skip this action (the default).
    #[default]
    Skip,
    /// Keep one action to start when the running one finishes; skip the rest.
    BufferOne,
    /// Keep every action and start them one after another.
    BufferAll,
    /// Start it anyway, concurrently.
    AllowAll,
    /// Cancel the running action, then start this one once it has ended.
    CancelOther,
}

/// How a schedule behaves under overlap and after an outage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulePolicies {
    /// Overlap policy.
    pub overlap: OverlapPolicy,
    /// Missed fire times older than this (after an outage or a slow scheduler) are dropped,
    /// not replayed; default one minute.
    pub catchup_window: Duration,
}

impl Default for SchedulePolicies {
    fn default() -> Self {
        SchedulePolicies {
            overlap: OverlapPolicy::Skip,
            catchup_window: Duration::from_secs(60),
        }
    }
}

/// What a schedule starts: a workflow of a given type with a fixed input. Each action's
/// workflow id is `<prefix>-<fire time in UTC>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleAction {
    /// The workflow type's wire name.
    pub workflow_type: String,
    /// Prefix of each action's workflow id.
    pub workflow_id_prefix: String,
    /// The encoded input.
    pub input: Payload,
    /// The task queue to start on (`None`: the scheduling engine's).
    #[serde(default)]
    pub task_queue: Option<String>,
}

impl ScheduleAction {
    /// Starts a `W` with `input`; workflow ids `<prefix>-<fire time>`.
    pub fn start<W: WorkflowDefinition>(
        prefix: impl Into<String>,
        input: &W::Input,
    ) -> Result<Self, PayloadError> {
        Ok(ScheduleAction {
            workflow_type: W::NAME.to_string(),
            workflow_id_prefix: prefix.into(),
            input: Payload::encode(input)?,
            task_queue: None,
        })
    }

    /// Starts the action's runs on task queue `name`.
    pub fn on_task_queue(mut self, name: impl Into<String>) -> Self {
        self.task_queue = Some(name.into());
        self
    }
}

/// One action a schedule took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduledAction {
    /// The fire time it was for (ms since the Unix epoch).
    pub fire_ms: i64,
    /// The workflow id it started.
    pub workflow_id: String,
}

/// The stored state of a schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ScheduleState {
    spec: ScheduleSpec,
    action: ScheduleAction,
    policies: SchedulePolicies,
    paused: bool,
    note: String,
    /// Fire times up to here have been handled.
    processed_until_ms: i64,
    /// Fire times waiting for the running action to end.
    buffered: VecDeque<i64>,
    /// Actions that may still be running.
    active: Vec<String>,
    recent: VecDeque<ScheduledAction>,
    skipped: u64,
    missed: u64,
    last_error: Option<String>,
}

/// What [`ScheduleHandle::describe`] reports.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleDescription {
    /// The schedule id.
    pub schedule_id: String,
    /// When it fires.
    pub spec: ScheduleSpec,
    /// What it starts.
    pub action: ScheduleAction,
    /// Overlap and catch-up.
    pub policies: SchedulePolicies,
    /// Whether it is paused.
    pub paused: bool,
    /// The note given with the last pause or unpause.
    pub note: String,
    /// The next few fire times.
    pub next_fires: Vec<SystemTime>,
    /// The latest actions, oldest first.
    pub recent_actions: Vec<ScheduledAction>,
    /// Workflow ids of its actions still running.
    pub running: Vec<String>,
    /// Actions waiting for the running one to end.
    pub buffered: usize,
    /// Actions skipped by the overlap policy.
    pub skipped: u64,
    /// Fire times dropped because they were older than the catch-up window.
    pub missed_catchup: u64,
    /// The last error starting an action (e.g. an unregistered workflow type).
    pub last_error: Option<String>,
}

fn to_time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

/// Schedules of one store: `client.schedules()`.
#[derive(Clone)]
pub struct Schedules {
    client: Client,
}

/// A handle on one schedule.
#[derive(Clone)]
pub struct ScheduleHandle {
    client: Client,
    schedule_id: String,
}

impl Schedules {
    pub(crate) fn new(client: Client) -> Self {
        Schedules { client }
    }

    /// Creates a schedule; `InvalidArgument` for a bad spec, `Store(..)` if the id exists.
    pub async fn create(
        &self,
        schedule_id: impl Into<String>,
        spec: ScheduleSpec,
        action: ScheduleAction,
        policies: SchedulePolicies,
    ) -> Result<ScheduleHandle, WfError> {
        let schedule_id = schedule_id.into();
        spec.check().map_err(WfError::InvalidArgument)?;
        self.client
            .shared()
            .definition(&action.workflow_type)?
            .check_input(&action.input)?;
        let now = self.client.shared().now_ms();
        let state = ScheduleState {
            spec,
            action,
            policies,
            paused: false,
            note: String::new(),
            processed_until_ms: now,
            buffered: VecDeque::new(),
            active: Vec::new(),
            recent: VecDeque::new(),
            skipped: 0,
            missed: 0,
            last_error: None,
        };
        let row = ScheduleRow {
            schedule_id: schedule_id.clone(),
            data: Payload::encode(&state)?,
            version: 1,
            next_check_ms: next_check(&state, now),
        };
        self.client
            .shared()
            .store
            .create_schedule(row)
            .await
            .map_err(|e| match e {
                StoreError::ScheduleExists(id) => {
                    WfError::InvalidArgument(format!("a schedule with id {id:?} already exists"))
                }
                other => other.into(),
            })?;
        self.client.shared().timer_wake.notify_one();
        Ok(self.handle(schedule_id))
    }

    /// A handle on schedule `schedule_id`.
    pub fn handle(&self, schedule_id: impl Into<String>) -> ScheduleHandle {
        ScheduleHandle {
            client: self.client.clone(),
            schedule_id: schedule_id.into(),
        }
    }

    /// Every schedule, described, by id.
    pub async fn list(&self) -> Result<Vec<ScheduleDescription>, WfError> {
        let rows = self.client.shared().store.list_schedules().await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(describe(&self.client, row).await?);
        }
        Ok(out)
    }
}

impl ScheduleHandle {
    /// The schedule id.
    pub fn schedule_id(&self) -> &str {
        &self.schedule_id
    }

    /// Stops firing until [`unpause`](Self::unpause); fire times while paused are not caught
    /// up.
    pub async fn pause(&self, note: &str) -> Result<(), WfError> {
        self.modify(|st, _| {
            st.paused = true;
            st.note = note.to_string();
        })
        .await
    }

    /// Resumes firing from now.
    pub async fn unpause(&self, note: &str) -> Result<(), WfError> {
        self.modify(|st, now| {
            st.paused = false;
            st.note = note.to_string();
            st.processed_until_ms = now;
        })
        .await
    }

    /// Takes an action now (the overlap policy applies), paused or not.
    pub async fn trigger(&self) -> Result<(), WfError> {
        for _ in 0..10 {
            let row = self.row().await?;
            let mut st: ScheduleState = row.data.decode()?;
            let now = self.client.shared().now_ms();
            refresh_active(&self.client, &mut st).await?;
            take_action(&self.client, &mut st, now).await;
            drain_buffer(&self.client, &mut st).await;
            if self.save(&row, &st, now).await? {
                return Ok(());
            }
        }
        Err(WfError::Conflict(format!(
            "schedule {:?} kept changing; trigger again",
            self.schedule_id
        )))
    }

    /// Deletes the schedule (its running actions go on).
    pub async fn delete(&self) -> Result<(), WfError> {
        if self
            .client
            .shared()
            .store
            .delete_schedule(&self.schedule_id)
            .await?
        {
            Ok(())
        } else {
            Err(self.not_found())
        }
    }

    /// Its spec, policies, progress and next fire times.
    pub async fn describe(&self) -> Result<ScheduleDescription, WfError> {
        describe(&self.client, self.row().await?).await
    }

    fn not_found(&self) -> WfError {
        WfError::Unknown {
            kind: "schedule",
            name: self.schedule_id.clone(),
            hint: String::new(),
        }
    }

    async fn row(&self) -> Result<ScheduleRow, WfError> {
        self.client
            .shared()
            .store
            .get_schedule(&self.schedule_id)
            .await?
            .ok_or_else(|| self.not_found())
    }

    async fn save(&self, row: &ScheduleRow, st: &ScheduleState, now: i64) -> Result<bool, WfError> {
        let shared = self.client.shared();
        let saved = shared
            .store
            .update_schedule(
                &row.schedule_id,
                row.version,
                Payload::encode(st)?,
                next_check(st, now),
            )
            .await?;
        shared.timer_wake.notify_one();
        Ok(saved)
    }

    async fn modify(&self, f: impl Fn(&mut ScheduleState, i64)) -> Result<(), WfError> {
        for _ in 0..10 {
            let row = self.row().await?;
            let mut st: ScheduleState = row.data.decode()?;
            let now = self.client.shared().now_ms();
            f(&mut st, now);
            if self.save(&row, &st, now).await? {
                return Ok(());
            }
        }
        Err(WfError::Conflict(format!(
            "schedule {:?} kept changing; try again",
            self.schedule_id
        )))
    }
}

async fn describe(client: &Client, row: ScheduleRow) -> Result<ScheduleDescription, WfError> {
    let mut st: ScheduleState = row.data.decode()?;
    refresh_active(client, &mut st).await?;
    let mut next_fires = Vec::new();
    let mut t = client.shared().now_ms().max(st.processed_until_ms);
    while next_fires.len() < 5 {
        match st.spec.next_after(t) {
            Some(f) => {
                next_fires.push(to_time(f));
                t = f;
            }
            None => break,
        }
    }
    Ok(ScheduleDescription {
        schedule_id: row.schedule_id,
        spec: st.spec,
        action: st.action,
        policies: st.policies,
        paused: st.paused,
        note: st.note,
        next_fires,
        recent_actions: st.recent.into_iter().collect(),
        running: st.active,
        buffered: st.buffered.len(),
        skipped: st.skipped,
        missed_catchup: st.missed,
        last_error: st.last_error,
    })
}

/// When the scheduler must look at this schedule next.
fn next_check(st: &ScheduleState, now: i64) -> Option<i64> {
    if st.paused {
        return None;
    }
    let fire = st.spec.next_after(st.processed_until_ms);
    let buffer = (!st.buffered.is_empty()).then_some(now + BUFFER_RECHECK_MS);
    match (fire, buffer) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Keeps only the actions still running.
async fn refresh_active(client: &Client, st: &mut ScheduleState) -> Result<(), WfError> {
    let mut still = Vec::with_capacity(st.active.len());
    for id in std::mem::take(&mut st.active) {
        if let Some(run) = client.shared().store.get_run(&id, None).await? {
            if run.status == RunStatus::Running {
                still.push(id);
            }
        }
    }
    st.active = still;
    Ok(())
}

/// Starts the action for `fire_ms` (idempotently: its workflow id is derived from it).
async fn start(client: &Client, st: &mut ScheduleState, fire_ms: i64) {
    let workflow_id = format!("{}-{}", st.action.workflow_id_prefix, format_utc(fire_ms));
    let options = StartOptions {
        id_conflict: IdConflictPolicy::UseExisting,
        task_queue: st.action.task_queue.clone(),
    };
    let started = client
        .start_raw(
            &workflow_id,
            &st.action.workflow_type,
            st.action.input.clone(),
            options,
        )
        .await;
    match started {
        Ok(_) => {
            st.last_error = None;
            st.active.push(workflow_id.clone());
            st.recent.push_back(ScheduledAction {
                fire_ms,
                workflow_id,
            });
            while st.recent.len() > RECENT {
                st.recent.pop_front();
            }
        }
        Err(e) => st.last_error = Some(format!("starting {workflow_id}: {e}")),
    }
}

/// Applies the overlap policy to an action due at `fire_ms`.
async fn take_action(client: &Client, st: &mut ScheduleState, fire_ms: i64) {
    let busy = !st.active.is_empty() || !st.buffered.is_empty();
    match st.policies.overlap {
        OverlapPolicy::AllowAll => start(client, st, fire_ms).await,
        _ if !busy => start(client, st, fire_ms).await,
        OverlapPolicy::Skip => st.skipped += 1,
        OverlapPolicy::BufferOne => {
            if st.buffered.is_empty() {
                st.buffered.push_back(fire_ms);
            } else {
                st.skipped += 1;
            }
        }
        OverlapPolicy::BufferAll => st.buffered.push_back(fire_ms),
        OverlapPolicy::CancelOther => {
            for id in st.active.clone() {
                if let Err(e) = client
                    .cancel(&id, "cancelled by its schedule's next action")
                    .await
                {
                    tracing::debug!(workflow_id = %id, error = %e, "cancelling an overlapping action");
                }
            }
            st.buffered.clear();
            st.buffered.push_back(fire_ms);
        }
    }
}

/// Starts buffered actions while nothing runs.
async fn drain_buffer(client: &Client, st: &mut ScheduleState) {
    while st.active.is_empty() {
        let Some(fire_ms) = st.buffered.pop_front() else {
            break;
        };
        start(client, st, fire_ms).await;
    }
}

/// Handles every due schedule (called by the time keeper).
pub(crate) async fn process_due(shared: &Arc<Shared>, now: i64) {
    let client = Client::new(shared.clone());
    let due = match shared.store.due_schedules(now, 256).await {
        Ok(due) => due,
        Err(e) => {
            tracing::error!(error = %e, "reading due schedules failed");
            return;
        }
    };
    for row in due {
        if let Err(e) = process_one(&client, row, now).await {
            tracing::warn!(error = %e, "processing a schedule failed");
        }
    }
}

async fn process_one(client: &Client, row: ScheduleRow, now: i64) -> Result<(), WfError> {
    let mut st: ScheduleState = row.data.decode()?;
    if !st.paused {
        refresh_active(client, &mut st).await?;
        let mut fires = Vec::new();
        let mut t = st.processed_until_ms;
        while let Some(f) = st.spec.next_after(t).filter(|f| *f <= now) {
            fires.push(f);
            t = f;
            if fires.len() >= MAX_FIRES_PER_PASS {
                break;
            }
        }
        st.processed_until_ms = t.max(st.processed_until_ms);
        let oldest_allowed = now - st.policies.catchup_window.as_millis() as i64;
        for f in fires {
            if f < oldest_allowed {
                st.missed += 1;
                continue;
            }
            take_action(client, &mut st, f).await;
        }
        drain_buffer(client, &mut st).await;
    }
    let saved = client
        .shared()
        .store
        .update_schedule(
            &row.schedule_id,
            row.version,
            Payload::encode(&st)?,
            next_check(&st, now),
        )
        .await?;
    if !saved {
        tracing::debug!(schedule_id = %row.schedule_id, "schedule changed meanwhile; it is looked at again");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z, a Thursday

    #[test]
    fn intervals_fire_at_offsets_from_the_epoch() {
        let spec = ScheduleSpec {
            intervals: vec![IntervalSpec {
                every: Duration::from_secs(3600),
                offset: Duration::from_secs(900),
            }],
            calendars: vec![],
        };
        assert_eq!(spec.next_after(T0), Some(T0 + 900_000));
        assert_eq!(
            spec.next_after(T0 + 900_000),
            Some(T0 + 3_600_000 + 900_000)
        );
    }

    #[test]
    fn calendars_match_fields_in_utc() {
        assert_eq!(format_utc(T0), "2026-01-01T00:00:00Z");
        let daily = ScheduleSpec::calendar(CalendarSpec::daily_at(9, 30));
        assert_eq!(
            format_utc(daily.next_after(T0).unwrap()),
            "2026-01-01T09:30:00Z"
        );
        assert_eq!(
            format_utc(daily.next_after(T0 + 10 * 3_600_000).unwrap()),
            "2026-01-02T09:30:00Z"
        );
        let mondays = ScheduleSpec::calendar(CalendarSpec {
            day_of_week: vec![1],
            ..CalendarSpec::daily_at(8, 0)
        });
        assert_eq!(
            format_utc(mondays.next_after(T0).unwrap()),
            "2026-01-05T08:00:00Z"
        );
        let leap = ScheduleSpec::calendar(CalendarSpec {
            month: vec![2],
            day_of_month: vec![29],
            ..CalendarSpec::daily_at(0, 0)
        });
        assert_eq!(
            format_utc(leap.next_after(T0).unwrap()),
            "2028-02-29T00:00:00Z"
        );
    }

    #[test]
    fn bad_specs_are_refused() {
        assert!(ScheduleSpec::default().check().is_err());
        assert!(ScheduleSpec::calendar(CalendarSpec::daily_at(24, 0))
            .check()
            .is_err());
        let offset_too_big = ScheduleSpec {
            intervals: vec![IntervalSpec {
                every: Duration::from_secs(1),
                offset: Duration::from_secs(2),
            }],
            calendars: vec![],
        };
        assert!(offset_too_big.check().is_err());
    }
}
