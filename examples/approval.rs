//! An approval that waits up to 24 hours, on the embedded SQLite store with the test clock (so
//! the day passes in milliseconds):
//!
//! a request waits for an `approve(by)` signal, at most 24 h (a durable timer); a `status`
//! query reads it at any time without touching history; a `rename` update changes its title,
//! and its validator refuses an empty title and any change once the request is decided. Two
//! requests: one approved after 3 hours (the timer is cancelled), one that nobody approves
//! (the timer fires after 24 h and the request expires; a late approval is refused).
//!
//! `cargo run --example approval`

#[path = "support/demo_db.rs"]
mod demo_db;

use demo_db::DemoDb;

use std::future::Future;
use std::time::{Duration, Instant};
use wf_sdk::history::{EventKind, HistoryEvent};
use wf_sdk::prelude::*;

/// How long a request waits for a decision.
pub const DEADLINE: Duration = Duration::from_secs(24 * 3600);

/// What is asked for, and by whom.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ApprovalRequest {
    /// What the approver sees.
    pub title: String,
    /// Who asked.
    pub requester: String,
}

/// Where a request stands (the `status` query's answer).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum Stage {
    /// Nobody decided yet.
    Waiting,
    /// Approved by this person.
    Approved {
        /// The approver.
        by: String,
    },
    /// The deadline passed without a decision.
    Expired,
}

/// What the `status` query answers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Status {
    /// The current title.
    pub title: String,
    /// Who asked.
    pub requester: String,
    /// Where the request stands.
    pub stage: Stage,
}

/// How a request ended (the run's result).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Approved before the deadline.
    Approved {
        /// The title at the time of approval.
        title: String,
        /// The approver.
        by: String,
        /// Workflow time from the request to the approval.
        waited_secs: u64,
    },
    /// Nobody approved within [`DEADLINE`].
    Expired {
        /// The title at expiry.
        title: String,
    },
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stage::Waiting => write!(f, "waiting"),
            Stage::Approved { by } => write!(f, "approved by {by}"),
            Stage::Expired => write!(f, "expired"),
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Approved {
                title,
                by,
                waited_secs,
            } => write!(
                f,
                "{title:?} approved by {by} after {} h {} min",
                waited_secs / 3600,
                waited_secs % 3600 / 60
            ),
            Outcome::Expired { title } => write!(f, "{title:?} expired undecided"),
        }
    }
}

/// An approval request's state.
#[derive(Default)]
pub struct Approval {
    title: String,
    requester: String,
    approved_by: Option<String>,
    expired: bool,
}

#[workflow(name = "approval")]
impl Approval {
    #[init]
    fn new(request: &ApprovalRequest) -> Self {
        Approval {
            title: request.title.clone(),
            requester: request.requester.clone(),
            ..Default::default()
        }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        _request: ApprovalRequest,
    ) -> Result<Outcome, WorkflowError> {
        let asked_at = ctx.now_ms();
        // A durable 24 h timer races the condition: whichever comes first wins.
        let approved = ctx
            .wait_condition(|s| s.approved_by.is_some())
            .timeout(DEADLINE)
            .await;
        let waited_secs = ((ctx.now_ms() - asked_at) / 1000) as u64;
        if approved {
            Ok(ctx.state(|s| Outcome::Approved {
                title: s.title.clone(),
                by: s.approved_by.clone().unwrap_or_default(),
                waited_secs,
            }))
        } else {
            ctx.state_mut(|s| s.expired = true);
            Ok(ctx.state(|s| Outcome::Expired {
                title: s.title.clone(),
            }))
        }
    }

    /// Approves the request (the first approval wins; later ones change nothing).
    #[signal]
    fn approve(&mut self, by: String) {
        if self.approved_by.is_none() && !self.expired {
            self.approved_by = Some(by);
        }
    }

    /// Where the request stands.
    #[query]
    fn status(&self) -> Status {
        let stage = match (&self.approved_by, self.expired) {
            (Some(by), _) => Stage::Approved { by: by.clone() },
            (None, true) => Stage::Expired,
            (None, false) => Stage::Waiting,
        };
        Status {
            title: self.title.clone(),
            requester: self.requester.clone(),
            stage,
        }
    }

    /// Changes the title; returns the previous one.
    #[update]
    fn rename(&mut self, title: String) -> Result<String, UpdateError> {
        Ok(std::mem::replace(&mut self.title, title))
    }

    #[validator(rename)]
    // A validator receives `&T` of each update argument, so `&String` here, not `&str`.
    fn validate_rename(&self, title: &String) -> Result<(), Rejection> {
        if title.trim().is_empty() {
            return Err(Rejection::new("the title must not be empty"));
        }
        if self.approved_by.is_some() || self.expired {
            return Err(Rejection::new("the request is already decided"));
        }
        Ok(())
    }
}

/// Prints what happened, stamped with the engine's (test) clock and the real time elapsed.
struct Timeline {
    real: Instant,
    clock: TestClock,
    t0: i64,
}

impl Timeline {
    fn new(clock: &TestClock) -> Self {
        Timeline {
            real: Instant::now(),
            clock: clock.clone(),
            t0: clock.now_ms(),
        }
    }

    fn say(&self, what: impl AsRef<str>) {
        let secs = (self.clock.now_ms() - self.t0) / 1000;
        println!(
            "[clock +{:02}:{:02} | {:>6.1} ms] {}",
            secs / 3600,
            secs % 3600 / 60,
            self.real.elapsed().as_secs_f64() * 1000.0,
            what.as_ref()
        );
    }
}

/// Polls `probe` until it yields a value (a synchronization aid; gives up after 10 s).
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> Result<T, WfError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, WfError>>,
{
    for _ in 0..2000 {
        if let Some(v) = probe().await? {
            return Ok(v);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Err(WfError::Timeout(format!("waiting for {what}")))
}

/// Waits until the run has started its 24 h timer, i.e. it is parked in `wait_condition`.
async fn parked(h: &WorkflowHandle<Approval>) -> Result<(), WfError> {
    eventually("the 24 h timer", || async {
        let history = h.history().await?;
        Ok(history
            .iter()
            .any(|e| matches!(e.kind, EventKind::TimerStarted { .. }))
            .then_some(()))
    })
    .await
}

fn count(history: &[HistoryEvent], name: &str) -> usize {
    history.iter().filter(|e| e.kind.name() == name).count()
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

/// Runs both paths: approved after 3 h, and expired after 24 h.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let clock = TestClock::new();
    let t = Timeline::new(&clock);
    let db = DemoDb::new("approval");
    let path = db.path();
    let engine = Engine::builder()
        .sqlite(path)
        .clock(clock.clone())
        .poll_interval(Duration::from_millis(50))
        .workflow::<Approval>()
        .build()
        .await?;
    let client = engine.client();
    t.say(format!(
        "open the SQLite store at {} with a test clock",
        path.display()
    ));

    println!("\n-- path 1: approved within the deadline --");
    let h = client
        .start::<Approval>(
            "expense-17",
            ApprovalRequest {
                title: "Team offsite".into(),
                requester: "bob".into(),
            },
        )
        .await?;
    parked(&h).await?;
    t.say("bob asks for approval of \"Team offsite\"; the run waits, a 24 h timer is set");
    let s = h.status().await?;
    t.say(format!(
        "status query: {:?} by {}, {}",
        s.title, s.requester, s.stage
    ));
    assert_eq!(s.stage, Stage::Waiting);

    let before = h.history().await?.len();
    match h.rename("   ".into()).await {
        Err(WfError::Rejected(why)) => t.say(format!("rename(\"   \") rejected: {why}")),
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(
        h.history().await?.len(),
        before,
        "a rejection writes nothing"
    );
    t.say(format!(
        "history still has {before} events: a rejected update leaves no trace"
    ));
    let old = h.rename("Team offsite (Berlin, 12 people)".into()).await?;
    t.say(format!(
        "rename accepted: {old:?} -> {:?}",
        h.status().await?.title
    ));

    clock.advance(Duration::from_secs(3 * 3600));
    t.say("three hours pass");
    h.approve("alice".into()).await?;
    t.say("alice approves");
    let out = h.result().await?;
    t.say(format!("result: {out}"));
    assert_eq!(
        out,
        Outcome::Approved {
            title: "Team offsite (Berlin, 12 people)".into(),
            by: "alice".into(),
            waited_secs: 3 * 3600,
        }
    );
    let s = h.status().await?;
    t.say(format!(
        "status query on the finished run: {:?}, {}",
        s.title, s.stage
    ));
    match h.rename("Offsite, cancelled".into()).await {
        Err(e @ WfError::RunFinished { .. }) => t.say(format!("rename after the end: {e}")),
        other => panic!("expected RunFinished, got {other:?}"),
    }
    let history = h.history().await?;
    assert_eq!(count(&history, "TimerCancelled"), 1);
    assert_eq!(count(&history, "TimerFired"), 0);
    println!("history of expense-17 (the approval cancelled the 24 h timer):");
    print_history(&history);

    println!("\n-- path 2: nobody approves; the request expires after 24 h --");
    let t = Timeline::new(&clock);
    let h = client
        .start::<Approval>(
            "expense-18",
            ApprovalRequest {
                title: "New laptop".into(),
                requester: "carol".into(),
            },
        )
        .await?;
    parked(&h).await?;
    t.say("carol asks for approval of \"New laptop\"; a 24 h timer is set");
    clock.advance(Duration::from_secs(23 * 3600));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let s = h.status().await?;
    t.say(format!("23 hours later: still {}", s.stage));
    assert_eq!(s.stage, Stage::Waiting);
    clock.advance(Duration::from_secs(3600));
    t.say("one more hour: the deadline is reached");
    let out = h.result().await?;
    t.say(format!("result: {out}"));
    assert_eq!(
        out,
        Outcome::Expired {
            title: "New laptop".into()
        }
    );
    match h.approve("alice".into()).await {
        Err(e @ WfError::RunFinished { .. }) => t.say(format!("a late approval: {e}")),
        other => panic!("expected RunFinished, got {other:?}"),
    }
    assert_eq!(h.status().await?.stage, Stage::Expired);
    let history = h.history().await?;
    assert_eq!(count(&history, "TimerFired"), 1);
    assert_eq!(count(&history, "SignalReceived"), 0);
    println!("history of expense-18 (the timer fired, no signal arrived):");
    print_history(&history);

    engine.shutdown().await;
    Ok(())
}
