//! A PostgreSQL connection inside a transaction, as the rules see it: the [`Tx`] of
//! [`PostgresStore`](crate::PostgresStore), its statement cache, and what spans its tables
//! (wake-ups, savepoints).

use crate::commits::{self, Change, NewRunRow, RunWrite};
use crate::rows::db;
use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};
use wf_core::store::{StoreError, Tx};

/// The result of a primitive.
pub(crate) type Result<T> = std::result::Result<T, StoreError>;

/// Statement parameters.
pub(crate) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

pub(crate) use crate::rows::{owned, Owned};

/// A statement whose outcome the rule does not need: queued, and sent with the next one whose
/// outcome it needs (see [`PostgresTx`]).
enum Queued {
    /// A prepared statement with its parameters.
    Prepared {
        statement: Statement,
        params: Vec<Owned>,
        what: &'static str,
        /// Whether it may change a row (see [`writes`]).
        write: bool,
        /// Whether rows it changed are news for other processes (see
        /// [`later_waking`](PostgresTx::later_waking)).
        wakes: bool,
    },
    /// A run's part of a commit: consecutive ones are sent as one statement (see
    /// `commits.rs`).
    Run(Box<RunWrite>),
    /// A new run's row: consecutive ones are sent as one statement (see `commits.rs`).
    Insert(Box<NewRunRow>),
    /// Parameterless statements (savepoints, the transaction's `BEGIN`).
    Simple {
        sql: Cow<'static, str>,
        what: &'static str,
        /// Whether it stays queued when the request's statements are dropped (a `BEGIN`).
        kept: bool,
    },
}

/// Whether a statement may change a row: anything but a `SELECT` (a `SELECT ... FOR UPDATE` or
/// an advisory lock only locks, which a rolled back request may leave held until the commit).
fn writes(sql: &str) -> bool {
    !sql.trim_start().starts_with("SELECT")
}

/// What a commit's round trip learnt of its transaction's id (see
/// [`PostgresTx::send_commit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Xid {
    /// The transaction wrote nothing (it has no id): whether it committed does not matter.
    NotAssigned,
    /// Its id, and the token its commit writes to the writer's commit mark (`None`: the
    /// writer has no mark on this server; see `marks.rs`).
    Id(i64, Option<i64>),
    /// The server answered the question with an error: the transaction did not commit.
    Refused,
    /// The answer was lost with the connection.
    Unknown,
}

/// A statement's future, borrowing the connection.
type Sending<'a> = Pin<Box<dyn Future<Output = std::result::Result<u64, StoreError>> + Send + 'a>>;

/// The transaction a store connection has open (a writer's group commit, or a reader's
/// snapshot). Every primitive is one statement (prepared once per connection); a writer's
/// reads of a run lock it (see `runs.rs`), a reader's never do.
///
/// Write-behind: a statement whose outcome the rule does not need (an insert, an update that
/// returns nothing) is queued, not awaited; the queue is sent in order, pipelined on the
/// connection, in the same round trip as the next statement whose outcome is needed (a read,
/// a savepoint, the end of the request). A rule thus costs one round trip per read it makes,
/// plus one to close it. A queued statement's failure is the failure of whatever sent it (the
/// statements after it fail too: the transaction is aborted until the request's savepoint is
/// rolled back).
pub struct PostgresTx {
    pub(crate) client: Client,
    statements: HashMap<&'static str, Statement>,
    /// Statements not yet sent, in order.
    queued: Vec<Queued>,
    /// Whether this is a writer's transaction: reads of runs take their locks.
    pub(crate) writer: bool,
    /// What the transaction committed that other processes should hear of (`NOTIFY`).
    pub(crate) notes: crate::notify::Notes,
    /// The runs whose workflow id's advisory lock this transaction holds (see `runs.rs`).
    pub(crate) locked: std::collections::HashSet<String>,
    /// The workflow ids whose advisory lock this transaction holds.
    pub(crate) locked_workflows: std::collections::HashSet<String>,
    /// How long the last commit's round trip took (see [`send_commit`](Self::send_commit)).
    pub(crate) commit_time: std::time::Duration,
    /// Whether a commit may take the run's row its worker assumed instead of reading it (see
    /// `runs.rs`): while a writer's batch runs without savepoints, whose failure runs the
    /// batch again with them (and with this off).
    pub(crate) speculate: bool,
    /// Whether, since the writer last cleared it, a statement that may change a row was sent
    /// or a statement failed at the server: a request that failed without touching the
    /// transaction needs nothing rolled back (see `writer.rs`).
    pub(crate) touched: bool,
    /// Where the queue's statements of the writer's current request begin: a request adds to
    /// its own queued items only.
    pub(crate) request_from: usize,
    /// Workflow ids' latest runs read ahead for a group's requests, under their locks (see
    /// `runs.rs`'s `prefetch_latest`): each answers one read of it, unless a write of the
    /// transaction may have changed it first.
    pub(crate) prefetched: HashMap<String, Option<wf_core::store::RunRow>>,
    /// A writer's commit mark (see `marks.rs`); `None` for a reader.
    pub(crate) mark: Option<crate::marks::Mark>,
    /// Whether a nested savepoint is open: a check that may fail is then sent at once, so
    /// that its failure is the nested part's (see [`Tx::savepoint`]).
    pub(crate) nested: bool,
}

/// Runs `queued` and then `last` in one round trip: every request is sent, in order, on the
/// first poll (tokio-postgres pipelines the requests of futures polled together). Answers the
/// first failure among the queued statements, and `last`'s own outcome.
async fn pipelined<'a, T>(
    client: &'a Client,
    queued: &'a [Queued],
    last: impl Future<Output = T> + Send + 'a,
) -> (Option<StoreError>, bool, T) {
    let refs: Vec<Vec<&(dyn ToSql + Sync)>> = queued
        .iter()
        .map(|q| match q {
            Queued::Prepared { params, .. } => {
                params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect()
            }
            Queued::Run(_) | Queued::Insert(_) | Queued::Simple { .. } => Vec::new(),
        })
        .collect();
    let mut sending: Vec<(Sending<'_>, Option<Result<u64>>)> = queued
        .iter()
        .zip(&refs)
        .map(|(q, params)| {
            let f: Sending<'_> = match q {
                Queued::Prepared {
                    statement, what, ..
                } => Box::pin(
                    async move { client.execute(statement, params).await.map_err(db(what)) },
                ),
                Queued::Run(_) | Queued::Insert(_) => Box::pin(async {
                    Err(StoreError::bug("a run's write was sent without its group"))
                }),
                Queued::Simple { sql, what, .. } => Box::pin(async move {
                    client
                        .batch_execute(sql)
                        .await
                        .map(|()| 0)
                        .map_err(db(what))
                }),
            };
            (f, None)
        })
        .collect();
    let mut last = std::pin::pin!(last);
    let mut out = None;
    // Polled in order, each unfinished one on every wake: the first poll sends them all.
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (f, done) in sending.iter_mut().filter(|(_, done)| done.is_none()) {
            match f.as_mut().poll(cx) {
                Poll::Ready(r) => *done = Some(r),
                Poll::Pending => waiting = true,
            }
        }
        if out.is_none() {
            match last.as_mut().poll(cx) {
                Poll::Ready(r) => out = Some(r),
                Poll::Pending => waiting = true,
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    let woke = queued.iter().zip(&sending).any(|(q, (_, done))| {
        matches!(q, Queued::Prepared { wakes: true, .. }) && matches!(done, Some(Ok(n)) if *n > 0)
    });
    let failed = sending.into_iter().find_map(|(_, done)| done?.err());
    (
        failed,
        woke,
        out.expect("the pipeline ended with its last statement answered"),
    )
}

/// The queue as sent: each run of consecutive [`Queued::Run`] items of distinct runs, and each
/// run of consecutive [`Queued::Insert`] items, becomes one statement (see `commits.rs`).
fn lower(queued: Vec<Queued>) -> Vec<Queued> {
    if !queued
        .iter()
        .any(|q| matches!(q, Queued::Run(_) | Queued::Insert(_)))
    {
        return queued;
    }
    let mut out = Vec::with_capacity(queued.len());
    let mut runs: Vec<RunWrite> = Vec::new();
    let mut inserts: Vec<NewRunRow> = Vec::new();
    for q in queued {
        match q {
            Queued::Run(item) => {
                end_inserts(&mut out, &mut inserts);
                if runs.iter().any(|g| g.run_id == item.run_id) {
                    end_runs(&mut out, &mut runs);
                }
                runs.push(*item);
            }
            Queued::Insert(row) => {
                end_runs(&mut out, &mut runs);
                inserts.push(*row);
            }
            other => {
                end_runs(&mut out, &mut runs);
                end_inserts(&mut out, &mut inserts);
                out.push(other);
            }
        }
    }
    end_runs(&mut out, &mut runs);
    end_inserts(&mut out, &mut inserts);
    out
}

/// Sends consecutive [`Queued::Run`] items, if any, as one statement (one alone as plain
/// statements: see `commits::Single`).
fn end_runs(out: &mut Vec<Queued>, group: &mut Vec<RunWrite>) {
    if let [item] = group.as_slice() {
        if item.can_go_alone() {
            let plain = group.drain(..).flat_map(RunWrite::alone);
            out.extend(
                plain.map(|(statement, params, what, write, wakes)| Queued::Prepared {
                    statement,
                    params,
                    what,
                    write,
                    wakes,
                }),
            );
            return;
        }
    }
    let Some(first) = group.first() else {
        return;
    };
    let statement = first.statement.clone();
    let write = group.iter().any(|g| g.change.is_some());
    let wakes = group
        .iter()
        .any(|g| g.change.as_ref().is_some_and(Change::clears));
    out.push(Queued::Prepared {
        statement,
        params: commits::params(std::mem::take(group)),
        what: "write runs",
        write,
        wakes,
    });
}

/// Sends consecutive [`Queued::Insert`] items, if any, as one statement.
fn end_inserts(out: &mut Vec<Queued>, group: &mut Vec<NewRunRow>) {
    let Some(first) = group.first() else {
        return;
    };
    out.push(Queued::Prepared {
        statement: first.statement.clone(),
        params: commits::insert_params(std::mem::take(group)),
        what: "insert runs",
        write: true,
        wakes: false,
    });
}

impl PostgresTx {
    /// Queues a run's part of a commit (see `commits.rs`): the lock of its workflow id unless
    /// held, the check of the row its worker assumed (`check`), its change. A change for the
    /// run whose check this request queued last joins that item.
    pub(crate) async fn queue_run_write(
        &mut self,
        run_id: &str,
        check: Option<(i64, i64)>,
        change: Option<Change>,
    ) -> Result<()> {
        let statement = self.statement(commits::WRITE_RUNS).await?;
        let lock = self.writer && !self.locked.contains(run_id);
        if lock {
            self.locked.insert(run_id.to_string());
        }
        let update = match &change {
            Some(c) => Some(self.statement(c.update_sql()).await?),
            None => None,
        };
        if change.is_some() {
            self.prefetched
                .retain(|_, row| row.as_ref().is_none_or(|r| r.record.run_id != run_id));
        }
        let own = self.queued.len() > self.request_from;
        if let (true, Some(Queued::Run(last)), Some(_)) = (own, self.queued.last_mut(), &change) {
            if last.run_id == run_id && last.change.is_none() {
                last.change = change;
                last.single.update = update;
                return Ok(());
            }
        }
        let single = commits::Single {
            lock: match lock {
                true => Some(self.statement(commits::LOCK_RUN).await?),
                false => None,
            },
            check: match check {
                Some(_) => Some(self.statement(commits::CHECK_ASSUMED).await?),
                None => None,
            },
            update,
        };
        self.queued.push(Queued::Run(Box::new(RunWrite {
            statement,
            run_id: run_id.to_string(),
            lock,
            check,
            change,
            single,
        })));
        Ok(())
    }

    /// Queues a new run's row (see `commits.rs`); its workflow id's lock is held.
    pub(crate) fn queue_insert(&mut self, row: NewRunRow) {
        self.queued.push(Queued::Insert(Box::new(row)));
    }

    pub(crate) fn new(client: Client, writer: bool) -> PostgresTx {
        PostgresTx {
            client,
            statements: HashMap::new(),
            queued: Vec::new(),
            writer,
            notes: Default::default(),
            locked: Default::default(),
            locked_workflows: Default::default(),
            commit_time: Default::default(),
            touched: false,
            speculate: false,
            request_from: 0,
            prefetched: HashMap::new(),
            mark: writer.then(crate::marks::Mark::new),
            nested: false,
        }
    }

    /// The prepared statement for `sql` (prepared on first use on this connection).
    pub(crate) async fn statement(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .client
            .prepare(sql)
            .await
            .map_err(db("prepare a statement"))?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }

    /// Sends the queued statements and then `last`'s, in one round trip (see [`pipelined`]).
    async fn pipelined<'s, T, F>(
        &'s mut self,
        last: impl FnOnce(&'s Client) -> F,
    ) -> (Option<StoreError>, T)
    where
        F: Future<Output = T> + Send + 's,
    {
        let queued = std::mem::take(&mut self.queued);
        // The current request touched the transaction if a write of its own goes out (the
        // earlier requests' writes are theirs: should one fail, `failed` says so below).
        if queued.iter().skip(self.request_from).any(|q| match q {
            Queued::Prepared { write, .. } => *write,
            Queued::Run(item) => item.change.is_some(),
            Queued::Insert(_) => true,
            Queued::Simple { .. } => false,
        }) {
            self.touched = true;
        }
        // What the request queues from now on is all its own.
        self.request_from = 0;
        let queued = lower(queued);
        let client = &self.client;
        if queued.is_empty() {
            return (None, last(client).await);
        }
        let (failed, woke, out) = pipelined(client, &queued, last(client)).await;
        if failed.is_some() {
            self.touched = true;
        }
        if woke {
            self.notes.work = true;
        }
        (failed, out)
    }

    /// Notes a statement of `sql` about to be sent, and then its outcome (see
    /// [`touched`](Self::touched)).
    fn note<T, E>(&mut self, sql: &str, outcome: &std::result::Result<T, E>) {
        if writes(sql) || outcome.is_err() {
            self.touched = true;
        }
        if writes(sql) {
            self.prefetched.clear();
        }
    }

    /// Queues a statement that returns nothing the rule needs (see [`PostgresTx`]).
    pub(crate) async fn later(
        &mut self,
        sql: &'static str,
        params: Vec<Owned>,
        what: &'static str,
    ) -> Result<()> {
        self.queue(sql, params, what, false).await
    }

    /// [`later`](Self::later), for a statement whose changed rows, if any, other processes
    /// should hear of: the transaction's [`notes`](Self::notes) say so once it was sent.
    pub(crate) async fn later_waking(
        &mut self,
        sql: &'static str,
        params: Vec<Owned>,
        what: &'static str,
    ) -> Result<()> {
        self.queue(sql, params, what, true).await
    }

    async fn queue(
        &mut self,
        sql: &'static str,
        params: Vec<Owned>,
        what: &'static str,
        wakes: bool,
    ) -> Result<()> {
        let statement = self.statement(sql).await?;
        let write = writes(sql);
        if write {
            // It may change a run read ahead (see `prefetched`).
            self.prefetched.clear();
        }
        self.queued.push(Queued::Prepared {
            statement,
            params,
            what,
            write,
            wakes,
        });
        Ok(())
    }

    /// Queues parameterless statements.
    pub(crate) fn later_batch(&mut self, sql: impl Into<Cow<'static, str>>, what: &'static str) {
        self.queued.push(Queued::Simple {
            sql: sql.into(),
            what,
            kept: false,
        });
    }

    /// Queues the transaction's opening statements (sent with its first statement; a request
    /// that fails before it sent anything does not drop them).
    pub(crate) fn begin_later(&mut self, sql: &'static str) {
        self.queued.push(Queued::Simple {
            sql: sql.into(),
            what: "begin a transaction",
            kept: true,
        });
    }

    /// Whether statements wait to be sent.
    pub(crate) fn has_queued(&self) -> bool {
        !self.queued.is_empty()
    }

    /// How many statements wait to be sent.
    pub(crate) fn queued_len(&self) -> usize {
        self.queued.len()
    }

    /// Drops the statements queued after the first `n` (a request that failed before sending
    /// them).
    pub(crate) fn truncate_queued(&mut self, n: usize) {
        self.queued.truncate(n);
    }

    /// Drops every statement not yet sent (a new transaction, a new connection).
    pub(crate) fn drop_queued(&mut self) {
        self.queued.clear();
    }

    /// Drops the request's statements not yet sent (it failed, or runs again).
    pub(crate) fn discard_queued(&mut self) {
        self.queued
            .retain(|q| matches!(q, Queued::Simple { kept: true, .. }));
    }

    /// Runs a statement; the number of rows it changed.
    pub(crate) async fn execute(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
        what: &'static str,
    ) -> Result<u64> {
        let s = self.statement(sql).await?;
        let (failed, n) = self.pipelined(|c| c.execute(&s, params)).await;
        self.note(sql, &n);
        failed.map_or(Ok(()), Err)?;
        n.map_err(db(what))
    }

    /// Runs a query; its rows.
    pub(crate) async fn query(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
        what: &'static str,
    ) -> Result<Vec<Row>> {
        let s = self.statement(sql).await?;
        let (failed, rows) = self.pipelined(|c| c.query(&s, params)).await;
        self.note(sql, &rows);
        failed.map_or(Ok(()), Err)?;
        rows.map_err(db(what))
    }

    /// Runs a query of at most one row.
    pub(crate) async fn query_opt(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
        what: &'static str,
    ) -> Result<Option<Row>> {
        let s = self.statement(sql).await?;
        let (failed, row) = self.pipelined(|c| c.query_opt(&s, params)).await;
        self.note(sql, &row);
        failed.map_or(Ok(()), Err)?;
        row.map_err(db(what))
    }

    /// Runs a query of exactly one row.
    pub(crate) async fn query_one(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
        what: &'static str,
    ) -> Result<Row> {
        let s = self.statement(sql).await?;
        let (failed, row) = self.pipelined(|c| c.query_one(&s, params)).await;
        self.note(sql, &row);
        failed.map_or(Ok(()), Err)?;
        row.map_err(db(what))
    }

    /// Runs parameterless statements (transaction control) after the queued ones.
    pub(crate) async fn batch(&mut self, sql: &str, what: &'static str) -> Result<()> {
        let (failed, done) = self.send_then(sql, what).await;
        failed.map_or(done, Err)
    }

    /// Sends the queued statements and then `sql` (parameterless statements), in one round
    /// trip: the first failure among the queued ones, and `sql`'s own outcome. When a queued
    /// statement failed, `sql` fails too unless it rolls back past it.
    pub(crate) async fn send_then(
        &mut self,
        sql: &str,
        what: &'static str,
    ) -> (Option<StoreError>, Result<()>) {
        let (failed, done) = self.pipelined(|c| c.batch_execute(sql)).await;
        if done.is_err() {
            self.touched = true;
        }
        (failed, done.map_err(db(what)))
    }

    /// Sends the queued statements, then asks for the transaction's id, then `sql` (which ends
    /// with the `COMMIT`), all in one round trip: as [`send_then`](Self::send_then), plus what
    /// it learnt of the transaction's id, with which the writer's `settle` finds out on a
    /// new connection whether a commit whose connection was lost went through. The id's
    /// answer comes before the `COMMIT` runs, so a connection lost while committing has
    /// usually delivered it. Fails before sending anything only if the id's statement cannot
    /// be prepared.
    pub(crate) async fn send_commit(
        &mut self,
        sql: &str,
        what: &'static str,
    ) -> Result<(Option<StoreError>, Result<()>, Xid)> {
        let mark_statement = self.statement(crate::marks::MARK).await?;
        let slot = self.mark.map_or(0, |m| m.slot);
        let sent = std::time::Instant::now();
        let (failed, (xid, done)) = self
            .pipelined(move |c| async move {
                // Polled together: both are sent on the first poll, in this order.
                futures_util::future::join(
                    c.query_one(&mark_statement, &[&slot]),
                    c.batch_execute(sql),
                )
                .await
            })
            .await;
        self.commit_time = sent.elapsed();
        let xid = match xid.map(|row| {
            (
                row.try_get::<_, Option<i64>>(0),
                row.try_get::<_, Option<i64>>(1),
            )
        }) {
            Ok((Ok(Some(id)), Ok(token))) => Xid::Id(id, token),
            Ok((Ok(None), _)) => Xid::NotAssigned,
            // The server answered it with an error: the transaction was aborted there (or the
            // server ended the session), before its `COMMIT`.
            Err(e) if e.as_db_error().is_some() => Xid::Refused,
            Ok(_) | Err(_) => Xid::Unknown,
        };
        if let (Ok(()), Xid::Id(_, Some(token)), Some(mark)) = (&done, xid, self.mark.as_mut()) {
            mark.token = token;
        }
        Ok((failed, done.map_err(db(what)), xid))
    }

    /// Prepares the statement of [`send_commit`](Self::send_commit) (once per connection):
    /// done before the transaction's statements, as a statement cannot be prepared in a
    /// transaction that a failed statement aborted.
    pub(crate) async fn prepare_commit(&mut self) -> Result<()> {
        self.statement(crate::marks::MARK).await.map(|_| ())
    }

    /// Forgets the advisory locks it noted: a new transaction, or a rolled back savepoint.
    pub(crate) fn forget_locks(&mut self) {
        self.locked.clear();
        self.locked_workflows.clear();
        self.prefetched.clear();
    }

    /// Forgets the prepared statements (a new connection has none) and what was queued on the
    /// old one.
    pub(crate) fn replace_client(&mut self, client: Client) {
        self.client = client;
        self.statements.clear();
        self.drop_queued();
    }
}

impl Tx for PostgresTx {
    async fn next_wakeup(&mut self, now_ms: i64) -> Result<Option<i64>> {
        let row = self
            .query_one(
                "SELECT LEAST(
                    (SELECT MIN(fire_at) FROM timers WHERE fire_at > $1),
                    (SELECT MIN(ready_at) FROM runs WHERE status = 'running' AND ready_at > $1),
                    (SELECT MIN(lease_until) FROM runs
                        WHERE status = 'running' AND lease_until > $1),
                    (SELECT MIN(visible_at) FROM activities
                        WHERE lease_owner IS NULL AND visible_at > $1),
                    (SELECT MIN(lease_until) FROM activities
                        WHERE lease_owner IS NOT NULL AND lease_until > $1),
                    (SELECT MIN(schedule_deadline) FROM activities WHERE schedule_deadline > $1),
                    (SELECT MIN(next_check_ms) FROM schedules WHERE next_check_ms > $1),
                    (SELECT MIN(lease_until) FROM engines WHERE lease_until > $1)
                )",
                &[&now_ms],
                "compute the next wake-up",
            )
            .await?;
        crate::rows::get(&row, 0)
    }

    // The writer's own savepoint per request is named `request`: this one nests inside it.
    // Sent at once, so that a queued statement's failure is the rule's, not the nested part's.
    async fn savepoint(&mut self) -> Result<()> {
        self.batch("SAVEPOINT nested", "open a savepoint").await?;
        self.nested = true;
        Ok(())
    }

    // The statements queued since the savepoint are rolled back with it: their failures do not
    // count once the rollback succeeded.
    async fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.nested = false;
        let (failed, done) = self
            .send_then("ROLLBACK TO SAVEPOINT nested", "roll back a savepoint")
            .await;
        match (done, failed) {
            (Ok(()), _) => Ok(()),
            (Err(_), Some(e)) | (Err(e), None) => Err(e),
        }
    }

    async fn release_savepoint(&mut self) -> Result<()> {
        self.nested = false;
        self.later_batch("RELEASE SAVEPOINT nested", "close a savepoint");
        Ok(())
    }

    async fn append_and_update_run(
        &mut self,
        first_id: u64,
        events: &[u8],
        change: &wf_core::store::RunChange<'_>,
    ) -> Result<()> {
        let events = (!events.is_empty()).then_some((first_id, events));
        self.update_run_with_events(change, events, true).await
    }

    async fn assume_run(
        &mut self,
        run_id: &str,
        assumed: &wf_core::store::RunRecord,
    ) -> Result<(Option<wf_core::store::RunRow>, bool)> {
        self.assume_run_row(run_id, assumed).await
    }

    async fn insert_new_run(
        &mut self,
        run: &wf_core::store::RunRecord,
        started: &[u8],
        first: Option<&wf_core::store::RunChange<'_>>,
    ) -> Result<()> {
        self.insert_run_row(run, Some(started), first).await
    }

    async fn resolve_attempt(&mut self, attempt: &wf_core::store::Attempt<'_>) -> Result<()> {
        self.resolve_attempt_later(attempt).await
    }

    async fn clear_run(&mut self, run_id: &str) -> Result<()> {
        self.clear_closed(run_id).await
    }

    async fn load_run_and_peek_inbox(
        &mut self,
        run_id: &str,
        inbox_after: Option<Option<u64>>,
    ) -> Result<(Option<wf_core::store::RunRow>, bool)> {
        self.run_and_inbox(run_id, inbox_after).await
    }
}
