//! The bench on PostgreSQL (`--store postgres`): a schema of its own per workload on the
//! database that `--postgres-url` or `WF_POSTGRES_URL` names, dropped when the bench ends; and
//! the extra worker processes of `--workers N` (this binary run again with `--pg-worker-child`).

use std::time::Duration;
use wf_sdk::postgres::PostgresOptions;
use wf_sdk::prelude::*;

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
    let client = wf_postgres::connect_raw(url)
        .await
        .map_err(|e| e.to_string())?;
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

/// The engine of a second worker process (`--workers 2`) on `schema`: the bench's workflows
/// and activities, its own workers.
async fn worker_engine(url: &str, schema: &str) -> Result<Engine, WfError> {
    let options = PostgresOptions {
        schema: schema.to_string(),
        ..Default::default()
    };
    Engine::builder()
        .workflow::<crate::Waiter>()
        .workflow::<crate::Counter>()
        .workflow::<crate::Chain>()
        .activities(crate::Noop)
        .postgres_with(url, options)
        .build()
        .await
}

/// The child process of `--workers N`: runs workers on `schema`, says "ready" on stdout, and
/// shuts down when its stdin closes (the parent is done or went away).
pub async fn worker_child(url: String, schema: String) -> Result<(), WfError> {
    let engine = worker_engine(&url, &schema).await?;
    println!("ready");
    let _ = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await;
    engine.shutdown().await;
    Ok(())
}

/// Worker processes of this bench binary on `schema`, started and stopped by their PIDs.
pub struct Workers {
    children: Vec<tokio::process::Child>,
}

impl Workers {
    /// Starts `n` worker processes on `schema` and waits until each is ready.
    pub async fn start(url: &str, schema: &str, n: usize) -> Result<Workers, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut workers = Workers {
            children: Vec::new(),
        };
        for _ in 0..n {
            let mut child = tokio::process::Command::new(&exe)
                .args(["--store", "postgres", "--postgres-url", url])
                .args(["--pg-worker-child", schema])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("cannot start a worker process: {e}"))?;
            let stdout = child
                .stdout
                .take()
                .ok_or("the worker's stdout is not piped")?;
            workers.children.push(child);
            let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
            match lines.next_line().await {
                Ok(Some(line)) if line == "ready" => {}
                other => return Err(format!("the worker process did not start: {other:?}")),
            }
        }
        Ok(workers)
    }

    /// Stops them: stdin closed (a clean shutdown), then, after 10 s, killed by PID.
    pub async fn stop(mut self) {
        for child in &mut self.children {
            drop(child.stdin.take());
        }
        for child in &mut self.children {
            let waited = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
            if !matches!(waited, Ok(Ok(_))) {
                if let Some(pid) = child.id() {
                    eprintln!("worker process {pid} did not stop; killing it");
                }
                let _ = child.kill().await;
            }
        }
    }
}
