//! A shopping cart, on the embedded SQLite store:
//!
//! an `add_item` update puts a product in the cart and answers the new total; its validator
//! refuses a quantity of 0, an unknown sku and any change after checkout, and a refused update
//! leaves no trace in history. An `items` query lists the cart; a `checkout` signal places the
//! order (an activity). After the run has finished, `items` still answers — on a fresh,
//! worker-less engine too, by replaying the history — and no query ever appends an event.
//!
//! `cargo run --example cart`

#[path = "support/demo_db.rs"]
mod demo_db;

use demo_db::DemoDb;

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wf_sdk::history::HistoryEvent;
use wf_sdk::prelude::*;

/// The shop's products: sku, name, unit price in cents.
pub const CATALOGUE: &[(&str, &str, u64)] = &[
    ("tea-earl-grey", "Earl Grey tea, 100 g", 650),
    ("mug-blue", "Blue mug", 1_200),
    ("kettle", "Electric kettle", 3_999),
];

fn product(sku: &str) -> Option<(&'static str, u64)> {
    CATALOGUE
        .iter()
        .find(|(s, _, _)| *s == sku)
        .map(|(_, name, price)| (*name, *price))
}

/// Whose cart it is.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CartInput {
    /// The customer.
    pub customer: String,
}

/// One line of the cart.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Line {
    /// The product.
    pub sku: String,
    /// How many.
    pub quantity: u32,
    /// Price of one, in cents.
    pub unit_cents: u64,
}

/// What the checkout produced (the run's result).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Receipt {
    /// The shop's order id.
    pub order_id: String,
    /// What was bought.
    pub lines: Vec<Line>,
    /// The sum, in cents.
    pub total_cents: u64,
}

/// A cart's state.
#[derive(Default)]
pub struct Cart {
    customer: String,
    lines: Vec<Line>,
    checked_out: bool,
}

impl Cart {
    fn total_cents(&self) -> u64 {
        self.lines
            .iter()
            .map(|l| l.unit_cents * u64::from(l.quantity))
            .sum()
    }
}

#[workflow(name = "cart")]
impl Cart {
    #[init]
    fn new(input: &CartInput) -> Self {
        Cart {
            customer: input.customer.clone(),
            ..Default::default()
        }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        _input: CartInput,
    ) -> Result<Receipt, WorkflowError> {
        ctx.wait_condition(|s| s.checked_out).await;
        let (customer, lines, total_cents) =
            ctx.state(|s| (s.customer.clone(), s.lines.clone(), s.total_cents()));
        let order_id = ctx
            .activity(Shop::place_order, (customer, lines.clone()))
            .start_to_close(Duration::from_secs(30))
            .await?;
        Ok(Receipt {
            order_id,
            lines,
            total_cents,
        })
    }

    /// Adds `quantity` of `sku`; answers the cart's new total in cents.
    #[update]
    fn add_item(&mut self, sku: String, quantity: u32) -> Result<u64, UpdateError> {
        let (_, unit_cents) = product(&sku).ok_or_else(|| UpdateError::new("unknown sku"))?;
        match self.lines.iter_mut().find(|l| l.sku == sku) {
            Some(line) => line.quantity += quantity,
            None => self.lines.push(Line {
                sku,
                quantity,
                unit_cents,
            }),
        }
        Ok(self.total_cents())
    }

    #[validator(add_item)]
    // A validator receives `&T` of each update argument, so `&String` here, not `&str`.
    fn validate_add_item(&self, sku: &String, quantity: &u32) -> Result<(), Rejection> {
        if self.checked_out {
            return Err(Rejection::new("the cart is already checked out"));
        }
        if *quantity == 0 {
            return Err(Rejection::new("the quantity must be at least 1"));
        }
        if product(sku).is_none() {
            return Err(Rejection::new(format!("there is no product {sku:?}")));
        }
        Ok(())
    }

    /// What is in the cart.
    #[query]
    fn items(&self) -> Vec<Line> {
        self.lines.clone()
    }

    /// Places the order (ignored while the cart is empty).
    #[signal]
    fn checkout(&mut self) {
        if !self.lines.is_empty() {
            self.checked_out = true;
        }
    }
}

/// The shop's back office.
#[derive(Default)]
pub struct Shop {
    /// Orders placed: (order id, customer, lines).
    pub orders: Mutex<Vec<(String, String, Vec<Line>)>>,
}

#[activities]
impl Shop {
    /// Records the order; returns its id.
    #[activity]
    pub async fn place_order(
        &self,
        _ctx: ActivityContext,
        customer: String,
        lines: Vec<Line>,
    ) -> Result<String, ActivityError> {
        let mut orders = self.orders.lock().expect("orders lock");
        let id = format!("SO-{}", 1000 + orders.len() + 1);
        orders.push((id.clone(), customer, lines));
        Ok(id)
    }
}

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

fn money(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

fn describe_lines(lines: &[Line]) -> String {
    let parts: Vec<String> = lines
        .iter()
        .map(|l| {
            let name = product(&l.sku).map_or("?", |(name, _)| name);
            format!("{} x {name} at {}", l.quantity, money(l.unit_cents))
        })
        .collect();
    if parts.is_empty() {
        "(empty)".into()
    } else {
        parts.join("; ")
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

async fn engine(path: &Path, shop: std::sync::Arc<Shop>) -> Result<Engine, WfError> {
    Engine::builder()
        .sqlite(path)
        .poll_interval(Duration::from_millis(50))
        .workflow::<Cart>()
        .shared_activities(shop)
        .build()
        .await
}

/// Fills a cart, shows refused updates, checks out, and queries the finished run.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let t = Timeline(Instant::now());
    let db = DemoDb::new("cart");
    let path = db.path();
    let shop = std::sync::Arc::new(Shop::default());
    let engine = engine(path, shop.clone()).await?;
    t.say(format!("open the SQLite store at {}", path.display()));
    let h = engine
        .client()
        .start::<Cart>(
            "cart-ana",
            CartInput {
                customer: "ana".into(),
            },
        )
        .await?;
    t.say("ana opens a cart");

    let total = h.add_item("tea-earl-grey".into(), 2).await?;
    t.say(format!(
        "add_item(tea-earl-grey, 2) -> total {}",
        money(total)
    ));
    let total = h.add_item("mug-blue".into(), 1).await?;
    t.say(format!("add_item(mug-blue, 1) -> total {}", money(total)));
    let total = h.add_item("tea-earl-grey".into(), 1).await?;
    t.say(format!(
        "add_item(tea-earl-grey, 1) -> total {} (added to the existing line)",
        money(total)
    ));
    assert_eq!(total, 3 * 650 + 1_200);

    let before = h.history().await?.len();
    for (sku, quantity) in [("mug-blue", 0), ("unicorn", 1)] {
        match h.add_item(sku.into(), quantity).await {
            Err(WfError::Rejected(why)) => {
                t.say(format!("add_item({sku}, {quantity}) rejected: {why}"))
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
    }
    let after = h.history().await?.len();
    assert_eq!(before, after, "rejected updates write nothing");
    t.say(format!(
        "history length before/after the two rejections: {before}/{after} (no event written)"
    ));

    let items = h.items().await?;
    t.say(format!("items query: {}", describe_lines(&items)));
    assert_eq!(items.len(), 2);

    h.checkout().await?;
    t.say("checkout signal sent");
    let receipt = h.result().await?;
    t.say(format!(
        "result: order {} for {}",
        receipt.order_id,
        money(receipt.total_cents)
    ));
    assert_eq!(receipt.total_cents, total);
    assert_eq!(shop.orders.lock().expect("orders lock").len(), 1);

    let finished = h.history().await?;
    let items_after = h.items().await?;
    t.say(format!(
        "items query on the finished run: {}",
        describe_lines(&items_after)
    ));
    assert_eq!(items_after, items);
    match h.add_item("kettle".into(), 1).await {
        Err(e @ WfError::RunFinished { .. }) => t.say(format!("add_item after checkout: {e}")),
        other => panic!("expected RunFinished, got {other:?}"),
    }
    engine.shutdown().await;
    t.say("engine shut down");

    // A process with no workers: nothing is cached, so the query replays the history.
    let reader = Engine::builder()
        .sqlite(path)
        .client_only()
        .workflow::<Cart>()
        .build()
        .await?;
    let h = reader.client().handle::<Cart>("cart-ana");
    let replayed = h.items().await?;
    t.say(format!(
        "a worker-less engine on the same file answers items by replay: {}",
        describe_lines(&replayed)
    ));
    assert_eq!(replayed, items);
    let history = h.history().await?;
    assert_eq!(
        history.len(),
        finished.len(),
        "queries on a finished run append nothing"
    );
    t.say(format!(
        "history length when the run finished / after two queries and a refused update: {}/{}",
        finished.len(),
        history.len()
    ));
    println!("history of cart-ana:");
    print_history(&history);
    Ok(())
}
