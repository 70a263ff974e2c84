//! A long backfill that survives the loss of its workers, on the embedded SQLite store:
//!
//! one activity copies rows one by one and heartbeats its progress (the next row to copy)
//! after each; heartbeats are durable. Three engines take turns on one file:
//!
//! - worker A is dropped midway: its running attempt is handed back at once, and
//! - worker B picks it up, reads the last heartbeat (`ctx.last_heartbeat()`) and goes on from
//!   there; then B's process dies (its runtime is killed: nothing of it runs again);
//! - worker C opens the file; B's attempt sends no more heartbeats, so after the 300 ms
//!   heartbeat timeout it is retried, and attempt 2 also resumes from the last heartbeat.
//!
//! No attempt starts from row 0 again; at most the row in flight when a worker died is copied
//! twice. The timeline shows which rows each attempt copied.
//!
//! `cargo run --example backfill`

#[path = "support/demo_db.rs"]
mod demo_db;

use demo_db::DemoDb;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wf_sdk::history::HistoryEvent;
use wf_sdk::prelude::*;

/// Rows to copy.
pub const ROWS: u32 = 40;

/// What to backfill.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct BackfillInput {
    /// The table.
    pub table: String,
    /// How many rows it has.
    pub rows: u32,
}

/// What the finishing attempt reports.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Report {
    /// Rows in the table.
    pub rows: u32,
    /// The row the finishing attempt started from (its predecessor's last heartbeat).
    pub resumed_from: u32,
    /// The finishing attempt's number.
    pub attempt: u32,
}

/// The backfill workflow: one long, heartbeating activity.
#[derive(Default)]
pub struct Backfill;

#[workflow(name = "backfill")]
impl Backfill {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: BackfillInput,
    ) -> Result<Report, WorkflowError> {
        let report = ctx
            .activity(Copier::copy_rows, (input.table, input.rows))
            // No heartbeat for 300 ms: the attempt is presumed dead and retried.
            .heartbeat_timeout(Duration::from_millis(300))
            .retry(RetryPolicy {
                initial_interval: Duration::from_millis(50),
                ..RetryPolicy::default()
            })
            .await?;
        Ok(report)
    }
}

/// What one attempt did.
#[derive(Clone, Debug)]
pub struct AttemptLog {
    /// Which engine ran it.
    pub worker: &'static str,
    /// Attempt number.
    pub attempt: u32,
    /// The heartbeat it started from (0 when there was none).
    pub resumed_from: u32,
    /// Rows it copied, in order.
    pub copied: Vec<u32>,
}

/// The copying activity; each engine gets its own, sharing one log.
pub struct Copier {
    worker: &'static str,
    log: Arc<Mutex<Vec<AttemptLog>>>,
    timeline: Timeline,
}

#[activities]
impl Copier {
    /// Copies rows from the last heartbeat on, heartbeating the next row after each.
    #[activity]
    pub async fn copy_rows(
        &self,
        ctx: ActivityContext,
        table: String,
        rows: u32,
    ) -> Result<Report, ActivityError> {
        let resumed_from = ctx.last_heartbeat::<u32>().unwrap_or(0);
        self.timeline.say(format!(
            "  {} runs attempt {} of copy_rows; last heartbeat: {}",
            self.worker,
            ctx.attempt(),
            match ctx.last_heartbeat::<u32>() {
                Some(row) => format!("row {row}, so it starts there"),
                None => "none, so it starts at row 0".into(),
            }
        ));
        let slot = {
            let mut log = self.log.lock().expect("log lock");
            log.push(AttemptLog {
                worker: self.worker,
                attempt: ctx.attempt(),
                resumed_from,
                copied: Vec::new(),
            });
            log.len() - 1
        };
        let _ = table; // a real backfill would read and write the table here
        for row in resumed_from..rows {
            tokio::time::sleep(Duration::from_millis(10)).await;
            self.log.lock().expect("log lock")[slot].copied.push(row);
            ctx.heartbeat(&(row + 1)).await?;
        }
        Ok(Report {
            rows,
            resumed_from,
            attempt: ctx.attempt(),
        })
    }
}

#[derive(Clone, Copy)]
struct Timeline(Instant);

impl Timeline {
    fn say(&self, what: impl AsRef<str>) {
        println!(
            "[{:>6.1} ms] {}",
            self.0.elapsed().as_secs_f64() * 1000.0,
            what.as_ref()
        );
    }
}

fn span(rows: &[u32]) -> String {
    match (rows.first(), rows.last()) {
        (Some(a), Some(b)) => format!("rows {a}..={b} ({} rows)", rows.len()),
        _ => "no rows".into(),
    }
}

fn print_history(history: &[HistoryEvent]) {
    println!("  {:>4}  {:<22} details", "id", "event");
    for e in history {
        println!(
            "  {:>4}  {:<22} {}",
            e.event_id,
            e.kind.name(),
            e.kind.details()
        );
    }
}

async fn engine(
    path: &Path,
    worker: &'static str,
    log: &Arc<Mutex<Vec<AttemptLog>>>,
    timeline: Timeline,
) -> Result<Engine, WfError> {
    Engine::builder()
        .sqlite(path)
        .poll_interval(Duration::from_millis(50))
        // A lost worker's workflow tasks are taken over after 300 ms.
        .workflow_task_lease(Duration::from_millis(300))
        .workflow::<Backfill>()
        .activities(Copier {
            worker,
            log: log.clone(),
            timeline,
        })
        .build()
        .await
}

/// Total rows copied so far, over all attempts.
fn copied(log: &Mutex<Vec<AttemptLog>>) -> usize {
    let log = log.lock().expect("log lock");
    log.iter().map(|a| a.copied.len()).sum()
}

async fn until_copied(log: &Mutex<Vec<AttemptLog>>, rows: usize) -> Result<(), WfError> {
    for _ in 0..5000 {
        if copied(log) >= rows {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Err(WfError::Timeout(format!("waiting for {rows} rows")))
}

/// Starts the backfill; stops its worker midway, then kills the next one, and lets a third
/// finish it.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let t = Timeline(Instant::now());
    let db = DemoDb::new("backfill");
    let path = db.path();
    let log = Arc::new(Mutex::new(Vec::<AttemptLog>::new()));

    let a = engine(path, "worker A", &log, t).await?;
    t.say(format!(
        "worker A opens the SQLite store at {}",
        path.display()
    ));
    a.client()
        .start::<Backfill>(
            "backfill-orders",
            BackfillInput {
                table: "orders".into(),
                rows: ROWS,
            },
        )
        .await?;
    t.say(format!(
        "started backfill-orders: copy {ROWS} rows of `orders`"
    ));

    until_copied(&log, 12).await?;
    drop(a);
    t.say(format!(
        "worker A is dropped mid-activity after {} rows: its attempt is handed back",
        copied(&log)
    ));

    // Worker B lives on a runtime of its own, so that it can die like a killed process: no
    // task of it runs again, nothing is handed back.
    let b_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| WfError::Startup(format!("worker B's runtime: {e}")))?;
    let b = {
        let (path, log) = (path.to_path_buf(), log.clone());
        b_runtime
            .spawn(async move { engine(&path, "worker B", &log, t).await })
            .await
            .expect("starting worker B panicked")?
    };
    t.say("worker B opens the same file");
    until_copied(&log, 26).await?;
    b_runtime.shutdown_background();
    drop(b);
    t.say(format!(
        "worker B's process dies after {} rows in all: its attempt stays leased, heartbeats stop",
        copied(&log)
    ));

    let c = engine(path, "worker C", &log, t).await?;
    t.say("worker C opens the same file");
    let h = c.client().handle::<Backfill>("backfill-orders");
    let report = h.result().await?;
    t.say(format!(
        "result: {} rows; the finishing attempt (attempt {}) resumed from row {}",
        report.rows, report.attempt, report.resumed_from
    ));

    let attempts = log.lock().expect("log lock").clone();
    println!("\nwhat each attempt copied:");
    for a in &attempts {
        println!(
            "  {} attempt {}: started from heartbeat {:>2}, copied {}",
            a.worker,
            a.attempt,
            a.resumed_from,
            span(&a.copied)
        );
    }

    let mut workers: Vec<&str> = attempts.iter().map(|a| a.worker).collect();
    workers.dedup();
    assert_eq!(workers, ["worker A", "worker B", "worker C"]);
    let mut reached = 0;
    for a in &attempts {
        // Each attempt starts at the last heartbeat before it: at most the row in flight when
        // its predecessor died is copied again, and no attempt after the first starts at 0.
        assert!(
            a.resumed_from + 1 >= reached && a.resumed_from <= reached,
            "{} attempt {} resumed from {} after row {reached} was reached",
            a.worker,
            a.attempt,
            a.resumed_from
        );
        reached = reached.max(a.copied.last().map_or(0, |r| r + 1));
    }
    // The killed worker's attempt timed out (no heartbeat for 300 ms) and was retried on C.
    let last_of_b = attempts.iter().rfind(|a| a.worker == "worker B");
    let last = attempts.last().expect("attempts ran");
    assert!(last_of_b.is_some_and(|b| last.attempt > b.attempt));
    assert_eq!(last.copied.last(), Some(&(ROWS - 1)));
    let mut all: Vec<u32> = attempts.iter().flat_map(|a| a.copied.clone()).collect();
    let copies = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all, (0..ROWS).collect::<Vec<_>>(), "every row copied");
    println!(
        "  {copies} row copies for {ROWS} rows ({} copied twice: in flight when a worker died)",
        copies - ROWS as usize
    );
    assert!(copies < ROWS as usize + attempts.len());

    println!("\nhistory of backfill-orders (attempts and heartbeats are not events):");
    print_history(&h.history().await?);
    c.shutdown().await;
    Ok(())
}
