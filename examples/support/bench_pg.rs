//! The bench on PostgreSQL (`--store postgres`): a schema of its own per workload on the
//! database that `--postgres-url` or `WF_POSTGRES_URL` names, dropped when the bench ends.

use wf_sdk::PostgresOptions;

/// The database URL: `--postgres-url`, else `WF_POSTGRES_URL`.
pub fn url(flag: Option<String>) -> Result<String, String> {
    flag.or_else(|| std::env::var("WF_POSTGRES_URL").ok())
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| {
            "--store postgres needs a database: --postgres-url URL or WF_POSTGRES_URL \
             (`.ci/postgres start` starts a throwaway one)"
                .to_string()
        })
}

/// The schemas of this bench process start with this.
pub fn prefix() -> String {
    format!("wf_bench_{}_", std::process::id())
}

/// Store options on workload `n`'s schema (the defaults otherwise).
pub fn options(n: usize) -> PostgresOptions {
    PostgresOptions {
        schema: format!("{}{n}", prefix()),
        ..Default::default()
    }
}

/// Runs `sql` on a connection of its own.
async fn exec(url: &str, sql: &str) -> Result<Vec<tokio_postgres::Row>, String> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    client.query(sql, &[]).await.map_err(|e| e.to_string())
}

/// The size of a schema's tables with their indexes and TOAST, in MB.
pub async fn schema_mb(url: &str, schema: &str) -> f64 {
    let sql = format!(
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::float8 FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' \
         AND c.relkind = 'r'"
    );
    match exec(url, &sql).await {
        Ok(rows) => rows.first().map(|r| r.get::<_, f64>(0)).unwrap_or(0.0) / 1e6,
        Err(_) => f64::NAN,
    }
}

/// Drops every schema this bench process made.
pub async fn drop_schemas(url: &str) {
    let sql = format!(
        "DO $$DECLARE s text; BEGIN FOR s IN SELECT nspname FROM pg_namespace \
         WHERE nspname LIKE '{}%' LOOP EXECUTE format('DROP SCHEMA %I CASCADE', s); \
         END LOOP; END$$",
        prefix()
    );
    if let Err(e) = exec(url, &sql).await {
        eprintln!("could not drop the bench's schemas: {e}");
    }
}
