//! The `runs` table of the SQLite store.

use super::rows::{db, name_filter, run_columns, to_blob, RawRun};
use super::tx::{Result, SqliteTx};
use crate::data::run::{ListFilter, RunStatus, TaskFailure};
use crate::store::records::RunRecord;
use crate::store::rules::tx::{RunChange, RunLease, RunRow, RunTable, TaskQuery};
use rusqlite::{params, OptionalExtension};

/// The `WHERE`, order and limit of a list of runs (`r` is `runs`), over [`ListParams`]: one
/// text for the list and its count.
macro_rules! list_where {
    () => {
        "WHERE (?1 IS NULL OR workflow_type = ?1) AND (?2 IS NULL OR status = ?2) \
         AND (?3 = 0 OR seq = (SELECT MAX(seq) FROM runs l WHERE l.workflow_id = r.workflow_id)) \
         AND (?5 IS NULL OR run_id IN (SELECT s.run_id FROM json_each(?5) f \
              JOIN search_attributes s ON s.key = json_extract(f.value, '$[0]') \
              AND s.kind = json_extract(f.value, '$[1]') \
              AND s.value = json_extract(f.value, '$[2]') \
              GROUP BY s.run_id HAVING COUNT(*) = json_array_length(?5))) \
         AND (?6 IS NULL OR created_ms >= ?6) AND (?7 IS NULL OR created_ms < ?7) \
         AND (?8 IS NULL OR closed_ms >= ?8) AND (?9 IS NULL OR closed_ms < ?9) \
         AND (?10 IS NULL OR seq < (SELECT c.seq FROM runs c WHERE c.run_id = ?10)) \
         AND (?11 IS NULL OR build_id = ?11) \
         ORDER BY seq DESC LIMIT ?4"
    };
}

impl RunTable for SqliteTx {
    async fn load_run(&mut self, run_id: &str) -> Result<Option<RunRow>> {
        let sql = concat!("SELECT ", run_columns!(), " FROM runs WHERE run_id = ?1");
        let raw = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row([run_id], RawRun::from_row).optional())
            .map_err(db("read a run"))?;
        raw.map(RawRun::decode).transpose()
    }

    async fn latest_run(&mut self, workflow_id: &str) -> Result<Option<RunRow>> {
        let sql = concat!(
            "SELECT ",
            run_columns!(),
            " FROM runs WHERE workflow_id = ?1 ORDER BY seq DESC LIMIT 1"
        );
        let raw = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row([workflow_id], RawRun::from_row).optional())
            .map_err(db("read the latest run"))?;
        raw.map(RawRun::decode).transpose()
    }

    async fn insert_run(&mut self, run: &RunRecord) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO runs (run_id, workflow_id, chain_id, workflow_type, status, \
                 next_event_id, history_bytes, created_ms, summary, ready_at, task_queue, \
                 build_id) VALUES (?1, ?2, ?3, ?4, 'running', 2, ?5, ?6, x'', ?6, ?7, \
                 (SELECT build_id FROM task_queue_builds WHERE task_queue = ?7))",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run.run_id,
                    run.workflow_id,
                    run.chain_id,
                    run.workflow_type,
                    run.history_bytes as i64,
                    run.created_ms,
                    run.task_queue
                ])
            })
            .map_err(db("insert a run"))?;
        Ok(())
    }

    async fn update_run(&mut self, change: &RunChange<'_>) -> Result<()> {
        let close = change.close.as_ref();
        // One statement for a commit (a summary: the task failure is cleared) and for a
        // termination (no summary: both kept); a close sets its fields, else they stay.
        self.conn
            .prepare_cached(
                "UPDATE runs SET next_event_id = ?2, history_bytes = history_bytes + ?3, \
                 summary = COALESCE(?4, summary), \
                 task_failure = CASE WHEN ?4 IS NULL THEN task_failure END, \
                 lease_owner = NULL, lease_until = NULL, ready_at = ?5, \
                 status = COALESCE(?6, status), closed_ms = COALESCE(?7, closed_ms), \
                 result = COALESCE(?8, result), failure = COALESCE(?9, failure), \
                 versioning = COALESCE(versioning, ?10), build_id = COALESCE(build_id, ?11) \
                 WHERE run_id = ?1",
            )
            .and_then(|mut s| {
                s.execute(params![
                    change.run_id,
                    change.next_event_id as i64,
                    change.added_bytes as i64,
                    change.summary.map(|p| p.as_bytes()),
                    change.ready_at,
                    close.map(|c| c.status.as_str()),
                    close.map(|c| c.closed_ms),
                    close.and_then(|c| c.result).map(|p| p.as_bytes()),
                    close.and_then(|c| c.failure),
                    change.versioning.map(|v| v.behavior),
                    change.versioning.and_then(|v| v.build_id),
                ])
            })
            .map_err(db("update a run"))?;
        Ok(())
    }

    async fn set_ready(&mut self, run_id: &str, at_ms: i64) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE runs SET ready_at = MIN(COALESCE(ready_at, ?2), ?2) WHERE run_id = ?1",
            )
            .and_then(|mut s| s.execute(params![run_id, at_ms]))
            .map_err(db("mark a run ready"))?;
        Ok(())
    }

    async fn delay_start(&mut self, run_id: &str, start_at_ms: i64) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE runs SET start_at = ?2, ready_at = ?2 WHERE run_id = ?1")
            .and_then(|mut s| s.execute(params![run_id, start_at_ms]))
            .map_err(db("delay a run's start"))?;
        Ok(())
    }

    async fn debounced_run(&mut self, workflow_type: &str, key: &str) -> Result<Option<String>> {
        self.conn
            .prepare_cached(
                "SELECT run_id FROM runs WHERE workflow_type = ?1 AND debounce_key = ?2 \
                 AND status = 'running' ORDER BY seq DESC LIMIT 1",
            )
            .and_then(|mut s| s.query_row([workflow_type, key], |r| r.get(0)).optional())
            .map_err(db("find a debounced run"))
    }

    async fn set_debounce_key(&mut self, run_id: &str, key: &str) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE runs SET debounce_key = ?2 WHERE run_id = ?1")
            .and_then(|mut s| s.execute([run_id, key]))
            .map_err(db("set a run's debounce key"))?;
        Ok(())
    }

    async fn replace_started(
        &mut self,
        run_id: &str,
        data: &[u8],
        history_bytes: u64,
    ) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE events SET data = ?2 WHERE run_id = ?1 AND event_id = 1")
            .and_then(|mut s| s.execute(params![run_id, data]))
            .map_err(db("replace a run's first event"))?;
        self.conn
            .prepare_cached("UPDATE runs SET history_bytes = ?2 WHERE run_id = ?1")
            .and_then(|mut s| s.execute(params![run_id, history_bytes as i64]))
            .map_err(db("set a run's history size"))?;
        Ok(())
    }

    async fn set_lease(&mut self, lease: &RunLease<'_>) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE runs SET lease_owner = ?2, lease_until = ?3 WHERE run_id = ?1")
            .and_then(|mut s| s.execute(params![lease.run_id, lease.owner, lease.until_ms]))
            .map_err(db("lease a workflow task"))?;
        Ok(())
    }

    async fn lease_if_free(&mut self, lease: &RunLease<'_>, now_ms: i64) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE runs SET lease_owner = ?2, lease_until = ?3 WHERE run_id = ?1 \
                 AND status = 'running' AND (lease_owner IS NULL OR lease_until <= ?4 \
                 OR lease_owner IN (SELECT engine_id FROM engines \
                 WHERE lease_until <= ?4 AND engine_id != ?2)) \
                 AND (build_id IS NULL OR build_id = ?5) AND (start_at IS NULL OR start_at <= ?4)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    lease.run_id,
                    lease.owner,
                    lease.until_ms,
                    now_ms,
                    lease.build_id
                ])
            })
            .map_err(db("lease a run"))?;
        Ok(n > 0)
    }

    async fn release_lease(&mut self, run_id: &str, owner: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE runs SET lease_owner = NULL, lease_until = NULL, \
                 ready_at = COALESCE(ready_at, 0) WHERE run_id = ?1 AND lease_owner = ?2",
            )
            .and_then(|mut s| s.execute([run_id, owner]))
            .map_err(db("release a workflow task"))?;
        Ok(())
    }

    async fn record_task_failure(&mut self, run_id: &str, failure: &TaskFailure) -> Result<()> {
        let blob = to_blob("task failure", failure)?;
        self.conn
            .prepare_cached(
                "UPDATE runs SET task_failure = ?2, lease_owner = NULL, lease_until = NULL, \
                 ready_at = ?3 WHERE run_id = ?1",
            )
            .and_then(|mut s| s.execute(params![run_id, blob, failure.retry_at_ms]))
            .map_err(db("record a workflow task failure"))?;
        Ok(())
    }

    async fn ready_runs(&mut self, query: &TaskQuery<'_>) -> Result<Vec<String>> {
        let (types, queues) = (name_filter(query.names), name_filter(query.queues));
        self.conn
            .prepare_cached(
                "SELECT run_id FROM runs WHERE status = 'running' AND ready_at <= ?1 \
                 AND (lease_owner IS NULL OR lease_until <= ?1 \
                 OR lease_owner IN (SELECT engine_id FROM engines \
                 WHERE lease_until <= ?1 AND engine_id != ?5)) \
                 AND (?3 IS NULL OR workflow_type IN (SELECT value FROM json_each(?3))) \
                 AND (?4 IS NULL OR task_queue IN (SELECT value FROM json_each(?4))) \
                 AND (build_id IS NULL OR build_id = ?6) \
                 ORDER BY ready_at, seq LIMIT ?2",
            )
            .and_then(|mut s| {
                let max = query.max as i64;
                s.query_map(
                    params![
                        query.now_ms,
                        max,
                        types,
                        queues,
                        query.poller,
                        query.build_id
                    ],
                    |r| r.get(0),
                )?
                .collect()
            })
            .map_err(db("find ready workflow tasks"))
    }

    async fn set_run_build(&mut self, run_id: &str, build_id: &str) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE runs SET build_id = ?2 WHERE run_id = ?1")
            .and_then(|mut s| s.execute([run_id, build_id]))
            .map_err(db("move a run to a build"))?;
        Ok(())
    }

    async fn list_runs(&mut self, filter: &ListFilter) -> Result<Vec<RunRecord>> {
        let sql = concat!("SELECT ", run_columns!(), " FROM runs r ", list_where!());
        let raws: Vec<RawRun> = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| {
                let p = ListParams::of(filter);
                s.query_map(p.params(), RawRun::from_row)?.collect()
            })
            .map_err(db("list runs"))?;
        raws.into_iter()
            .map(|raw| Ok(raw.decode()?.record))
            .collect()
    }

    async fn count_runs(&mut self, filter: &ListFilter) -> Result<u64> {
        let sql = concat!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM runs r ",
            list_where!(),
            ")"
        );
        let n: i64 = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| {
                let p = ListParams::of(filter);
                s.query_row(p.params(), |r| r.get(0))
            })
            .map_err(db("count runs"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

/// The parameters of [`list_where`], from a filter.
struct ListParams<'a> {
    filter: &'a ListFilter,
    status: Option<&'static str>,
    limit: i64,
    search: Option<String>,
    times: [Option<i64>; 4],
}

impl<'a> ListParams<'a> {
    fn of(filter: &'a ListFilter) -> Self {
        let limit = if filter.limit == 0 {
            -1
        } else {
            filter.limit.min(i64::MAX as usize) as i64
        };
        ListParams {
            filter,
            status: filter.status.map(RunStatus::as_str),
            limit,
            search: super::search::search_filter(&filter.search),
            times: filter.time_bounds_ms(),
        }
    }

    fn params(&self) -> [&dyn rusqlite::ToSql; 11] {
        let f = self.filter;
        [
            &f.workflow_type,
            &self.status,
            &f.latest_only,
            &self.limit,
            &self.search,
            &self.times[0],
            &self.times[1],
            &self.times[2],
            &self.times[3],
            &f.after_run_id,
            &f.build_id,
        ]
    }
}
