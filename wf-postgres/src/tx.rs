//! A PostgreSQL connection inside a transaction, as the rules see it: the [`Tx`] of
//! [`PostgresStore`](crate::PostgresStore), its statement cache, and what spans its tables
//! (wake-ups, savepoints).

use crate::rows::db;
use std::collections::HashMap;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};
use wf_core::store::{StoreError, Tx};

/// The result of a primitive.
pub(crate) type Result<T> = std::result::Result<T, StoreError>;

/// Statement parameters.
pub(crate) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// The transaction a store connection has open (a writer's group commit, or a reader's
/// snapshot). Every primitive is one statement (prepared once per connection); a writer's
/// reads of a run lock it (see `runs.rs`), a reader's never do.
pub struct PostgresTx {
    pub(crate) client: Client,
    statements: HashMap<&'static str, Statement>,
    /// Whether this is a writer's transaction: reads of runs take their locks.
    pub(crate) writer: bool,
    /// What the transaction committed that other processes should hear of (`NOTIFY`).
    pub(crate) notes: crate::notify::Notes,
    /// The runs whose workflow id's advisory lock this transaction holds (see `runs.rs`).
    pub(crate) locked: std::collections::HashSet<String>,
    /// The workflow ids whose advisory lock this transaction holds.
    pub(crate) locked_workflows: std::collections::HashSet<String>,
}

impl PostgresTx {
    pub(crate) fn new(client: Client, writer: bool) -> PostgresTx {
        PostgresTx {
            client,
            statements: HashMap::new(),
            writer,
            notes: Default::default(),
            locked: Default::default(),
            locked_workflows: Default::default(),
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

    /// Runs a statement; the number of rows it changed.
    pub(crate) async fn execute(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
        what: &'static str,
    ) -> Result<u64> {
        let s = self.statement(sql).await?;
        self.client.execute(&s, params).await.map_err(db(what))
    }

    /// Runs a query; its rows.
    pub(crate) async fn query(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
        what: &'static str,
    ) -> Result<Vec<Row>> {
        let s = self.statement(sql).await?;
        self.client.query(&s, params).await.map_err(db(what))
    }

    /// Runs a query of at most one row.
    pub(crate) async fn query_opt(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
        what: &'static str,
    ) -> Result<Option<Row>> {
        let s = self.statement(sql).await?;
        self.client.query_opt(&s, params).await.map_err(db(what))
    }

    /// Runs a query of exactly one row.
    pub(crate) async fn query_one(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
        what: &'static str,
    ) -> Result<Row> {
        let s = self.statement(sql).await?;
        self.client.query_one(&s, params).await.map_err(db(what))
    }

    /// Runs parameterless statements (transaction control).
    pub(crate) async fn batch(&mut self, sql: &str, what: &'static str) -> Result<()> {
        self.client.batch_execute(sql).await.map_err(db(what))
    }

    /// Forgets the advisory locks it noted: a new transaction, or a rolled back savepoint.
    pub(crate) fn forget_locks(&mut self) {
        self.locked.clear();
        self.locked_workflows.clear();
    }

    /// Forgets the prepared statements (a new connection has none).
    pub(crate) fn replace_client(&mut self, client: Client) {
        self.client = client;
        self.statements.clear();
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
    async fn savepoint(&mut self) -> Result<()> {
        self.batch("SAVEPOINT nested", "open a savepoint").await
    }

    async fn rollback_to_savepoint(&mut self) -> Result<()> {
        self.batch("ROLLBACK TO SAVEPOINT nested", "roll back a savepoint")
            .await
    }

    async fn release_savepoint(&mut self) -> Result<()> {
        self.batch("RELEASE SAVEPOINT nested", "close a savepoint")
            .await
    }
}
