//! The `activities` table of the PostgreSQL store.

use crate::rows::{activity_columns, activity_row, from_blob, get, to_blob};
use crate::tx::{owned, Params, PostgresTx, Result};
use wf_core::store::{
    ActivityTable, ActivityTask, Attempt, Heartbeat, LeaseState, NewActivity, Retry, StoreError,
    TaskQuery,
};

/// v12: activity task queues. Whether an activity was sent to a task queue of its own
/// (`ctx.activity(..).task_queue(q)`, then in `task_queue`): only engines that serve that
/// queue lease it. The activities already pending were not.
pub(crate) const SCHEMA_V12: &str = "
ALTER TABLE activities ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT false;
";

/// v6: `wf_conflict(run_id, reason)`, which fails its statement with SQLSTATE `WF409`, read
/// back as a `Conflict` on the run, and `wf_stale(run_id)`, SQLSTATE `WF412`, read back as a
/// `Busy` error (the writer runs the request again, reading what it had assumed; see
/// `rows::pg_error`). A check made in the statement itself (an attempt a workflow task
/// resolves is still current, a run's row is as its worker assumed) can then go with the
/// transaction's later statements instead of costing a round trip of its own: when it fails,
/// so does the transaction.
pub(crate) const SCHEMA_V6: &str = r#"
CREATE FUNCTION wf_conflict(run_id TEXT, reason TEXT) RETURNS INTEGER
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'WF409', MESSAGE = reason, DETAIL = run_id;
END
$$;
CREATE FUNCTION wf_stale(run_id TEXT) RETURNS INTEGER
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'WF412',
        MESSAGE = 'the run changed since the worker last saw it', DETAIL = run_id;
END
$$;
"#;

/// v13: priority and fairness of activity attempts (see wf-core's `rules/fairness.rs`). Each
/// activity's priority level, fairness key and cost (1 / weight), and its current attempt's
/// virtual start; the pass of each fairness key and the virtual clock; the waiting attempts in
/// the order a poll leases them. Activities already pending are of level 3, key `""`, start 0.
pub(crate) const SCHEMA_V13: &str = r#"
CREATE TABLE fair_passes (
    fair_key  TEXT COLLATE "C" PRIMARY KEY,
    pass      DOUBLE PRECISION NOT NULL
);
CREATE TABLE fair_clock (
    id      INTEGER PRIMARY KEY CHECK (id = 0),
    vclock  DOUBLE PRECISION NOT NULL
);
INSERT INTO fair_clock (id, vclock) VALUES (0, 0);
ALTER TABLE activities ADD COLUMN priority SMALLINT NOT NULL DEFAULT 3;
ALTER TABLE activities ADD COLUMN fair_key TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE activities ADD COLUMN fair_cost DOUBLE PRECISION NOT NULL DEFAULT 1;
ALTER TABLE activities ADD COLUMN vstart DOUBLE PRECISION NOT NULL DEFAULT 0;
CREATE INDEX activities_by_turn ON activities (priority, vstart, visible_at, run_id, seq)
    WHERE lease_owner IS NULL;
"#;

/// Moves the pass of fairness key `$1` for an attempt costing `$2` written to wait: to
/// `max(clock, pass) + cost`, whose attempt's virtual start is then `pass - cost` (see wf-core's
/// `rules/fairness.rs`). Its row stays locked to the transaction: writers of one key take
/// turns.
const FAIR_TURN: &str = "INSERT INTO fair_passes (fair_key, pass) \
     VALUES ($1, (SELECT vclock FROM fair_clock) + $2) \
     ON CONFLICT (fair_key) DO UPDATE \
     SET pass = GREATEST(fair_passes.pass, (SELECT vclock FROM fair_clock)) + $2";

impl PostgresTx {
    /// [`Tx::resolve_attempt`](wf_core::store::Tx::resolve_attempt) as a queued statement:
    /// the delete, and `wf_conflict` if it deleted nothing.
    pub(crate) async fn resolve_attempt_later(&mut self, at: &Attempt<'_>) -> Result<()> {
        let reason = match wf_core::store::attempt_gone(at) {
            StoreError::Conflict { reason, .. } => reason,
            other => other.to_string(),
        };
        self.later(
            "WITH resolved AS (DELETE FROM activities \
             WHERE run_id = $1 AND seq = $2 AND attempt = $3 RETURNING 1) \
             SELECT CASE WHEN EXISTS (SELECT 1 FROM resolved) THEN 0 \
             ELSE wf_conflict($1, $4) END",
            owned![
                at.run_id.to_string(),
                i64::from(at.seq),
                i64::from(at.attempt),
                reason
            ],
            "resolve an activity attempt",
        )
        .await
    }
}

impl PostgresTx {
    /// Activities selected by `sql` (whose columns are `activity_columns!()`).
    async fn activities(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Vec<ActivityTask>> {
        let rows = self.query(sql, params, "read activities").await?;
        rows.iter().map(activity_row).collect()
    }
}

impl ActivityTable for PostgresTx {
    async fn insert_activity(&mut self, new: &NewActivity<'_>) -> Result<()> {
        let task = new.task;
        let options = to_blob("activity options", &task.options)?;
        let now = new.scheduled_ms;
        let deadline = new.schedule_deadline_ms();
        // Leased at once (the committing worker runs it) or not: one statement either way.
        let (owner, started, attempt_deadline, lease_until) = match new.lease {
            Some((owner, deadline, until)) => (Some(owner), Some(now), Some(deadline), Some(until)),
            None => (None, None, None, None),
        };
        let key = task.options.fairness_key().to_string();
        let cost = task.options.fairness_cost();
        // Started at once, it never waits: out of fair queuing's accounting (no pass moves,
        // no shared row is written), its virtual start the clock.
        let waits = new.lease.is_none();
        if waits {
            self.later(FAIR_TURN, owned![key.clone(), cost], "take a fair turn")
                .await?;
        }
        self.later(
            "INSERT INTO activities (run_id, seq, workflow_id, name, input, options, \
             attempt, scheduled_ms, schedule_deadline, visible_at, started_ms, \
             attempt_deadline, lease_until, lease_owner, task_queue, flow_key, pinned, \
             priority, fair_key, fair_cost, vstart) \
             VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $7, $9, $10, $11, $12, $13, $14, $15, \
             $16, $17, $18, CASE WHEN $19 \
             THEN (SELECT pass FROM fair_passes WHERE fair_key = $17) - $18 \
             ELSE (SELECT vclock FROM fair_clock) END)",
            owned![
                new.run_id.to_string(),
                i64::from(task.seq),
                new.workflow_id.to_string(),
                task.name.clone(),
                task.input.as_bytes().to_vec(),
                options,
                now,
                deadline,
                started,
                attempt_deadline,
                lease_until,
                owner.map(str::to_string),
                new.queue().to_string(),
                task.options.flow_key.clone(),
                new.pinned(),
                i16::from(task.options.priority_level()),
                key,
                cost,
                waits,
            ],
            "schedule an activity",
        )
        .await?;
        if new.lease.is_none() {
            self.notes.work = true;
        }
        Ok(())
    }

    async fn delete_attempt(&mut self, at: &Attempt<'_>) -> Result<bool> {
        let n = self
            .execute(
                "DELETE FROM activities WHERE run_id = $1 AND seq = $2 AND attempt = $3",
                &[&at.run_id, &i64::from(at.seq), &i64::from(at.attempt)],
                "resolve an activity",
            )
            .await?;
        Ok(n > 0)
    }

    async fn delete_activity(&mut self, run_id: &str, seq: u32) -> Result<()> {
        self.later(
            "DELETE FROM activities WHERE run_id = $1 AND seq = $2",
            owned![run_id.to_string(), i64::from(seq)],
            "cancel an activity",
        )
        .await?;
        // An engine running its attempt is to hear of it (`ActivityContext::cancelled`).
        self.notes.work = true;
        Ok(())
    }

    async fn delete_activities(&mut self, run_id: &str) -> Result<()> {
        self.later(
            "DELETE FROM activities WHERE run_id = $1",
            owned![run_id.to_string()],
            "clear a closed run's activities",
        )
        .await?;
        // Engines running their attempts are to hear of it (`ActivityContext::cancelled`).
        self.notes.work = true;
        Ok(())
    }

    async fn lease_state(&mut self, at: &Attempt<'_>) -> Result<Option<LeaseState>> {
        let row = self
            .query_opt(
                "SELECT options, attempt_deadline, lease_until, lease_owner FROM activities \
                 WHERE run_id = $1 AND seq = $2 AND attempt = $3",
                &[&at.run_id, &i64::from(at.seq), &i64::from(at.attempt)],
                "read an activity",
            )
            .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(LeaseState {
            options: from_blob("activity options", get::<&[u8]>(&r, 0)?)?,
            attempt_deadline_ms: get(&r, 1)?,
            lease_until_ms: get(&r, 2)?,
            lease_owner: get(&r, 3)?,
        }))
    }

    async fn lease_activity(&mut self, task: &ActivityTask, owner: &str) -> Result<()> {
        self.later(
            "UPDATE activities SET lease_owner = $3, started_ms = $4, attempt_deadline = $5, \
             lease_until = $6 WHERE run_id = $1 AND seq = $2",
            owned![
                task.run_id.clone(),
                i64::from(task.seq),
                owner.to_string(),
                task.started_ms,
                task.attempt_deadline_ms,
                task.lease_until_ms,
            ],
            "lease an activity task",
        )
        .await?;
        self.later(
            "UPDATE fair_clock SET vclock = a.vstart FROM activities a \
             WHERE a.run_id = $1 AND a.seq = $2 AND a.vstart > fair_clock.vclock",
            owned![task.run_id.clone(), i64::from(task.seq)],
            "move the fair clock",
        )
        .await?;
        Ok(())
    }

    async fn heartbeat_activity(&mut self, beat: &Heartbeat<'_>) -> Result<()> {
        let at = &beat.attempt;
        self.later(
            "UPDATE activities SET heartbeat = COALESCE($4, heartbeat), lease_until = $5 \
             WHERE run_id = $1 AND seq = $2 AND attempt = $3",
            owned![
                at.run_id.to_string(),
                i64::from(at.seq),
                i64::from(at.attempt),
                beat.details.map(|p| p.as_bytes().to_vec()),
                beat.lease_until_ms,
            ],
            "record a heartbeat",
        )
        .await?;
        Ok(())
    }

    async fn retry_activity(&mut self, retry: &Retry<'_>) -> Result<bool> {
        let at = &retry.attempt;
        let failure = to_blob("activity failure", retry.failure)?;
        // The next attempt waits: a fair turn of its key, taken in the same statement.
        let changed = self
            .execute(
                "WITH cur AS (SELECT fair_key, fair_cost FROM activities \
                 WHERE run_id = $1 AND seq = $2 AND attempt = $3), \
                 turn AS (INSERT INTO fair_passes (fair_key, pass) \
                 SELECT fair_key, (SELECT vclock FROM fair_clock) + fair_cost FROM cur \
                 ON CONFLICT (fair_key) DO UPDATE \
                 SET pass = GREATEST(fair_passes.pass, (SELECT vclock FROM fair_clock)) \
                 + (SELECT fair_cost FROM cur) RETURNING pass) \
                 UPDATE activities SET attempt = attempt + 1, visible_at = $4, \
                 lease_owner = NULL, started_ms = NULL, attempt_deadline = NULL, \
                 lease_until = NULL, last_failure = $5, \
                 vstart = (SELECT pass FROM turn) - fair_cost \
                 WHERE run_id = $1 AND seq = $2 AND attempt = $3",
                &[
                    &at.run_id,
                    &i64::from(at.seq),
                    &i64::from(at.attempt),
                    &retry.visible_at_ms,
                    &failure,
                ],
                "schedule an activity retry",
            )
            .await?;
        self.notes.work |= changed > 0;
        Ok(changed > 0)
    }

    async fn release_activity(&mut self, at: &Attempt<'_>) -> Result<()> {
        self.later(
            "UPDATE activities SET lease_owner = NULL, started_ms = NULL, \
             attempt_deadline = NULL, lease_until = NULL \
             WHERE run_id = $1 AND seq = $2 AND attempt = $3",
            owned![
                at.run_id.to_string(),
                i64::from(at.seq),
                i64::from(at.attempt)
            ],
            "release an activity task",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn visible_activities(&mut self, query: &TaskQuery<'_>) -> Result<Vec<ActivityTask>> {
        let max = query.max.min(i64::MAX as usize) as i64;
        let blocked = query.blocked.filter(|b| !b.is_empty());
        let some = |v: &[String]| (!v.is_empty()).then(|| v.to_vec());
        let (not_names, not_queues, not_keys) = match blocked {
            Some(b) => (some(&b.names), some(&b.queues), some(&b.keys)),
            None => (None, None, None),
        };
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] = [
            &query.now_ms,
            &max,
            &query.names,
            &not_names,
            &not_queues,
            &not_keys,
            &query.queues,
        ];
        macro_rules! visible {
            ($tail:literal) => {
                concat!(
                    "SELECT ",
                    activity_columns!(),
                    " FROM activities WHERE lease_owner IS NULL AND visible_at <= $1 \
                     AND (schedule_deadline IS NULL OR schedule_deadline > $1) \
                     AND ($3::text[] IS NULL OR name = ANY($3)) \
                     AND ($7::text[] IS NULL OR NOT pinned OR task_queue = ANY($7)) \
                     AND ($4::text[] IS NULL OR NOT (name = ANY($4))) \
                     AND ($5::text[] IS NULL OR NOT (task_queue = ANY($5))) \
                     AND ($6::text[] IS NULL OR flow_key IS NULL OR NOT (flow_key = ANY($6))) \
                     ORDER BY priority, vstart, visible_at, run_id, seq LIMIT $2",
                    $tail
                )
            };
        }
        // Taken by a writer: skip what another transaction is leasing.
        let sql = if self.writer {
            visible!(" FOR UPDATE SKIP LOCKED")
        } else {
            visible!("")
        };
        self.activities(sql, &params).await
    }

    async fn expired_activities(&mut self, now_ms: i64, max: usize) -> Result<Vec<ActivityTask>> {
        let sql = concat!(
            "SELECT ",
            activity_columns!(),
            " FROM activities \
             WHERE (lease_owner IS NOT NULL AND (lease_until <= $1 \
             OR lease_owner IN (SELECT engine_id FROM engines WHERE lease_until <= $1))) \
             OR schedule_deadline <= $1 \
             ORDER BY run_id, seq LIMIT $2"
        );
        let max = max.min(i64::MAX as usize) as i64;
        self.activities(sql, &[&now_ms, &max]).await
    }

    async fn run_activities(&mut self, run_id: &str) -> Result<Vec<ActivityTask>> {
        let sql = concat!(
            "SELECT ",
            activity_columns!(),
            " FROM activities WHERE run_id = $1 ORDER BY seq"
        );
        self.activities(sql, &[&run_id]).await
    }
}
