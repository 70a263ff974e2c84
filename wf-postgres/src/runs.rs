//! The `runs` table of the PostgreSQL store.
//!
//! # Locks
//!
//! Rules read a run, check it (its status, lease, history position) and then change it. So
//! that two processes cannot both pass a check, a writer's reads of a run lock it: first the
//! transaction-scoped advisory lock of its workflow id (which also guards creating a run of
//! that id, where there is no row to lock yet), then the row itself (`FOR UPDATE`). Every
//! write to a run's row takes them in that order (the advisory lock once per transaction), so
//! two writers on one workflow never wait for each other in a cycle. A poll skips rows another
//! transaction holds (`FOR UPDATE SKIP LOCKED`) and runs whose advisory lock is taken
//! (`pg_try_advisory_xact_lock`), so pollers never wait for each other or for a commit in
//! flight. Writers on different workflows may still deadlock (a group commit's requests come
//! in any order): PostgreSQL then fails one statement, and the writer runs that request again.

use crate::commits::{clear_sql, LOCK_RUN};
use crate::rows::{get, run_columns, run_row, to_blob};
use crate::tx::{owned, PostgresTx, Result};
use wf_core::store::{
    ListFilter, RunChange, RunLease, RunRecord, RunRow, RunStatus, RunTable, TaskFailure, TaskQuery,
};

/// v10: start delay. When a run's first workflow task is due, for a run whose start was
/// delayed (NULL: at once); no lease is given before then.
pub(crate) const SCHEMA_V10: &str = r#"
ALTER TABLE runs ADD COLUMN start_at BIGINT;
"#;

/// v11: debounce. A debounced run's key (per workflow type), by which later starts find it.
pub(crate) const SCHEMA_V11: &str = r#"
ALTER TABLE runs ADD COLUMN debounce_key TEXT COLLATE "C";
CREATE INDEX runs_by_debounce ON runs (workflow_type, debounce_key, seq)
    WHERE debounce_key IS NOT NULL AND status = 'running';
"#;

/// The advisory lock of a workflow type's debounce key, in this transaction: two starts with
/// one key take turns, and the second sees the run the first made.
const LOCK_DEBOUNCE: &str = "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() \
     || '#debounce/' || $1 || '/' || $2, 0))";

/// The advisory lock of a workflow id (by the 64-bit hash of the schema and the id: locks are
/// database-wide, and other schemas have ids of their own), in this transaction.
const LOCK_WORKFLOW: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || $1, 0))";

/// The `WHERE`, order and limit of a list of runs (`r` is `runs`), over [`ListParams`]: one
/// text for the list and its count.
macro_rules! list_where {
    () => {
        "WHERE ($1::text IS NULL OR workflow_type = $1) AND ($2::text IS NULL OR status = $2) \
         AND (NOT $3 OR seq = (SELECT MAX(seq) FROM runs l WHERE l.workflow_id = r.workflow_id)) \
         AND ($5::text[] IS NULL OR run_id IN (SELECT s.run_id \
              FROM unnest($5::text[], $6::text[], $7::text[]) AS f(key, kind, value) \
              JOIN search_attributes s ON s.key = f.key AND s.kind = f.kind AND s.value = f.value \
              GROUP BY s.run_id HAVING COUNT(*) = cardinality($5::text[]))) \
         AND ($8::int8 IS NULL OR created_ms >= $8) AND ($9::int8 IS NULL OR created_ms < $9) \
         AND ($10::int8 IS NULL OR closed_ms >= $10) AND ($11::int8 IS NULL OR closed_ms < $11) \
         AND ($12::text IS NULL OR seq < (SELECT c.seq FROM runs c WHERE c.run_id = $12)) \
         AND ($13::text IS NULL OR build_id = $13) \
         ORDER BY seq DESC LIMIT $4"
    };
}

impl PostgresTx {
    /// Locks the workflow id (a writer only). Its statement is queued and runs before the next
    /// one, which then sees every commit made under the lock.
    pub(crate) async fn lock_workflow(&mut self, workflow_id: &str) -> Result<()> {
        if self.writer && !self.locked_workflows.contains(workflow_id) {
            self.later(
                LOCK_WORKFLOW,
                owned![workflow_id.to_string()],
                "lock a workflow id",
            )
            .await?;
            self.locked_workflows.insert(workflow_id.to_string());
        }
        Ok(())
    }

    /// Takes the advisory lock of the run's workflow id before its row is written (a writer
    /// only; once per transaction).
    pub(crate) async fn lock_run(&mut self, run_id: &str) -> Result<()> {
        if self.writer && !self.locked.contains(run_id) {
            self.later(LOCK_RUN, owned![run_id.to_string()], "lock a run")
                .await?;
            self.locked.insert(run_id.to_string());
        }
        Ok(())
    }
}

impl PostgresTx {
    /// [`Tx::load_run_and_peek_inbox`](wf_core::store::Tx::load_run_and_peek_inbox) in one
    /// statement: the inbox is looked at under the run's locks (taken before the statement's
    /// snapshot: the advisory lock is queued ahead of it), which every inbox insert takes too.
    pub(crate) async fn run_and_inbox(
        &mut self,
        run_id: &str,
        inbox_after: Option<Option<u64>>,
    ) -> Result<(Option<RunRow>, bool)> {
        let Some(after) = inbox_after else {
            return Ok((self.load_run(run_id).await?, false));
        };
        let after = after.map_or(-1, |s| s.min(i64::MAX as u64) as i64);
        let sql = if self.writer {
            self.lock_run(run_id).await?;
            concat!(
                "SELECT ",
                run_columns!(),
                ", EXISTS (SELECT 1 FROM inbox i WHERE i.run_id = $1 AND i.seq > $2) \
                 FROM runs WHERE run_id = $1 FOR UPDATE"
            )
        } else {
            concat!(
                "SELECT ",
                run_columns!(),
                ", EXISTS (SELECT 1 FROM inbox i WHERE i.run_id = $1 AND i.seq > $2) \
                 FROM runs WHERE run_id = $1"
            )
        };
        let row = self
            .query_opt(sql, &[&run_id, &after], "read a run and look at its inbox")
            .await?;
        match row {
            // The inbox's answer is the last column, after the run's.
            Some(r) => Ok((Some(run_row(&r)?), get(&r, r.len() - 1)?)),
            None => Ok((None, false)),
        }
    }
}

/// The `Abandoned` update state, as stored.
fn abandoned() -> Result<Vec<u8>> {
    crate::rows::to_blob("update state", &wf_core::store::UpdateState::Abandoned)
}

impl PostgresTx {
    /// Applies a [`RunChange`], and, given `(first id, encoded events)`, appends the events;
    /// with `clear`, a change that closes the run also clears the run's inbox, timers,
    /// updates and activities (see [`clear_closed`](Self::clear_closed)): one queued item,
    /// which goes with the commits queued next to it in one statement (see `commits.rs`).
    pub(crate) async fn update_run_with_events(
        &mut self,
        change: &RunChange<'_>,
        events: Option<(u64, &[u8])>,
        clear: bool,
    ) -> Result<()> {
        let owned = crate::commits::Change::new(change, events, clear)?;
        self.queue_run_write(change.run_id, None, Some(owned))
            .await?;
        if change.ready_at.is_some() {
            self.notes.work = true;
        }
        Ok(())
    }

    /// Inserts a run's row as just created (see [`RunTable::insert_run`]), or, given its first
    /// task's change, with that change applied, and, given its `WorkflowStarted` event, that
    /// event too ([`Tx::insert_new_run`]): one write of the row (not an insert and then an
    /// update, which, changing indexed columns, would leave a dead row version and index
    /// entries behind), queued with the other new runs queued next to it as one statement
    /// (`commits::INSERT_RUNS`). A run inserted not ready (its first task done) is no news for
    /// other processes.
    ///
    /// [`Tx::insert_new_run`]: wf_core::store::Tx::insert_new_run
    pub(crate) async fn insert_run_row(
        &mut self,
        run: &RunRecord,
        started: Option<&[u8]>,
        first: Option<&RunChange<'_>>,
    ) -> Result<()> {
        self.lock_workflow(&run.workflow_id).await?;
        self.locked.insert(run.run_id.clone());
        let settled = match first {
            Some(change) if change.close.is_some() => {
                return Err(wf_core::store::StoreError::bug(
                    "a run cannot be inserted closed",
                ))
            }
            Some(change) => Some(crate::commits::Settled {
                next_event_id: change.next_event_id.min(i64::MAX as u64) as i64,
                added_bytes: change.added_bytes.min(i64::MAX as u64) as i64,
                summary: change
                    .summary
                    .map_or_else(Vec::new, |p| p.as_bytes().to_vec()),
                ready_at: change.ready_at,
                versioning: change.versioning.map(|v| v.behavior.to_string()),
                build_id: change
                    .versioning
                    .and_then(|v| v.build_id)
                    .map(str::to_string),
            }),
            None => None,
        };
        let statement = self.statement(crate::commits::INSERT_RUNS).await?;
        self.queue_insert(crate::commits::NewRunRow {
            statement,
            run_id: run.run_id.clone(),
            workflow_id: run.workflow_id.clone(),
            chain_id: run.chain_id.clone(),
            workflow_type: run.workflow_type.clone(),
            history_bytes: run.history_bytes.min(i64::MAX as u64) as i64,
            created_ms: run.created_ms,
            task_queue: run.task_queue.clone(),
            settled,
            started: started.map(<[u8]>::to_vec),
        });
        // The new run is its workflow id's latest: a row read ahead for the id is no longer
        // the answer, and the others still are.
        self.prefetched.remove(&run.workflow_id);
        if first.is_none_or(|c| c.ready_at.is_some()) {
            self.notes.work = true;
        }
        Ok(())
    }

    /// [`Tx::clear_run`](wf_core::store::Tx::clear_run) in one statement. Engines running the
    /// run's activity attempts are to hear of their end (`ActivityContext::cancelled`), if it
    /// had any.
    pub(crate) async fn clear_closed(&mut self, run_id: &str) -> Result<()> {
        self.later_waking(
            concat!("WITH ", clear_sql!("$2")),
            owned![run_id.to_string(), abandoned()?],
            "clear a closed run's inbox, timers, updates and activities",
        )
        .await
    }
}

impl PostgresTx {
    /// [`Tx::assume_run`](wf_core::store::Tx::assume_run): on a writer whose batch runs
    /// without savepoints ([`speculate`](Self::speculate)), `assumed` is answered at once
    /// and a check is queued in its place, under the run's locks as the read would be: it
    /// fails the transaction (`wf_stale`) unless the row is as assumed and the inbox empty,
    /// and the writer then runs the batch again, with savepoints and real reads. A commit of
    /// a run held in memory is then one round trip. Else (or for an assumed row that is not
    /// a plain running one) the row is read.
    pub(crate) async fn assume_run_row(
        &mut self,
        run_id: &str,
        assumed: &RunRecord,
    ) -> Result<(Option<RunRow>, bool)> {
        let plain = assumed.status == RunStatus::Running
            && assumed.build_id.is_none()
            && assumed.run_id == run_id;
        if !(self.writer && self.speculate && plain) {
            return self.run_and_inbox(run_id, Some(None)).await;
        }
        let check = (
            assumed.next_event_id.min(i64::MAX as u64) as i64,
            assumed.history_bytes.min(i64::MAX as u64) as i64,
        );
        self.queue_run_write(run_id, Some(check), None).await?;
        let row = RunRow {
            record: assumed.clone(),
            lease_owner: None,
            lease_until: None,
        };
        Ok((Some(row), false))
    }
}

impl PostgresTx {
    /// Reads the latest runs of `workflow_ids` (a writer's, sorted, distinct) in one statement,
    /// under their locks, taken in that order (`wf_latest_runs`, v7): the requests of a group
    /// that said which workflow id they read first (a start, a message to a workflow id) then
    /// find it in [`prefetched`](Self::prefetched) instead of a round trip each.
    pub(crate) async fn prefetch_latest(&mut self, workflow_ids: Vec<String>) -> Result<()> {
        let rows = self
            .query(
                concat!("SELECT ", run_columns!(), " FROM wf_latest_runs($1)"),
                &[&workflow_ids],
                "read the latest runs of workflow ids",
            )
            .await?;
        for id in &workflow_ids {
            self.locked_workflows.insert(id.clone());
        }
        let mut found: std::collections::HashMap<String, Option<RunRow>> =
            workflow_ids.into_iter().map(|id| (id, None)).collect();
        for r in &rows {
            let row = run_row(r)?;
            self.locked.insert(row.record.run_id.clone());
            found.insert(row.record.workflow_id.clone(), Some(row));
        }
        self.prefetched = found;
        Ok(())
    }
}

impl RunTable for PostgresTx {
    async fn load_run(&mut self, run_id: &str) -> Result<Option<RunRow>> {
        let sql = if self.writer {
            // The lock (if not yet held) is queued: it and the read go in one round trip, and
            // the server runs the read once the lock is held.
            self.lock_run(run_id).await?;
            concat!(
                "SELECT ",
                run_columns!(),
                " FROM runs WHERE run_id = $1 FOR UPDATE"
            )
        } else {
            concat!("SELECT ", run_columns!(), " FROM runs WHERE run_id = $1")
        };
        let row = self.query_opt(sql, &[&run_id], "read a run").await?;
        row.as_ref().map(run_row).transpose()
    }

    async fn latest_run(&mut self, workflow_id: &str) -> Result<Option<RunRow>> {
        if let Some(row) = self.prefetched.remove(workflow_id) {
            return Ok(row);
        }
        let sql = if self.writer {
            self.lock_workflow(workflow_id).await?;
            concat!(
                "SELECT ",
                run_columns!(),
                " FROM runs WHERE workflow_id = $1 ORDER BY seq DESC LIMIT 1 FOR UPDATE"
            )
        } else {
            concat!(
                "SELECT ",
                run_columns!(),
                " FROM runs WHERE workflow_id = $1 ORDER BY seq DESC LIMIT 1"
            )
        };
        let row = self
            .query_opt(sql, &[&workflow_id], "read the latest run")
            .await?;
        row.as_ref().map(run_row).transpose()
    }

    async fn insert_run(&mut self, run: &RunRecord) -> Result<()> {
        self.insert_run_row(run, None, None).await
    }

    async fn update_run(&mut self, change: &RunChange<'_>) -> Result<()> {
        self.update_run_with_events(change, None, false).await
    }

    async fn set_ready(&mut self, run_id: &str, at_ms: i64) -> Result<()> {
        self.lock_run(run_id).await?;
        self.later(
            "UPDATE runs SET ready_at = LEAST(COALESCE(ready_at, $2), $2) WHERE run_id = $1",
            owned![run_id.to_string(), at_ms],
            "mark a run ready",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn delay_start(&mut self, run_id: &str, start_at_ms: i64) -> Result<()> {
        self.lock_run(run_id).await?;
        self.later(
            "UPDATE runs SET start_at = $2, ready_at = $2 WHERE run_id = $1",
            owned![run_id.to_string(), start_at_ms],
            "delay a run's start",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn debounced_run(&mut self, workflow_type: &str, key: &str) -> Result<Option<String>> {
        if self.writer {
            self.later(
                LOCK_DEBOUNCE,
                owned![workflow_type.to_string(), key.to_string()],
                "lock a debounce key",
            )
            .await?;
        }
        let row = self
            .query_opt(
                "SELECT run_id FROM runs WHERE workflow_type = $1 AND debounce_key = $2 \
                 AND status = 'running' ORDER BY seq DESC LIMIT 1",
                &[&workflow_type, &key],
                "find a debounced run",
            )
            .await?;
        row.map(|r| get::<String>(&r, 0)).transpose()
    }

    async fn set_debounce_key(&mut self, run_id: &str, key: &str) -> Result<()> {
        self.lock_run(run_id).await?;
        self.later(
            "UPDATE runs SET debounce_key = $2 WHERE run_id = $1",
            owned![run_id.to_string(), key.to_string()],
            "set a run's debounce key",
        )
        .await
    }

    async fn replace_started(
        &mut self,
        run_id: &str,
        data: &[u8],
        history_bytes: u64,
    ) -> Result<()> {
        self.lock_run(run_id).await?;
        self.later(
            "UPDATE events SET data = $2 WHERE run_id = $1 AND event_id = 1",
            owned![run_id.to_string(), data.to_vec()],
            "replace a run's first event",
        )
        .await?;
        self.later(
            "UPDATE runs SET history_bytes = $2 WHERE run_id = $1",
            owned![run_id.to_string(), history_bytes as i64],
            "set a run's history size",
        )
        .await
    }

    async fn set_lease(&mut self, lease: &RunLease<'_>) -> Result<()> {
        self.lock_run(lease.run_id).await?;
        self.later(
            "UPDATE runs SET lease_owner = $2, lease_until = $3 WHERE run_id = $1",
            owned![
                lease.run_id.to_string(),
                lease.owner.to_string(),
                lease.until_ms
            ],
            "lease a workflow task",
        )
        .await?;
        Ok(())
    }

    async fn lease_if_free(&mut self, lease: &RunLease<'_>, now_ms: i64) -> Result<bool> {
        self.lock_run(lease.run_id).await?;
        let n = self
            .execute(
                "UPDATE runs SET lease_owner = $2, lease_until = $3 WHERE run_id = $1 \
                 AND status = 'running' AND (lease_owner IS NULL OR lease_until <= $4 \
                 OR lease_owner IN (SELECT engine_id FROM engines \
                 WHERE lease_until <= $4 AND engine_id <> $2)) \
                 AND (build_id IS NULL OR build_id = $5) AND (start_at IS NULL OR start_at <= $4)",
                &[
                    &lease.run_id,
                    &lease.owner,
                    &lease.until_ms,
                    &now_ms,
                    &lease.build_id,
                ],
                "lease a run",
            )
            .await?;
        Ok(n > 0)
    }

    async fn release_lease(&mut self, run_id: &str, owner: &str) -> Result<()> {
        self.lock_run(run_id).await?;
        self.later(
            "UPDATE runs SET lease_owner = NULL, lease_until = NULL, \
             ready_at = COALESCE(ready_at, 0) WHERE run_id = $1 AND lease_owner = $2",
            owned![run_id.to_string(), owner.to_string()],
            "release a workflow task",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn record_task_failure(&mut self, run_id: &str, failure: &TaskFailure) -> Result<()> {
        self.lock_run(run_id).await?;
        let blob = to_blob("task failure", failure)?;
        self.later(
            "UPDATE runs SET task_failure = $2, lease_owner = NULL, lease_until = NULL, \
             ready_at = $3 WHERE run_id = $1",
            owned![run_id.to_string(), blob, failure.retry_at_ms],
            "record a workflow task failure",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn ready_runs(&mut self, query: &TaskQuery<'_>) -> Result<Vec<String>> {
        let max = query.max.min(i64::MAX as usize) as i64;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] = [
            &query.now_ms,
            &max,
            &query.names,
            &query.queues,
            &query.poller,
            &query.build_id,
        ];
        // A writer polls: the runs it takes are locked until its transaction ends, and runs
        // another transaction holds are skipped, not waited for.
        let rows = if self.writer {
            let rows = self
                .query(
                    "SELECT run_id FROM (SELECT run_id, workflow_id, ready_at, seq FROM runs \
                     WHERE status = 'running' AND ready_at <= $1 \
                     AND (lease_owner IS NULL OR lease_until <= $1 \
                     OR lease_owner IN (SELECT engine_id FROM engines \
                     WHERE lease_until <= $1 AND engine_id <> $5)) \
                     AND ($3::text[] IS NULL OR workflow_type = ANY($3)) \
                     AND ($4::text[] IS NULL OR task_queue = ANY($4)) \
                     AND (build_id IS NULL OR build_id = $6::text) \
                     ORDER BY ready_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED) c \
                     WHERE pg_try_advisory_xact_lock(hashtextextended(current_schema() || '/' || c.workflow_id, 0)) \
                     ORDER BY ready_at, seq",
                    &params,
                    "find ready workflow tasks",
                )
                .await?;
            let ids = rows
                .iter()
                .map(|r| get::<String>(r, 0))
                .collect::<Result<Vec<_>>>()?;
            self.locked.extend(ids.iter().cloned());
            return Ok(ids);
        } else {
            self.query(
                "SELECT run_id FROM runs WHERE status = 'running' AND ready_at <= $1 \
                 AND (lease_owner IS NULL OR lease_until <= $1 \
                 OR lease_owner IN (SELECT engine_id FROM engines \
                 WHERE lease_until <= $1 AND engine_id <> $5)) \
                 AND ($3::text[] IS NULL OR workflow_type = ANY($3)) \
                 AND ($4::text[] IS NULL OR task_queue = ANY($4)) \
                 AND (build_id IS NULL OR build_id = $6::text) \
                 ORDER BY ready_at, seq LIMIT $2",
                &params,
                "find ready workflow tasks",
            )
            .await?
        };
        rows.iter().map(|r| get(r, 0)).collect()
    }

    async fn set_run_build(&mut self, run_id: &str, build_id: &str) -> Result<()> {
        self.lock_run(run_id).await?;
        self.later(
            "UPDATE runs SET build_id = $2 WHERE run_id = $1",
            owned![run_id.to_string(), build_id.to_string()],
            "move a run to a build",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn list_runs(&mut self, filter: &ListFilter) -> Result<Vec<RunRecord>> {
        let sql = concat!("SELECT ", run_columns!(), " FROM runs r ", list_where!());
        let p = ListParams::of(filter);
        let rows = self.query(sql, &p.params(), "list runs").await?;
        rows.iter().map(|r| Ok(run_row(r)?.record)).collect()
    }

    async fn count_runs(&mut self, filter: &ListFilter) -> Result<u64> {
        let sql = concat!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM runs r ",
            list_where!(),
            ") AS listed"
        );
        let p = ListParams::of(filter);
        let rows = self.query(sql, &p.params(), "count runs").await?;
        let n: i64 = match rows.first() {
            Some(row) => get(row, 0)?,
            None => 0,
        };
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

/// The parameters of [`list_where`], from a filter.
struct ListParams<'a> {
    filter: &'a ListFilter,
    status: Option<&'static str>,
    limit: Option<i64>,
    keys: Option<Vec<String>>,
    kinds: Option<Vec<String>>,
    values: Option<Vec<String>>,
    times: [Option<i64>; 4],
}

impl<'a> ListParams<'a> {
    fn of(filter: &'a ListFilter) -> Self {
        let (keys, kinds, values) = match crate::search::search_filter(&filter.search) {
            Some((k, t, v)) => (Some(k), Some(t), Some(v)),
            None => (None, None, None),
        };
        let limit = match filter.limit {
            0 => None,
            n => Some(n.min(i64::MAX as usize) as i64),
        };
        ListParams {
            filter,
            status: filter.status.map(RunStatus::as_str),
            limit,
            keys,
            kinds,
            values,
            times: filter.time_bounds_ms(),
        }
    }

    fn params(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 13] {
        let f = self.filter;
        let [sa, sb, ca, cb] = &self.times;
        [
            &f.workflow_type,
            &self.status,
            &f.latest_only,
            &self.limit,
            &self.keys,
            &self.kinds,
            &self.values,
            sa,
            sb,
            ca,
            cb,
            &f.after_run_id,
            &f.build_id,
        ]
    }
}
