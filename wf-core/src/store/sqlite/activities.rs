//! The `activities` table of the SQLite store.

use super::rows::{activity_columns, db, from_blob, name_filter, to_blob, RawActivity};
use super::tx::{Result, SqliteTx};
use crate::store::records::ActivityTask;
use crate::store::rules::tx::{ActivityTable, Attempt, Heartbeat, LeaseState, NewActivity};
use crate::store::rules::tx::{Retry, TaskQuery};
use rusqlite::{params, OptionalExtension, Params};

impl SqliteTx {
    /// Activities selected by `sql` (whose columns are `activity_columns!()`).
    fn activities(&self, sql: &'static str, args: impl Params) -> Result<Vec<ActivityTask>> {
        let raws: Vec<RawActivity> = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_map(args, RawActivity::from_row)?.collect())
            .map_err(db("read activities"))?;
        raws.into_iter().map(RawActivity::decode).collect()
    }

    /// The virtual start of an attempt of `key` costing `cost` written to wait; moves the
    /// key's pass (see `rules/fairness.rs`).
    fn fair_turn(&self, key: &str, cost: f64) -> Result<f64> {
        self.conn
            .prepare_cached(
                "INSERT INTO fair_passes (fair_key, pass) \
                 VALUES (?1, (SELECT vclock FROM fair_clock) + ?2) \
                 ON CONFLICT (fair_key) DO UPDATE \
                 SET pass = max(pass, (SELECT vclock FROM fair_clock)) + ?2 \
                 RETURNING pass - ?2",
            )
            .and_then(|mut s| s.query_row(params![key, cost], |r| r.get(0)))
            .map_err(db("take a fair turn"))
    }
}

impl ActivityTable for SqliteTx {
    async fn insert_activity(&mut self, new: &NewActivity<'_>) -> Result<()> {
        let task = new.task;
        let options = to_blob("activity options", &task.options)?;
        let now = new.scheduled_ms;
        let deadline = new.schedule_deadline_ms();
        let input = task.input.as_bytes();
        // Leased at once (the committing worker runs it) or not: one statement either way.
        let (owner, started, attempt_deadline, lease_until) = match new.lease {
            Some((owner, deadline, until)) => (Some(owner), Some(now), Some(deadline), Some(until)),
            None => (None, None, None, None),
        };
        let (key, cost) = (task.options.fairness_key(), task.options.fairness_cost());
        // Started at once, it never waits: out of fair queuing's accounting.
        let vstart = match new.lease {
            Some(_) => None,
            None => Some(self.fair_turn(key, cost)?),
        };
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO activities (run_id, seq, workflow_id, name, input, options, \
                 attempt, scheduled_ms, schedule_deadline, visible_at, started_ms, \
                 attempt_deadline, lease_until, lease_owner, task_queue, flow_key, pinned, \
                 priority, fair_key, fair_cost, vstart) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8, ?7, ?9, ?10, ?11, ?12, ?13, ?14, ?15, \
                 ?16, ?17, ?18, COALESCE(?19, (SELECT vclock FROM fair_clock)))",
            )
            .and_then(|mut s| {
                s.execute(params![
                    new.run_id,
                    task.seq,
                    new.workflow_id,
                    task.name,
                    input,
                    options,
                    now,
                    deadline,
                    started,
                    attempt_deadline,
                    lease_until,
                    owner,
                    new.queue(),
                    task.options.flow_key,
                    new.pinned(),
                    task.options.priority_level(),
                    key,
                    cost,
                    vstart
                ])
            });
        inserted.map_err(db("schedule an activity"))?;
        Ok(())
    }

    async fn delete_attempt(&mut self, at: &Attempt<'_>) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached(
                "DELETE FROM activities WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
            )
            .and_then(|mut s| s.execute(params![at.run_id, at.seq, at.attempt]))
            .map_err(db("resolve an activity"))?;
        Ok(n > 0)
    }

    async fn delete_activity(&mut self, run_id: &str, seq: u32) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM activities WHERE run_id = ?1 AND seq = ?2")
            .and_then(|mut s| s.execute(params![run_id, seq]))
            .map_err(db("cancel an activity"))?;
        Ok(())
    }

    async fn delete_activities(&mut self, run_id: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM activities WHERE run_id = ?1")
            .and_then(|mut s| s.execute([run_id]))
            .map_err(db("clear a closed run's activities"))?;
        Ok(())
    }

    async fn lease_state(&mut self, at: &Attempt<'_>) -> Result<Option<LeaseState>> {
        /// Options, attempt deadline, lease expiry and lease owner of the attempt.
        type Raw = (Vec<u8>, Option<i64>, Option<i64>, Option<String>);
        let row: Option<Raw> = self
            .conn
            .prepare_cached(
                "SELECT options, attempt_deadline, lease_until, lease_owner FROM activities \
                 WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
            )
            .and_then(|mut s| {
                let row = |r: &rusqlite::Row<'_>| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?));
                s.query_row(params![at.run_id, at.seq, at.attempt], row)
                    .optional()
            })
            .map_err(db("read an activity"))?;
        let decode = |(options, deadline, lease, owner): Raw| {
            Ok(LeaseState {
                options: from_blob("activity options", &options)?,
                attempt_deadline_ms: deadline,
                lease_until_ms: lease,
                lease_owner: owner,
            })
        };
        row.map(decode).transpose()
    }

    async fn lease_activity(&mut self, task: &ActivityTask, owner: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE activities SET lease_owner = ?3, started_ms = ?4, attempt_deadline = ?5, \
                 lease_until = ?6 WHERE run_id = ?1 AND seq = ?2",
            )
            .and_then(|mut s| {
                s.execute(params![
                    task.run_id,
                    task.seq,
                    owner,
                    task.started_ms,
                    task.attempt_deadline_ms,
                    task.lease_until_ms
                ])
            })
            .map_err(db("lease an activity task"))?;
        self.conn
            .prepare_cached(
                "UPDATE fair_clock SET vclock = a.vstart FROM activities a \
                 WHERE a.run_id = ?1 AND a.seq = ?2 AND a.vstart > fair_clock.vclock",
            )
            .and_then(|mut s| s.execute(params![task.run_id, task.seq]))
            .map_err(db("move the fair clock"))?;
        Ok(())
    }

    async fn heartbeat_activity(&mut self, beat: &Heartbeat<'_>) -> Result<()> {
        let at = &beat.attempt;
        self.conn
            .prepare_cached(
                "UPDATE activities SET heartbeat = COALESCE(?4, heartbeat), lease_until = ?5 \
                 WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
            )
            .and_then(|mut s| {
                let details = beat.details.map(|p| p.as_bytes());
                s.execute(params![
                    at.run_id,
                    at.seq,
                    at.attempt,
                    details,
                    beat.lease_until_ms
                ])
            })
            .map_err(db("record a heartbeat"))?;
        Ok(())
    }

    async fn retry_activity(&mut self, retry: &Retry<'_>) -> Result<bool> {
        let at = &retry.attempt;
        let failure = to_blob("activity failure", retry.failure)?;
        let fairness: Option<(String, f64)> = self
            .conn
            .prepare_cached(
                "SELECT fair_key, fair_cost FROM activities \
                 WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![at.run_id, at.seq, at.attempt], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
            })
            .map_err(db("read an activity's fairness"))?;
        let Some((key, cost)) = fairness else {
            return Ok(false);
        };
        let vstart = self.fair_turn(&key, cost)?;
        let changed = self
            .conn
            .prepare_cached(
                "UPDATE activities SET attempt = attempt + 1, visible_at = ?4, \
                 lease_owner = NULL, started_ms = NULL, attempt_deadline = NULL, \
                 lease_until = NULL, last_failure = ?5, vstart = ?6 \
                 WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
            )
            .and_then(|mut s| {
                let visible_at = retry.visible_at_ms;
                s.execute(params![
                    at.run_id, at.seq, at.attempt, visible_at, failure, vstart
                ])
            })
            .map_err(db("schedule an activity retry"))?;
        Ok(changed > 0)
    }

    async fn release_activity(&mut self, at: &Attempt<'_>) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE activities SET lease_owner = NULL, started_ms = NULL, \
                 attempt_deadline = NULL, lease_until = NULL \
                 WHERE run_id = ?1 AND seq = ?2 AND attempt = ?3",
            )
            .and_then(|mut s| s.execute(params![at.run_id, at.seq, at.attempt]))
            .map_err(db("release an activity task"))?;
        Ok(())
    }

    async fn visible_activities(&mut self, query: &TaskQuery<'_>) -> Result<Vec<ActivityTask>> {
        let sql = concat!(
            "SELECT ",
            activity_columns!(),
            " FROM activities WHERE lease_owner IS NULL AND visible_at <= ?1 \
             AND (schedule_deadline IS NULL OR schedule_deadline > ?1) \
             AND (?3 IS NULL OR name IN (SELECT value FROM json_each(?3))) \
             AND (?7 IS NULL OR pinned = 0 OR task_queue IN (SELECT value FROM json_each(?7))) \
             AND (?4 IS NULL OR name NOT IN (SELECT value FROM json_each(?4))) \
             AND (?5 IS NULL OR task_queue NOT IN (SELECT value FROM json_each(?5))) \
             AND (?6 IS NULL OR flow_key IS NULL \
                  OR flow_key NOT IN (SELECT value FROM json_each(?6))) \
             ORDER BY priority, vstart, visible_at, run_id, seq LIMIT ?2"
        );
        let names = name_filter(query.names);
        let blocked = query.blocked.filter(|b| !b.is_empty());
        let some = |v: &[String]| (!v.is_empty()).then(|| name_filter(Some(v))).flatten();
        let (not_names, not_queues, not_keys) = match blocked {
            Some(b) => (some(&b.names), some(&b.queues), some(&b.keys)),
            None => (None, None, None),
        };
        self.activities(
            sql,
            params![
                query.now_ms,
                query.max as i64,
                names,
                not_names,
                not_queues,
                not_keys,
                name_filter(query.queues)
            ],
        )
    }

    async fn expired_activities(&mut self, now_ms: i64, max: usize) -> Result<Vec<ActivityTask>> {
        let sql = concat!(
            "SELECT ",
            activity_columns!(),
            " FROM activities \
             WHERE (lease_owner IS NOT NULL AND (lease_until <= ?1 \
             OR lease_owner IN (SELECT engine_id FROM engines WHERE lease_until <= ?1))) \
             OR schedule_deadline <= ?1 \
             ORDER BY run_id, seq LIMIT ?2"
        );
        self.activities(sql, params![now_ms, max as i64])
    }

    async fn run_activities(&mut self, run_id: &str) -> Result<Vec<ActivityTask>> {
        let sql = concat!(
            "SELECT ",
            activity_columns!(),
            " FROM activities WHERE run_id = ?1 ORDER BY seq"
        );
        self.activities(sql, [run_id])
    }
}
