//! Faults from below: a store that fails with I/O errors, a full disk or a busy database
//! (injected by `wf_sdk::testing::faults::FaultStore`, and a real full disk on a small tmpfs). Callers
//! get a `WfError::Store` that says what failed and that a retry can help; the engine keeps
//! running; once the fault clears, runs go on at once (not when a lease expires) with nothing
//! acknowledged lost.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wf_sdk::prelude::*;
use wf_sdk::testing::faults::{Fault, FaultStore, Op, Target};
use wf_sdk::{history::EventKind, store::Store};

#[derive(Default)]
pub struct Tally {
    items: Vec<u32>,
}

#[workflow(name = "fault_tally")]
impl Tally {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, want: u32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(move |s| s.items.len() as u32 >= want)
            .await;
        Ok(ctx.state(|s| s.items.iter().sum()))
    }

    #[signal]
    fn add(&mut self, n: u32) {
        self.items.push(n);
    }

    #[query]
    fn count(&self) -> u32 {
        self.items.len() as u32
    }
}

#[derive(Default)]
pub struct Napper;

#[workflow(name = "fault_napper")]
impl Napper {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, ms: u64) -> Result<String, WorkflowError> {
        ctx.sleep(Duration::from_millis(ms)).await?;
        Ok("rested".into())
    }
}

pub struct Slow;

#[activities]
impl Slow {
    #[activity]
    pub async fn fetch(&self, _ctx: ActivityContext, ms: u64) -> Result<String, ActivityError> {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(format!("fetched after {ms} ms"))
    }
}

#[derive(Default)]
pub struct Fetcher;

#[workflow(name = "fault_fetcher")]
impl Fetcher {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, ms: u64) -> Result<String, WorkflowError> {
        Ok(ctx.activity(Slow::fetch, ms).await?)
    }
}

async fn store(backend: Backend, tag: &str) -> Arc<dyn Store> {
    open_store(backend, tag).await
}

async fn engine(store: Arc<dyn Store>, task_lease: Duration) -> Engine {
    Engine::builder()
        .store(store)
        .poll_interval(Duration::from_millis(20))
        .workflow_task_lease(task_lease)
        .workflow::<Tally>()
        .workflow::<Napper>()
        .workflow::<Fetcher>()
        .activities(Slow)
        .build()
        .await
        .expect("the engine starts")
}

/// A store failure as callers see it: a `Store` error naming the failure, and retryable.
fn assert_retryable_store_error(e: &WfError, word: &str) {
    assert!(matches!(e, WfError::Store(_)), "{e:?}");
    assert!(e.is_retryable(), "{e}");
    let text = e.to_string();
    assert!(text.starts_with("store: storage failure: "), "{text}");
    assert!(text.contains(word), "{text} should say {word:?}");
}

/// How many times each signal id is in the history.
fn signal_ids(history: &[wf_sdk::history::HistoryEvent]) -> Vec<String> {
    let mut ids: Vec<String> = history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SignalReceived { signal_id, .. } => signal_id.clone(),
            _ => None,
        })
        .collect();
    ids.sort();
    ids
}

async fn injected_faults_reach_callers_as_retryable_store_errors(backend: Backend) {
    let faults = FaultStore::new(store(backend, "faults-callers").await);
    let engine = engine(faults.clone(), Duration::from_secs(10)).await;
    let c = engine.client();
    let h = c.start::<Tally>("tally", 3).await.unwrap();
    h.add(1).signal_id("add-1").await.unwrap();
    eventually("the first signal applied", || async {
        (h.count().await.unwrap() == 1).then_some(())
    })
    .await;
    for (fault, word) in [
        (Fault::Full, "disk is full"),
        (Fault::Io, "I/O error"),
        (Fault::Busy, "locked"),
    ] {
        faults.inject(fault, Target::Writes);
        let e = h.add(2).signal_id("add-2").await.unwrap_err();
        assert_retryable_store_error(&e, word);
        let e = c.start::<Tally>("other", 1).await.unwrap_err();
        assert_retryable_store_error(&e, word);
        // Reads still answer, and the refused signal changed nothing.
        assert_eq!(h.count().await.unwrap(), 1);
        assert_eq!(h.describe().await.unwrap().status, RunStatus::Running);
        faults.clear();
    }
    // The retries with the same ids go through once the store takes writes again.
    h.add(2).signal_id("add-2").await.unwrap();
    h.add(3).signal_id("add-3").await.unwrap();
    assert_eq!(h.result().await.unwrap(), 6);
    assert_eq!(
        signal_ids(&h.history().await.unwrap()),
        ["add-1", "add-2", "add-3"]
    );
    // The engine still takes new work.
    let other = c.start::<Tally>("other", 1).await.unwrap();
    other.add(7).await.unwrap();
    assert_eq!(other.result().await.unwrap(), 7);
    println!("{backend:?}: {} faults injected", faults.injected());
    drop((h, other, c));
    engine.shutdown().await;
}

/// A workflow task whose commit fails on a full disk, and whose lease release fails too,
/// goes on as soon as the disk has room: its 60 s task lease does not hold it.
async fn a_run_whose_commit_failed_goes_on_once_writes_succeed(backend: Backend) {
    let faults = FaultStore::new(store(backend, "faults-commit").await);
    let engine = engine(faults.clone(), Duration::from_secs(60)).await;
    let c = engine.client();
    let h = c.start::<Napper>("napper", 100).await.unwrap();
    let failing = vec![
        Op::CommitWorkflowTask,
        Op::ReleaseWorkflowTask,
        Op::FailWorkflowTask,
    ];
    faults.inject(Fault::Full, Target::Ops(failing));
    // The timer fires, the task runs, its commit and the lease's release are refused.
    eventually("a refused commit and release", || async {
        (faults.injected() >= 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    faults.clear();
    let cleared = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(10), h.result())
        .await
        .expect("the run went on within 10 s of the disk having room (its task lease is 60 s)");
    assert_eq!(out.unwrap(), "rested");
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::TimerFired { .. })),
        1
    );
    println!(
        "{backend:?}: the run finished {} ms after the fault cleared ({} faults injected)",
        cleared.elapsed().as_millis(),
        faults.injected()
    );
    drop((h, c));
    engine.shutdown().await;
}

/// An activity that finishes while every write fails: its result is kept and recorded once
/// the store takes writes, not dropped until its 5 min start-to-close runs out.
async fn an_activity_result_survives_a_full_disk(backend: Backend) {
    let faults = FaultStore::new(store(backend, "faults-activity").await);
    let engine = engine(faults.clone(), Duration::from_secs(60)).await;
    let c = engine.client();
    let h = c.start::<Fetcher>("fetcher", 50).await.unwrap();
    faults.inject(Fault::Full, Target::Writes);
    eventually("the activity's result refused", || async {
        (faults.injected() >= 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    faults.clear();
    let out = tokio::time::timeout(Duration::from_secs(10), h.result())
        .await
        .expect("the run went on within 10 s of the disk having room");
    assert_eq!(out.unwrap(), "fetched after 50 ms");
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityCompleted { .. }
        )),
        1
    );
    println!("{backend:?}: {} faults injected", faults.injected());
    drop((h, c));
    engine.shutdown().await;
}

/// Slow writes slow the callers down and change nothing else.
async fn delayed_writes_only_slow_things_down(backend: Backend) {
    let faults = FaultStore::new(store(backend, "faults-delay").await);
    let engine = engine(faults.clone(), Duration::from_secs(10)).await;
    let c = engine.client();
    let delay = Duration::from_millis(30);
    faults.inject(Fault::Delay(delay), Target::Writes);
    let h = c.start::<Tally>("slow", 2).await.unwrap();
    let sent = Instant::now();
    h.add(5).signal_id("slow-1").await.unwrap();
    assert!(sent.elapsed() >= delay, "the signal's write was delayed");
    h.add(6).signal_id("slow-2").await.unwrap();
    assert_eq!(h.result().await.unwrap(), 11);
    assert_eq!(
        signal_ids(&h.history().await.unwrap()),
        ["slow-1", "slow-2"]
    );
    assert!(
        faults.injected() >= 3,
        "{} writes delayed",
        faults.injected()
    );
    faults.clear();
    println!("{backend:?}: {} faults injected", faults.injected());
    drop((h, c));
    engine.shutdown().await;
}

both!(
    delayed_writes_only_slow_things_down,
    injected_faults_reach_callers_as_retryable_store_errors,
    a_run_whose_commit_failed_goes_on_once_writes_succeed,
    an_activity_result_survives_a_full_disk,
);

// ---------------------------------------------------------------------------------------------
// A real full disk

/// A small tmpfs mounted for the test, unmounted when dropped.
struct SmallDisk {
    dir: PathBuf,
}

impl SmallDisk {
    /// Mounts a 2 MiB tmpfs; `None` (with the reason) when that is not possible here.
    fn mount(tag: &str) -> Result<SmallDisk, String> {
        let uid = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
            });
        if uid.as_deref() != Some("0") {
            return Err("not running as root".into());
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("wf-small-disk-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir(&dir);
            return Err(format!(
                "mount failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(SmallDisk { dir })
    }

    /// Fills the disk with a filler file until the file system says it is full.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.dir.join("filler");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("the filler file opens");
        let block = vec![0xa5u8; 4096];
        loop {
            match f.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(28), "ENOSPC expected, got {e}");
                    break;
                }
            }
        }
        let _ = f.sync_all();
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn sqlite_engine(path: &Path) -> wf_sdk::engine::EngineBuilder {
    Engine::builder()
        .sqlite(path)
        .poll_interval(Duration::from_millis(20))
        .workflow_task_lease(Duration::from_secs(60))
        .workflow::<Tally>()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_full_disk_fails_calls_retryably_and_loses_nothing() {
    let disk = match SmallDisk::mount("full") {
        Ok(disk) => disk,
        Err(why) => {
            println!("skipped: a real full disk needs a tmpfs mounted as root ({why})");
            return;
        }
    };
    let path = disk.dir.join("wf.db");
    let engine = sqlite_engine(&path).build().await.unwrap();
    let c = engine.client();
    let runs = 5;
    for r in 0..runs {
        let h = c.start::<Tally>(format!("tally-{r}"), 3).await.unwrap();
        h.add(1).signal_id(format!("{r}-1")).await.unwrap();
    }
    let filler = disk.fill();

    // Every run gets its second signal, retried until the disk has room again.
    let mut refused = 0;
    let mut pending: Vec<u32> = (0..runs).collect();
    for r in &pending {
        let h = c.handle::<Tally>(format!("tally-{r}"));
        match h.add(2).signal_id(format!("{r}-2")).await {
            Ok(()) => {}
            Err(e) => {
                assert_retryable_store_error(&e, "full");
                refused += 1;
            }
        }
        // The engine is alive: reads answer.
        assert_eq!(h.describe().await.unwrap().status, RunStatus::Running);
    }
    assert!(refused > 0, "a full disk refused no write");
    let e = c.start::<Tally>("late", 1).await.unwrap_err();
    assert_retryable_store_error(&e, "full");
    println!("the full disk refused {refused} of {runs} signals and a start");

    std::fs::remove_file(&filler).unwrap();
    for r in pending.drain(..) {
        let h = c.handle::<Tally>(format!("tally-{r}"));
        h.add(2).signal_id(format!("{r}-2")).await.unwrap();
        h.add(3).signal_id(format!("{r}-3")).await.unwrap();
        let out = tokio::time::timeout(Duration::from_secs(10), h.result())
            .await
            .expect("the run finished within 10 s of the disk having room");
        assert_eq!(out.unwrap(), 6);
        let ids = signal_ids(&h.history().await.unwrap());
        assert_eq!(ids, [format!("{r}-1"), format!("{r}-2"), format!("{r}-3")]);
    }
    let late = c.start::<Tally>("late", 1).await.unwrap();
    late.add(4).await.unwrap();
    assert_eq!(late.result().await.unwrap(), 4);

    // Closing on a full disk says that the WAL stays unfolded; nothing is lost by it.
    let filler = disk.fill();
    drop((late, c));
    let e = engine.close().await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    let text = e.to_string();
    assert!(text.contains("WAL could not be folded"), "{text}");
    assert!(text.contains("full"), "{text}");
    std::fs::remove_file(&filler).unwrap();
    let engine = sqlite_engine(&path).build().await.unwrap();
    let h = engine.client().handle::<Tally>("late");
    assert_eq!(h.result().await.unwrap(), 4);
    drop(h);
    engine
        .close()
        .await
        .expect("a clean close once the disk has room");
    assert!(
        !disk.dir.join("wf.db-wal").exists(),
        "a clean close folds the WAL"
    );
}
