//! A card payment with a confirmation step, on the embedded SQLite store with the test clock:
//!
//! the workflow places a hold on the card, waits up to 15 minutes for the customer's
//! confirmation (a `confirm` signal, e.g. a passed 3-D Secure challenge), then charges the hold
//! — or releases it when the confirmation never comes. Every call to the (fake) payment
//! provider carries an idempotency key derived from the run id (`ctx.idempotency_key()`), the
//! same for every attempt of one activity. The first charge attempt loses the provider's reply
//! after the provider took the money; the retry policy runs it again with the same key, and
//! the provider answers with the existing charge instead of charging twice.
//!
//! `cargo run --example payment`

#[path = "support/demo_db.rs"]
mod demo_db;

use demo_db::DemoDb;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wf_sdk::history::{EventKind, HistoryEvent};
use wf_sdk::prelude::*;

/// How long the customer has to confirm.
pub const CONFIRM_WITHIN: Duration = Duration::from_secs(15 * 60);

/// What to pay.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct PaymentRequest {
    /// The shop's order.
    pub order_id: String,
    /// Amount in cents.
    pub amount_cents: u64,
}

/// Where a payment stands (the `stage` query's answer).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Default)]
pub enum Stage {
    /// Placing the hold on the card.
    #[default]
    Holding,
    /// The hold is placed; waiting for the customer.
    AwaitingConfirmation,
    /// Confirmed; charging the hold.
    Charging,
    /// No confirmation in time; releasing the hold.
    Releasing,
    /// Finished.
    Done,
}

/// How a payment ended.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum PaymentOutcome {
    /// The money was taken.
    Paid {
        /// The provider's charge id.
        charge_id: String,
        /// The customer's confirmation.
        confirmation: String,
    },
    /// The customer did not confirm in time; the hold was released.
    Expired {
        /// The released hold.
        hold_id: String,
    },
}

/// A payment's state.
#[derive(Default)]
pub struct Payment {
    stage: Stage,
    confirmation: Option<String>,
}

#[workflow(name = "payment")]
impl Payment {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        request: PaymentRequest,
    ) -> Result<PaymentOutcome, WorkflowError> {
        // Retries 2 s apart (engine time), at most 5 attempts.
        let retry = RetryPolicy {
            initial_interval: Duration::from_secs(2),
            backoff_coefficient: 1.0,
            maximum_attempts: 5,
            ..RetryPolicy::default()
        };
        let hold_id = ctx
            .activity(Bank::hold, (request.order_id, request.amount_cents))
            .retry(retry.clone())
            .start_to_close(Duration::from_secs(30))
            .await?;
        ctx.state_mut(|s| s.stage = Stage::AwaitingConfirmation);
        let confirmed = ctx
            .wait_condition(|s| s.confirmation.is_some())
            .timeout(CONFIRM_WITHIN)
            .await;
        if confirmed {
            ctx.state_mut(|s| s.stage = Stage::Charging);
            let charge_id = ctx
                .activity(Bank::charge, hold_id)
                .retry(retry)
                .start_to_close(Duration::from_secs(30))
                .await?;
            ctx.state_mut(|s| s.stage = Stage::Done);
            let confirmation = ctx.state(|s| s.confirmation.clone().unwrap_or_default());
            Ok(PaymentOutcome::Paid {
                charge_id,
                confirmation,
            })
        } else {
            ctx.state_mut(|s| s.stage = Stage::Releasing);
            ctx.activity(Bank::release, hold_id.clone())
                .retry(retry)
                .start_to_close(Duration::from_secs(30))
                .await?;
            ctx.state_mut(|s| s.stage = Stage::Done);
            Ok(PaymentOutcome::Expired { hold_id })
        }
    }

    /// The customer confirmed the payment (the first confirmation counts).
    #[signal]
    fn confirm(&mut self, reference: String) {
        if self.confirmation.is_none() && self.stage == Stage::AwaitingConfirmation {
            self.confirmation = Some(reference);
        }
    }

    /// Where the payment stands.
    #[query]
    fn stage(&self) -> Stage {
        self.stage
    }
}

/// One operation the fake provider performed.
#[derive(Clone, Debug, PartialEq)]
pub enum Operation {
    /// Money reserved on the card.
    Hold {
        /// The hold's id.
        hold_id: String,
        /// The order it is for.
        order_id: String,
        /// Amount in cents.
        amount_cents: u64,
    },
    /// A hold turned into a charge: the money is taken.
    Charge {
        /// The charge's id.
        charge_id: String,
        /// The charged hold.
        hold_id: String,
    },
    /// A hold given back.
    Release {
        /// The release's id.
        release_id: String,
        /// The released hold.
        hold_id: String,
    },
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operation::Hold {
                hold_id,
                order_id,
                amount_cents,
            } => write!(
                f,
                "{hold_id}: hold {}.{:02} for {order_id}",
                amount_cents / 100,
                amount_cents % 100
            ),
            Operation::Charge { charge_id, hold_id } => {
                write!(f, "{charge_id}: charge the hold {hold_id}")
            }
            Operation::Release {
                release_id,
                hold_id,
            } => write!(f, "{release_id}: release the hold {hold_id}"),
        }
    }
}

impl std::fmt::Display for PaymentOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PaymentOutcome::Paid {
                charge_id,
                confirmation,
            } => write!(
                f,
                "paid by charge {charge_id} (confirmation {confirmation})"
            ),
            PaymentOutcome::Expired { hold_id } => {
                write!(f, "expired unconfirmed; hold {hold_id} released")
            }
        }
    }
}

/// A payment provider that, like real ones, performs each idempotency key once and answers a
/// repeated key with the first result.
#[derive(Default)]
pub struct FakeProvider {
    by_key: Mutex<HashMap<String, String>>,
    /// Operations actually performed, in order.
    pub ledger: Mutex<Vec<Operation>>,
}

impl FakeProvider {
    /// Performs `op` (built from the new id) unless `key` was seen; returns the id and whether
    /// this call performed it.
    fn perform(
        &self,
        key: &str,
        prefix: &str,
        op: impl FnOnce(String) -> Operation,
    ) -> (String, bool) {
        let mut by_key = self.by_key.lock().expect("provider lock");
        if let Some(id) = by_key.get(key) {
            return (id.clone(), false);
        }
        let mut ledger = self.ledger.lock().expect("ledger lock");
        let id = format!("{prefix}_{}", ledger.len() + 1);
        ledger.push(op(id.clone()));
        by_key.insert(key.to_string(), id.clone());
        (id, true)
    }

    fn count(&self, pred: impl Fn(&Operation) -> bool) -> usize {
        let ledger = self.ledger.lock().expect("ledger lock");
        ledger.iter().filter(|op| pred(op)).count()
    }
}

/// A call an activity attempt made to the provider.
#[derive(Clone, Debug)]
pub struct Call {
    /// Activity name.
    pub activity: String,
    /// Attempt number.
    pub attempt: u32,
    /// The idempotency key sent.
    pub key: String,
}

/// The payment activities: each call to the provider carries the attempt's idempotency key.
pub struct Bank {
    provider: Arc<FakeProvider>,
    /// Every call made, in order.
    pub calls: Mutex<Vec<Call>>,
    /// When set, the next charge loses the provider's reply (after the provider charged).
    pub lose_next_charge_reply: AtomicBool,
    timeline: Timeline,
}

impl Bank {
    fn record(&self, ctx: &ActivityContext, what: &str, id: &str, performed: bool) {
        let key = ctx.idempotency_key();
        self.calls.lock().expect("calls lock").push(Call {
            activity: ctx.info().name.clone(),
            attempt: ctx.attempt(),
            key: key.clone(),
        });
        let verdict = if performed {
            format!("performed {what} {id}")
        } else {
            format!("key already used: answered with the existing {what} {id}, nothing done")
        };
        self.timeline.say(format!(
            "  provider <- {} attempt {} key {key}: {verdict}",
            ctx.info().name,
            ctx.attempt()
        ));
    }
}

#[activities]
impl Bank {
    /// Reserves the amount on the card; returns the hold id.
    #[activity]
    pub async fn hold(
        &self,
        ctx: ActivityContext,
        order_id: String,
        amount_cents: u64,
    ) -> Result<String, ActivityError> {
        let (id, performed) = self
            .provider
            .perform(&ctx.idempotency_key(), "hold", |hold_id| Operation::Hold {
                hold_id,
                order_id,
                amount_cents,
            });
        self.record(&ctx, "hold", &id, performed);
        Ok(id)
    }

    /// Takes the held money; returns the charge id.
    #[activity]
    pub async fn charge(
        &self,
        ctx: ActivityContext,
        hold_id: String,
    ) -> Result<String, ActivityError> {
        let (id, performed) = self
            .provider
            .perform(&ctx.idempotency_key(), "ch", |charge_id| {
                Operation::Charge { charge_id, hold_id }
            });
        self.record(&ctx, "charge", &id, performed);
        if self.lose_next_charge_reply.swap(false, Ordering::SeqCst) {
            // The provider did its part; the network lost the answer.
            return Err(ActivityError::retryable(
                "connection reset before the provider's reply arrived",
            ));
        }
        Ok(id)
    }

    /// Gives the held money back.
    #[activity]
    pub async fn release(
        &self,
        ctx: ActivityContext,
        hold_id: String,
    ) -> Result<(), ActivityError> {
        let (id, performed) = self
            .provider
            .perform(&ctx.idempotency_key(), "rel", |release_id| {
                Operation::Release {
                    release_id,
                    hold_id,
                }
            });
        self.record(&ctx, "release", &id, performed);
        Ok(())
    }
}

/// Prints what happened, stamped with the engine's (test) clock and the real time elapsed.
#[derive(Clone)]
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
            secs / 60,
            secs % 60,
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

/// Waits until the run holds the money and waits for the customer (its timer is set).
async fn awaiting_confirmation(h: &WorkflowHandle<Payment>) -> Result<(), WfError> {
    eventually("the confirmation wait", || async {
        let waiting = h.stage().await? == Stage::AwaitingConfirmation;
        let timer = h
            .history()
            .await?
            .iter()
            .any(|e| matches!(e.kind, EventKind::TimerStarted { .. }));
        Ok((waiting && timer).then_some(()))
    })
    .await
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

/// Runs both paths: confirmed and charged once despite a retry, and expired and released.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let clock = TestClock::new();
    let t = Timeline::new(&clock);
    let db = DemoDb::new("payment");
    let path = db.path();
    let provider = Arc::new(FakeProvider::default());
    let bank = Arc::new(Bank {
        provider: provider.clone(),
        calls: Mutex::new(Vec::new()),
        lose_next_charge_reply: AtomicBool::new(true),
        timeline: t.clone(),
    });
    let engine = Engine::builder()
        .sqlite(path)
        .clock(clock.clone())
        .poll_interval(Duration::from_millis(50))
        .workflow::<Payment>()
        .shared_activities(bank.clone())
        .build()
        .await?;
    let client = engine.client();
    t.say(format!(
        "open the SQLite store at {} with a test clock",
        path.display()
    ));

    println!("\n-- path 1: the customer confirms; the charge is retried and happens once --");
    let h = client
        .start::<Payment>(
            "order-1001",
            PaymentRequest {
                order_id: "order-1001".into(),
                amount_cents: 4_200,
            },
        )
        .await?;
    let run_id = h.describe().await?.run_id;
    t.say(format!("started the payment of order-1001 (run {run_id})"));
    awaiting_confirmation(&h).await?;
    t.say("hold placed; waiting up to 15 min for the customer's confirmation");
    clock.advance(Duration::from_secs(2 * 60));
    h.confirm("3ds-ok-7731".into()).await?;
    t.say("the customer confirms (3-D Secure passed)");
    let retrying = eventually("the charge's second attempt", || async {
        let d = h.describe().await?;
        Ok(d.pending_activities
            .into_iter()
            .find(|a| a.name == "charge" && a.attempt == 2))
    })
    .await?;
    t.say(format!(
        "charge attempt 1 failed ({}); the retry policy schedules attempt 2 in 2 s",
        retrying.last_failure.as_deref().unwrap_or("?")
    ));
    clock.advance(Duration::from_secs(2));
    let out = h.result().await?;
    t.say(format!("result: {out}"));

    let charges: Vec<Call> = bank
        .calls
        .lock()
        .expect("calls lock")
        .iter()
        .filter(|c| c.activity == "charge")
        .cloned()
        .collect();
    let attempts: Vec<u32> = charges.iter().map(|c| c.attempt).collect();
    assert_eq!(attempts, [1, 2], "the charge ran twice: {charges:?}");
    assert_eq!(charges[0].key, charges[1].key, "both attempts sent one key");
    assert!(
        charges[0].key.starts_with(&run_id),
        "the key derives from the run id"
    );
    assert_eq!(
        provider.count(|op| matches!(op, Operation::Charge { .. })),
        1,
        "the provider charged once"
    );
    assert!(matches!(out, PaymentOutcome::Paid { .. }));
    t.say(format!(
        "both charge attempts sent key {}; the provider charged once",
        charges[0].key
    ));
    let history = h.history().await?;
    assert!(history
        .iter()
        .any(|e| matches!(e.kind, EventKind::ActivityCompleted { attempts: 2, .. })));
    println!("history of order-1001 (retries are not events; the completion counts 2 attempts):");
    print_history(&history);

    println!("\n-- path 2: no confirmation within 15 minutes; the hold is released --");
    let h = client
        .start::<Payment>(
            "order-1002",
            PaymentRequest {
                order_id: "order-1002".into(),
                amount_cents: 1_999,
            },
        )
        .await?;
    t.say("started the payment of order-1002");
    awaiting_confirmation(&h).await?;
    t.say("hold placed; waiting for the customer");
    clock.advance(CONFIRM_WITHIN);
    t.say("15 minutes pass without a confirmation");
    let out = h.result().await?;
    t.say(format!("result: {out}"));
    match h.confirm("3ds-ok-late".into()).await {
        Err(e @ WfError::RunFinished { .. }) => t.say(format!("a late confirmation: {e}")),
        other => panic!("expected RunFinished, got {other:?}"),
    }
    let PaymentOutcome::Expired { hold_id } = out else {
        panic!("expected the payment to expire, got {out:?}");
    };
    assert_eq!(
        provider.count(|op| matches!(op, Operation::Release { hold_id: h, .. } if *h == hold_id)),
        1
    );
    assert_eq!(
        provider.count(|op| matches!(op, Operation::Charge { hold_id: h, .. } if *h == hold_id)),
        0,
        "nothing charged"
    );

    println!("\nthe provider's ledger (each operation performed once):");
    for op in provider.ledger.lock().expect("ledger lock").iter() {
        println!("  {op}");
    }
    engine.shutdown().await;
    Ok(())
}
