//! A run's commit as one queued item, and the commits of a group folded into one statement.
//!
//! A workflow task's commit writes its run: the advisory lock of the run's workflow id (once
//! per transaction), the check of the row its worker assumed ([`Tx::assume_run`]), the task's
//! events, the run's row and, for a close, the clearing of its inbox, timers, updates and
//! activities. Queued as separate statements, that is three statements a commit, each with its
//! protocol round (bind, execute, sync, a reply sent by the server and read by the client),
//! which is most of the server's work for small workflows. Instead a commit is one
//! [`RunWrite`] in the transaction's queue; consecutive ones (the commits of a group, one
//! after the other) are sent as one call of the PL/pgSQL function `wf_write_runs` (v7) with
//! their fields as arrays: the group's locks in order, then its checks, inserts, updates and
//! clears, one statement each for the whole group.
//!
//! Running consecutive commits of distinct runs set-wise is running them one after the
//! other: each touches only its own run's rows (the clear of a closed run deletes rows of that
//! run), the locks are taken in the same order, and a failed check fails the statement, hence
//! the transaction, as it did (the writer then runs the group again, with savepoints and
//! reads). A run that appears twice ends the group and starts the next.
//!
//! [`Tx::assume_run`]: wf_core::store::Tx::assume_run

use crate::rows::{owned, Owned};
use tokio_postgres::Statement;
use wf_core::store::{RunChange, StoreError};

/// The result of a primitive.
type Result<T> = std::result::Result<T, StoreError>;

/// v7: `wf_write_runs`, the commits of a group in one statement (see the module's doc). Its
/// answer is the number of activities the clears deleted (engines running them are to hear
/// of it). Statements of a PL/pgSQL function run in order, each with a snapshot of its own
/// (read committed): the checks see every commit made under the locks taken before them.
///
/// And `wf_latest_runs(ids)`, the latest run of each workflow id, each id's advisory lock
/// taken first, in the array's order, and each row locked (see `runs.rs`'s
/// `prefetch_latest`).
pub(crate) const SCHEMA_V7: &str = r#"
CREATE FUNCTION wf_write_runs(
    p_ids TEXT[], p_locks BOOLEAN[], p_checks BOOLEAN[], p_assumed_next BIGINT[],
    p_assumed_bytes BIGINT[], p_writes BOOLEAN[], p_next BIGINT[], p_added BIGINT[],
    p_summaries BYTEA[], p_ready BIGINT[], p_statuses TEXT[], p_closed BIGINT[],
    p_results BYTEA[], p_failures TEXT[], p_versionings TEXT[], p_builds TEXT[],
    p_first_ids BIGINT[], p_events BYTEA[], p_clears BOOLEAN[], p_abandoned BYTEA
) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    gone BIGINT := 0;
    stale TEXT;
BEGIN
    -- The workflow ids' advisory locks, in the group's order (as its statements would).
    FOR i IN 1 .. cardinality(p_ids) LOOP
        IF p_locks[i] THEN
            PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || r.workflow_id, 0))
                FROM runs r WHERE r.run_id = p_ids[i];
        END IF;
    END LOOP;
    IF true = ANY(p_checks) THEN
        PERFORM 1 FROM runs r, unnest(p_ids, p_checks) AS c(id, chk)
            WHERE c.chk AND r.run_id = c.id FOR UPDATE OF r;
        SELECT c.id INTO stale
            FROM unnest(p_ids, p_checks, p_assumed_next, p_assumed_bytes) AS c(id, chk, nxt, bytes)
            WHERE c.chk AND (NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = c.id
                    AND r.status = 'running' AND r.next_event_id = c.nxt
                    AND r.history_bytes = c.bytes AND r.lease_owner IS NULL
                    AND r.build_id IS NULL)
                OR EXISTS (SELECT 1 FROM inbox i WHERE i.run_id = c.id))
            LIMIT 1;
        IF stale IS NOT NULL THEN
            PERFORM wf_stale(stale);
        END IF;
    END IF;
    INSERT INTO events (run_id, event_id, data)
        SELECT e.id, e.first_id, e.data
        FROM unnest(p_ids, p_first_ids, p_events) AS e(id, first_id, data)
        WHERE e.data IS NOT NULL;
    UPDATE runs SET next_event_id = c.nxt, history_bytes = runs.history_bytes + c.added,
            summary = COALESCE(c.summary, runs.summary),
            task_failure = CASE WHEN c.summary IS NULL THEN runs.task_failure END,
            lease_owner = NULL, lease_until = NULL, ready_at = c.ready,
            status = COALESCE(c.status, runs.status),
            closed_ms = COALESCE(c.closed, runs.closed_ms),
            result = COALESCE(c.result, runs.result),
            failure = COALESCE(c.failure, runs.failure),
            versioning = COALESCE(runs.versioning, c.versioning),
            build_id = COALESCE(runs.build_id, c.build)
        FROM unnest(p_ids, p_writes, p_next, p_added, p_summaries, p_ready, p_statuses,
                p_closed, p_results, p_failures, p_versionings, p_builds)
            AS c(id, w, nxt, added, summary, ready, status, closed, result, failure,
                versioning, build)
        WHERE c.w AND runs.run_id = c.id;
    IF true = ANY(p_clears) THEN
        DELETE FROM inbox USING unnest(p_ids, p_clears) AS c(id, clr)
            WHERE c.clr AND inbox.run_id = c.id;
        DELETE FROM timers USING unnest(p_ids, p_clears) AS c(id, clr)
            WHERE c.clr AND timers.run_id = c.id;
        UPDATE updates SET state = p_abandoned, final = TRUE
            FROM unnest(p_ids, p_clears) AS c(id, clr)
            WHERE c.clr AND updates.run_id = c.id AND NOT updates.final;
        DELETE FROM activities USING unnest(p_ids, p_clears) AS c(id, clr)
            WHERE c.clr AND activities.run_id = c.id;
        GET DIAGNOSTICS gone = ROW_COUNT;
    END IF;
    RETURN gone;
END
$$;
CREATE FUNCTION wf_latest_runs(p_ids TEXT[]) RETURNS SETOF runs
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. cardinality(p_ids) LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || p_ids[i], 0));
    END LOOP;
    RETURN QUERY SELECT l.* FROM unnest(p_ids) AS w(id)
        CROSS JOIN LATERAL (SELECT * FROM runs r WHERE r.workflow_id = w.id
            ORDER BY r.seq DESC LIMIT 1 FOR UPDATE) AS l;
END
$$;
"#;

/// The call of `wf_write_runs`; a row when the clears deleted activities.
pub(crate) const WRITE_RUNS: &str = "SELECT 1 FROM wf_write_runs($1, $2, $3, $4, $5, $6, $7, \
     $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) AS gone WHERE gone > 0";

/// One run's part of a commit, queued (see the module's doc).
pub(crate) struct RunWrite {
    /// The prepared [`WRITE_RUNS`] (prepared when the item was queued).
    pub(crate) statement: Statement,
    pub(crate) run_id: String,
    /// Whether to take the advisory lock of the run's workflow id first.
    pub(crate) lock: bool,
    /// The history position and size the worker assumed, to check.
    pub(crate) check: Option<(i64, i64)>,
    /// The change of the run's row, if any (else only the lock and the check).
    pub(crate) change: Option<Change>,
    /// The statements of the same writes when they go alone (see [`Single`]).
    pub(crate) single: Single,
}

/// The prepared statements of a [`RunWrite`] sent alone, not in a group: the lock
/// ([`LOCK_RUN`]), the check ([`CHECK_ASSUMED`]) and the change ([`update_run_sql`])
/// as plain statements, which cost the server less than the group function's set-wise
/// statements do for one run (a commit waited for alone, as an update's or an activity's step
/// is, is that case).
#[derive(Default)]
pub(crate) struct Single {
    pub(crate) lock: Option<Statement>,
    pub(crate) check: Option<Statement>,
    pub(crate) update: Option<Statement>,
}

/// A statement to queue: prepared, its parameters, what it does (for errors), whether it may
/// write, whether its changed rows are news for other processes.
pub(crate) type Plain = (Statement, Vec<Owned>, &'static str, bool, bool);

impl RunWrite {
    /// Whether every plain statement it needs alone was prepared (see [`alone`](Self::alone)).
    pub(crate) fn can_go_alone(&self) -> bool {
        (!self.lock || self.single.lock.is_some())
            && (self.check.is_none() || self.single.check.is_some())
            && (self.change.is_none() || self.single.update.is_some())
    }

    /// Its writes as plain statements, sent alone (given [`can_go_alone`](Self::can_go_alone)).
    pub(crate) fn alone(self) -> Vec<Plain> {
        let RunWrite {
            run_id,
            lock,
            check,
            change,
            single,
            ..
        } = self;
        let mut out = Vec::with_capacity(3);
        if let (true, Some(s)) = (lock, single.lock) {
            out.push((s, owned![run_id.clone()], "lock a run", false, false));
        }
        if let (Some((next, bytes)), Some(s)) = (check, single.check) {
            out.push((
                s,
                owned![run_id.clone(), next, bytes],
                "check a run is as its worker assumed",
                false,
                false,
            ));
        }
        if let (Some(c), Some(s)) = (change, single.update) {
            let clear = c.clear;
            out.push((s, c.single_params(run_id), "update a run", true, clear));
        }
        out
    }
}

/// A [`RunChange`] in owned fields, with the task's events (the default: no change, which
/// a [`RunWrite`] without one sends in its place).
#[derive(Default)]
pub(crate) struct Change {
    next_event_id: i64,
    added_bytes: i64,
    summary: Option<Vec<u8>>,
    ready_at: Option<i64>,
    status: Option<&'static str>,
    closed_ms: Option<i64>,
    result: Option<Vec<u8>>,
    failure: Option<String>,
    versioning: Option<String>,
    build_id: Option<String>,
    /// `(first id, encoded events)`.
    events: Option<(i64, Vec<u8>)>,
    /// Whether the run closes and its inbox, timers, updates and activities go.
    clear: bool,
    /// The stored `Abandoned` update state, for a clear.
    abandoned: Option<Vec<u8>>,
}

impl Change {
    /// The owned form of `change` and its events; `clear` for a close that clears.
    pub(crate) fn new(
        change: &RunChange<'_>,
        events: Option<(u64, &[u8])>,
        clear: bool,
    ) -> Result<Self> {
        let close = change.close.as_ref();
        let clear = clear && close.is_some();
        Ok(Change {
            next_event_id: change.next_event_id.min(i64::MAX as u64) as i64,
            added_bytes: change.added_bytes.min(i64::MAX as u64) as i64,
            summary: change.summary.map(|p| p.as_bytes().to_vec()),
            ready_at: change.ready_at,
            status: close.map(|c| c.status.as_str()),
            closed_ms: close.map(|c| c.closed_ms),
            result: close.and_then(|c| c.result).map(|p| p.as_bytes().to_vec()),
            failure: close.and_then(|c| c.failure).map(str::to_string),
            versioning: change.versioning.map(|v| v.behavior.to_string()),
            build_id: change
                .versioning
                .and_then(|v| v.build_id)
                .map(str::to_string),
            events: events.map(|(id, data)| (id.min(i64::MAX as u64) as i64, data.to_vec())),
            clear,
            abandoned: if clear {
                Some(crate::rows::to_blob(
                    "update state",
                    &wf_core::store::UpdateState::Abandoned,
                )?)
            } else {
                None
            },
        })
    }

    /// Whether it clears a closed run's rows.
    pub(crate) fn clears(&self) -> bool {
        self.clear
    }

    /// Its statement when it goes alone ([`update_run_sql`]).
    pub(crate) fn update_sql(&self) -> &'static str {
        update_run_sql(self.events.is_some(), self.clear)
    }

    /// The parameters of [`update_sql`](Self::update_sql) for run `run_id`.
    fn single_params(self, run_id: String) -> Vec<Owned> {
        let mut params = owned![
            run_id,
            self.next_event_id,
            self.added_bytes,
            self.summary,
            self.ready_at,
            self.status,
            self.closed_ms,
            self.result,
            self.failure,
            self.versioning,
            self.build_id,
        ];
        if let Some((first_id, data)) = self.events {
            params.extend(owned![first_id, data]);
        }
        if let (true, Some(abandoned)) = (self.clear, self.abandoned) {
            params.push(Box::new(abandoned));
        }
        params
    }
}

/// The parameters of [`WRITE_RUNS`] for consecutive items of distinct runs.
pub(crate) fn params(items: Vec<RunWrite>) -> Vec<Owned> {
    let n = items.len();
    let mut ids = Vec::with_capacity(n);
    let mut locks = Vec::with_capacity(n);
    let mut checks = Vec::with_capacity(n);
    let mut assumed_next = Vec::with_capacity(n);
    let mut assumed_bytes = Vec::with_capacity(n);
    let mut writes = Vec::with_capacity(n);
    let mut next = Vec::with_capacity(n);
    let mut added = Vec::with_capacity(n);
    let mut summaries = Vec::with_capacity(n);
    let mut ready = Vec::with_capacity(n);
    let mut statuses = Vec::with_capacity(n);
    let mut closed = Vec::with_capacity(n);
    let mut results = Vec::with_capacity(n);
    let mut failures = Vec::with_capacity(n);
    let mut versionings = Vec::with_capacity(n);
    let mut builds = Vec::with_capacity(n);
    let mut first_ids = Vec::with_capacity(n);
    let mut events = Vec::with_capacity(n);
    let mut clears = Vec::with_capacity(n);
    let mut abandoned = Vec::new();
    for item in items {
        ids.push(item.run_id);
        locks.push(item.lock);
        checks.push(item.check.is_some());
        assumed_next.push(item.check.map(|c| c.0));
        assumed_bytes.push(item.check.map(|c| c.1));
        writes.push(item.change.is_some());
        let c = item.change.unwrap_or_default();
        next.push(Some(c.next_event_id));
        added.push(Some(c.added_bytes));
        summaries.push(c.summary);
        ready.push(c.ready_at);
        statuses.push(c.status);
        closed.push(c.closed_ms);
        results.push(c.result);
        failures.push(c.failure);
        versionings.push(c.versioning);
        builds.push(c.build_id);
        let (first_id, data) = c.events.unzip();
        first_ids.push(first_id);
        events.push(data);
        clears.push(c.clear);
        if let Some(a) = c.abandoned {
            abandoned = a;
        }
    }
    owned![
        ids,
        locks,
        checks,
        assumed_next,
        assumed_bytes,
        writes,
        next,
        added,
        summaries,
        ready,
        statuses,
        closed,
        results,
        failures,
        versionings,
        builds,
        first_ids,
        events,
        clears,
        abandoned
    ]
}

/// The insert of consecutive new runs' rows (and their `WorkflowStarted` events), in their
/// order (`seq` is creation order): each as just created, or with its first task's change
/// applied (`settled`; see `runs.rs`'s `insert_run_row`). Starts that arrive together queue
/// their inserts one after the other (their reads were done ahead: see `prefetch_latest`), and
/// this sends them as one statement.
pub(crate) const INSERT_RUNS: &str = "WITH r AS (SELECT * FROM unnest($1::text[], \
     $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::text[], $8::bool[], \
     $9::int8[], $10::int8[], $11::bytea[], $12::int8[], $13::text[], $14::text[], \
     $15::bytea[]) WITH ORDINALITY AS r(run_id, workflow_id, chain_id, workflow_type, \
     history_bytes, created_ms, task_queue, settled, next_event_id, added, summary, ready_at, \
     versioning, build_id, started, n)), \
     appended AS (INSERT INTO events (run_id, event_id, data) \
     SELECT r.run_id, 1, r.started FROM r WHERE r.started IS NOT NULL) \
     INSERT INTO runs (run_id, workflow_id, chain_id, workflow_type, status, next_event_id, \
     history_bytes, created_ms, summary, ready_at, task_queue, build_id, versioning) \
     SELECT r.run_id, r.workflow_id, r.chain_id, r.workflow_type, 'running', \
     CASE WHEN r.settled THEN r.next_event_id ELSE 2 END, \
     r.history_bytes + CASE WHEN r.settled THEN r.added ELSE 0 END, r.created_ms, \
     CASE WHEN r.settled THEN r.summary ELSE '\\x'::bytea END, \
     CASE WHEN r.settled THEN r.ready_at ELSE r.created_ms END, r.task_queue, \
     CASE WHEN r.settled THEN COALESCE(b.build_id, r.build_id) ELSE b.build_id END, \
     CASE WHEN r.settled THEN r.versioning END \
     FROM r LEFT JOIN task_queue_builds b ON b.task_queue = r.task_queue ORDER BY r.n";

/// A new run's row, queued (see [`INSERT_RUNS`]).
pub(crate) struct NewRunRow {
    /// The prepared [`INSERT_RUNS`].
    pub(crate) statement: Statement,
    pub(crate) run_id: String,
    pub(crate) workflow_id: String,
    pub(crate) chain_id: String,
    pub(crate) workflow_type: String,
    pub(crate) history_bytes: i64,
    pub(crate) created_ms: i64,
    pub(crate) task_queue: String,
    /// Its first task's change, applied at once: (next event id, added bytes, summary, ready
    /// at, versioning, build).
    pub(crate) settled: Option<Settled>,
    /// Its encoded `WorkflowStarted` event.
    pub(crate) started: Option<Vec<u8>>,
}

/// A new run's first task's change (see [`NewRunRow::settled`]).
#[derive(Default)]
pub(crate) struct Settled {
    pub(crate) next_event_id: i64,
    pub(crate) added_bytes: i64,
    pub(crate) summary: Vec<u8>,
    pub(crate) ready_at: Option<i64>,
    pub(crate) versioning: Option<String>,
    pub(crate) build_id: Option<String>,
}

/// The parameters of [`INSERT_RUNS`] for consecutive new runs.
pub(crate) fn insert_params(rows: Vec<NewRunRow>) -> Vec<Owned> {
    let n = rows.len();
    let mut run_ids = Vec::with_capacity(n);
    let mut workflow_ids = Vec::with_capacity(n);
    let mut chain_ids = Vec::with_capacity(n);
    let mut types = Vec::with_capacity(n);
    let mut bytes = Vec::with_capacity(n);
    let mut created = Vec::with_capacity(n);
    let mut queues = Vec::with_capacity(n);
    let mut settled = Vec::with_capacity(n);
    let mut next = Vec::with_capacity(n);
    let mut added = Vec::with_capacity(n);
    let mut summaries = Vec::with_capacity(n);
    let mut ready = Vec::with_capacity(n);
    let mut versionings = Vec::with_capacity(n);
    let mut builds = Vec::with_capacity(n);
    let mut started = Vec::with_capacity(n);
    for row in rows {
        run_ids.push(row.run_id);
        workflow_ids.push(row.workflow_id);
        chain_ids.push(row.chain_id);
        types.push(row.workflow_type);
        bytes.push(row.history_bytes);
        created.push(row.created_ms);
        queues.push(row.task_queue);
        settled.push(row.settled.is_some());
        let s = row.settled.unwrap_or_default();
        next.push(s.next_event_id);
        added.push(s.added_bytes);
        summaries.push(s.summary);
        ready.push(s.ready_at);
        versionings.push(s.versioning);
        builds.push(s.build_id);
        started.push(row.started);
    }
    owned![
        run_ids,
        workflow_ids,
        chain_ids,
        types,
        bytes,
        created,
        queues,
        settled,
        next,
        added,
        summaries,
        ready,
        versionings,
        builds,
        started
    ]
}

/// The advisory lock of a run's workflow id.
pub(crate) const LOCK_RUN: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/' || workflow_id, 0)) FROM runs WHERE run_id = $1";

/// The change of a run's row: `$1` to `$11` (see `commits::Change::single_params`).
macro_rules! update_run_sql {
    () => {
        "UPDATE runs SET next_event_id = $2, history_bytes = history_bytes + $3, \
         summary = COALESCE($4, summary), \
         task_failure = CASE WHEN $4::bytea IS NULL THEN task_failure END, \
         lease_owner = NULL, lease_until = NULL, ready_at = $5, \
         status = COALESCE($6, status), closed_ms = COALESCE($7, closed_ms), \
         result = COALESCE($8, result), failure = COALESCE($9, failure), \
         versioning = COALESCE(versioning, $10), build_id = COALESCE(build_id, $11) \
         WHERE run_id = $1"
    };
}

/// The check that a run's row is as its worker assumed (`$2`, `$3`: its history position and
/// size; see `assume_run_row`), alone.
pub(crate) const CHECK_ASSUMED: &str =
    "WITH r AS (SELECT next_event_id, history_bytes, status, lease_owner, build_id \
     FROM runs WHERE run_id = $1 FOR UPDATE) \
     SELECT CASE WHEN EXISTS (SELECT 1 FROM r WHERE status = 'running' \
     AND next_event_id = $2 AND history_bytes = $3 AND lease_owner IS NULL \
     AND build_id IS NULL) \
     AND NOT EXISTS (SELECT 1 FROM inbox i WHERE i.run_id = $1) \
     THEN 0 ELSE wf_stale($1) END";

/// The clearing of a closed run `$1` as the tail of a `WITH` (a data-modifying `WITH` runs
/// whether or not it is referred to): its inbox, timers and activities deleted, its unfinished
/// updates marked with the `Abandoned` state in the given parameter. The statement's own part
/// deletes the activities, so its row count says whether an engine ran any of them.
macro_rules! clear_sql {
    ($abandoned:literal) => {
        concat!(
            "inbox_gone AS (DELETE FROM inbox WHERE run_id = $1), \
             timers_gone AS (DELETE FROM timers WHERE run_id = $1), \
             abandoned AS (UPDATE updates SET state = ",
            $abandoned,
            ", final = TRUE WHERE run_id = $1 AND NOT final) \
             DELETE FROM activities WHERE run_id = $1"
        )
    };
}
pub(crate) use clear_sql;

/// A workflow task's writes to one run, alone, as one statement: the change of its row, with
/// its events (`$12`, `$13`: first id, data) if any, and for a close that clears, the clearing
/// of its rows (the `Abandoned` update state in the last parameter; the statement's own part
/// deletes the activities, so its row count says whether an engine ran any).
pub(crate) fn update_run_sql(events: bool, clear: bool) -> &'static str {
    match (events, clear) {
        (false, false) => update_run_sql!(),
        (true, false) => concat!(
            "WITH appended AS (INSERT INTO events (run_id, event_id, data) \
             VALUES ($1, $12, $13)) ",
            update_run_sql!()
        ),
        (false, true) => concat!(
            "WITH updated AS (",
            update_run_sql!(),
            "), ",
            clear_sql!("$12")
        ),
        (true, true) => concat!(
            "WITH appended AS (INSERT INTO events (run_id, event_id, data) \
             VALUES ($1, $12, $13)), updated AS (",
            update_run_sql!(),
            "), ",
            clear_sql!("$14")
        ),
    }
}
