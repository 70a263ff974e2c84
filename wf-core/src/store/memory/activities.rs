//! The `activities` table of the memory store.

use super::tables::{taken, ActivityRow, MemoryTx, Result};
use crate::store::records::ActivityTask;
use crate::store::rules::fairness::virtual_start;
use crate::store::rules::tx::{ActivityTable, Attempt, Heartbeat, LeaseState, NewActivity};
use crate::store::rules::tx::{Retry, TaskQuery};
use crate::store::ActivityOptions;

/// The key of an attempt's activity.
fn key(at: &Attempt<'_>) -> (String, u32) {
    (at.run_id.to_string(), at.seq)
}

/// The keys of a run's activities.
fn of_run(run_id: &str) -> std::ops::RangeInclusive<(String, u32)> {
    (run_id.to_string(), 0)..=(run_id.to_string(), u32::MAX)
}

/// Clears an activity's lease (attempt not started).
fn unlease(row: &mut ActivityRow) {
    row.lease_owner = None;
    row.task.started_ms = None;
    row.task.attempt_deadline_ms = None;
    row.task.lease_until_ms = None;
}

impl MemoryTx {
    /// The virtual clock of fair queuing.
    fn fair_clock(&self) -> f64 {
        self.fair_clock.get(&()).copied().unwrap_or(0.0)
    }

    /// The virtual start of an attempt with `options` written to wait; moves its key's pass.
    fn fair_turn(&mut self, options: &ActivityOptions) -> f64 {
        let key = options.fairness_key().to_string();
        let vstart = virtual_start(self.fair_clock(), self.fair_passes.get(&key).copied());
        self.fair_passes
            .insert(key, vstart + options.fairness_cost());
        vstart
    }
}

impl ActivityTable for MemoryTx {
    async fn insert_activity(&mut self, new: &NewActivity<'_>) -> Result<()> {
        let key = (new.run_id.to_string(), new.task.seq);
        if self.activities.contains_key(&key) {
            let why = format!("run {}: activity seq {} is already pending", key.0, key.1);
            return Err(taken(why));
        }
        let now = new.scheduled_ms;
        let mut task = ActivityTask {
            run_id: new.run_id.to_string(),
            workflow_id: new.workflow_id.to_string(),
            seq: new.task.seq,
            name: new.task.name.clone(),
            input: new.task.input.clone(),
            options: new.task.options.clone(),
            attempt: 1,
            scheduled_ms: now,
            started_ms: None,
            attempt_deadline_ms: None,
            lease_until_ms: None,
            heartbeat: None,
            last_failure: None,
            task_queue: new.queue().to_string(),
        };
        let mut lease_owner = None;
        // Started at once, it never waits: out of fair queuing's accounting.
        let vstart = match new.lease {
            Some(_) => self.fair_clock(),
            None => self.fair_turn(&new.task.options),
        };
        if let Some((owner, attempt_deadline, lease_until)) = new.lease {
            lease_owner = Some(owner.to_string());
            task.started_ms = Some(now);
            task.attempt_deadline_ms = Some(attempt_deadline);
            task.lease_until_ms = Some(lease_until);
        }
        let visible_at = now;
        self.activities.insert(
            key,
            ActivityRow {
                task,
                visible_at,
                lease_owner,
                vstart,
            },
        );
        Ok(())
    }

    async fn delete_attempt(&mut self, at: &Attempt<'_>) -> Result<bool> {
        let key = key(at);
        let current = self
            .activities
            .get(&key)
            .is_some_and(|r| r.task.attempt == at.attempt);
        Ok(current && self.activities.remove(&key))
    }

    async fn delete_activity(&mut self, run_id: &str, seq: u32) -> Result<()> {
        self.activities.remove(&(run_id.to_string(), seq));
        Ok(())
    }

    async fn delete_activities(&mut self, run_id: &str) -> Result<()> {
        self.activities.remove_range(of_run(run_id));
        Ok(())
    }

    async fn lease_state(&mut self, at: &Attempt<'_>) -> Result<Option<LeaseState>> {
        let row = self
            .activities
            .get(&key(at))
            .filter(|r| r.task.attempt == at.attempt);
        Ok(row.map(|r| LeaseState {
            options: r.task.options.clone(),
            attempt_deadline_ms: r.task.attempt_deadline_ms,
            lease_until_ms: r.task.lease_until_ms,
            lease_owner: r.lease_owner.clone(),
        }))
    }

    async fn lease_activity(&mut self, task: &ActivityTask, owner: &str) -> Result<()> {
        let mut vstart = None;
        self.activities
            .update(&(task.run_id.clone(), task.seq), |row| {
                row.lease_owner = Some(owner.to_string());
                row.task.started_ms = task.started_ms;
                row.task.attempt_deadline_ms = task.attempt_deadline_ms;
                row.task.lease_until_ms = task.lease_until_ms;
                vstart = Some(row.vstart);
                true
            });
        if let Some(v) = vstart.filter(|v| *v > self.fair_clock()) {
            self.fair_clock.insert((), v);
        }
        Ok(())
    }

    async fn heartbeat_activity(&mut self, beat: &Heartbeat<'_>) -> Result<()> {
        self.activities.update(&key(&beat.attempt), |row| {
            if row.task.attempt != beat.attempt.attempt {
                return false;
            }
            if let Some(details) = beat.details {
                row.task.heartbeat = Some(details.clone());
            }
            row.task.lease_until_ms = Some(beat.lease_until_ms);
            true
        });
        Ok(())
    }

    async fn retry_activity(&mut self, retry: &Retry<'_>) -> Result<bool> {
        let options = match self.activities.get(&key(&retry.attempt)) {
            Some(row) if row.task.attempt == retry.attempt.attempt => row.task.options.clone(),
            _ => return Ok(false),
        };
        let vstart = self.fair_turn(&options);
        Ok(self.activities.update(&key(&retry.attempt), |row| {
            if row.task.attempt != retry.attempt.attempt {
                return false;
            }
            row.vstart = vstart;
            row.task.attempt += 1;
            row.visible_at = retry.visible_at_ms;
            unlease(row);
            row.task.last_failure = Some(retry.failure.clone());
            true
        }))
    }

    async fn release_activity(&mut self, at: &Attempt<'_>) -> Result<()> {
        self.activities.update(&key(at), |row| {
            if row.task.attempt != at.attempt {
                return false;
            }
            unlease(row);
            true
        });
        Ok(())
    }

    async fn visible_activities(&mut self, query: &TaskQuery<'_>) -> Result<Vec<ActivityTask>> {
        let now = query.now_ms;
        let mut due: Vec<&ActivityRow> = self
            .activities
            .values()
            .filter(|row| row.lease_owner.is_none() && row.visible_at <= now)
            .filter(|row| query.names.is_none_or(|n| n.contains(&row.task.name)))
            .filter(|row| {
                row.task.options.task_queue.is_none()
                    || query
                        .queues
                        .is_none_or(|q| q.contains(&row.task.task_queue))
            })
            .filter(|row| {
                let t = &row.task;
                let key = t.options.flow_key.as_deref();
                query
                    .blocked
                    .is_none_or(|b| !b.blocks(&t.name, &t.task_queue, key))
            })
            .filter(|row| row.task.schedule_deadline_ms().is_none_or(|d| d > now))
            .collect();
        // Stable: rows of one turn and visible time stay in (run id, seq) order.
        due.sort_by(|a, b| {
            let level = |r: &ActivityRow| r.task.options.priority_level();
            (level(a).cmp(&level(b)))
                .then(a.vstart.total_cmp(&b.vstart))
                .then(a.visible_at.cmp(&b.visible_at))
        });
        Ok(due
            .into_iter()
            .take(query.max)
            .map(|row| row.task.clone())
            .collect())
    }

    async fn expired_activities(&mut self, now_ms: i64, max: usize) -> Result<Vec<ActivityTask>> {
        let expired = self.activities.values().filter(|row| {
            let owner = row.lease_owner.as_deref();
            let lease_expired =
                owner.is_some() && self.lease_free(owner, row.task.lease_until_ms, now_ms, None);
            let past_deadline = row.task.schedule_deadline_ms().is_some_and(|d| d <= now_ms);
            lease_expired || past_deadline
        });
        Ok(expired.take(max).map(|row| row.task.clone()).collect())
    }

    async fn run_activities(&mut self, run_id: &str) -> Result<Vec<ActivityTask>> {
        Ok(self
            .activities
            .range(of_run(run_id))
            .map(|(_, row)| row.task.clone())
            .collect())
    }
}
