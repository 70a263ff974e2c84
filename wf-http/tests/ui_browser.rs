//! The web view in a real browser: headless Chromium driven over the DevTools protocol opens
//! the runs list (giving the token the page asks for), opens a run, runs a query, sends a
//! signal through the form and sees its event in the timeline, and queries the finished run.
//! A second test gives the page tokens of each role in turn: a read token sees no signal,
//! update, cancel, terminate, pause or reset control (nor the batch form or schedule buttons)
//! but runs queries; a write token gets the forms and cancel; an admin token gets pause and
//! "reset to here" too, and terminates the run through the confirmation dialog. Others click
//! through pause, unpause and reset to a workflow task, start a batch from the batches page
//! and watch it finish, cancel a batch, and pause a schedule from the schedules page.
//! Screenshots go to `target/ui-screenshots/`. Without Chromium the tests skip loudly, unless
//! `WF_REQUIRE_CHROMIUM=1`.

mod browser;

use browser::{chromium_or_skip, finish, Browser, Page};
use serde_json::Value;
use std::time::Duration;
use wf_http::ConnectExt;
use wf_sdk::batch::{BatchAction, BatchStatus};
use wf_sdk::client::{ListFilter, RepairKind};
use wf_sdk::prelude::*;
use wf_sdk::schedule::{ScheduleAction, SchedulePolicies, ScheduleSpec};

const TOKEN: &str = "ui-test-token";
/// How long the page may take to show something: a failure detector on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Order {
    pub item: String,
    pub qty: u32,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OrderState {
    pub stage: String,
    pub approved_by: Option<String>,
    pub notes: Vec<String>,
}

/// An order: reserves stock (an activity that fails its first attempt), notifies through a
/// child run, waits a short timer, then waits for approval.
#[derive(Default)]
pub struct OrderFlow {
    stage: String,
    approved_by: Option<String>,
    notes: Vec<String>,
}

#[workflow(name = "order")]
impl OrderFlow {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, order: Order) -> Result<String, WorkflowError> {
        ctx.state_mut(|s| s.stage = "reserving".into());
        let retry = RetryPolicy {
            initial_interval: Duration::from_millis(50),
            ..RetryPolicy::default()
        };
        let reserved = ctx
            .activity(Stock::reserve, (order.item.clone(), order.qty))
            .retry(retry)
            .await?;
        ctx.child::<Notify>(format!("{}-notify", ctx.workflow_id()), &reserved)
            .await
            .map_err(|e| WorkflowError::new(e.to_string()))?;
        ctx.sleep(Duration::from_millis(50)).await?;
        ctx.state_mut(|s| s.stage = "waiting".into());
        ctx.wait_condition(|s| s.approved_by.is_some()).await;
        ctx.state_mut(|s| s.stage = "approved".into());
        let by = ctx.state(|s| s.approved_by.clone().unwrap_or_default());
        Ok(format!("{} x{} approved by {by}", order.item, order.qty))
    }

    #[signal]
    fn approve(&mut self, by: String) {
        self.approved_by = Some(by);
    }

    #[query]
    fn state(&self) -> OrderState {
        OrderState {
            stage: self.stage.clone(),
            approved_by: self.approved_by.clone(),
            notes: self.notes.clone(),
        }
    }

    #[update]
    fn add_note(&mut self, text: String) -> Result<usize, UpdateError> {
        self.notes.push(text);
        Ok(self.notes.len())
    }
}

/// A child that completes at once.
#[derive(Default)]
pub struct Notify;

#[workflow(name = "notify")]
impl Notify {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, what: String) -> Result<String, WorkflowError> {
        Ok(format!("notified: {what}"))
    }
}

#[derive(Default)]
pub struct Stock;

#[activities]
impl Stock {
    /// Fails its first attempt, so that the page has a retried activity to show.
    #[activity]
    pub async fn reserve(
        &self,
        ctx: ActivityContext,
        item: String,
        qty: u32,
    ) -> Result<String, ActivityError> {
        if qty == 0 {
            return Err(ActivityError::non_retryable(
                "out_of_stock",
                format!("no {item} to reserve"),
            ));
        }
        if ctx.attempt() == 1 {
            return Err(ActivityError::retryable("warehouse busy, try again"));
        }
        Ok(format!("{qty} x {item} reserved"))
    }
}

/// The strings of a JSON array the page returned.
fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The JavaScript text of `s` (a JSON string literal).
fn js(s: &str) -> String {
    Value::from(s).to_string()
}

/// Waits for the token form, takes a screenshot of it if named, gives it `token` and submits.
async fn give_token(page: &mut Page, token: &str, screenshot: Option<&str>) {
    page.wait_for(
        "the token form",
        "!!document.querySelector('#token-form')",
        PATIENCE,
    )
    .await;
    if let Some(name) = screenshot {
        page.screenshot(name).await;
    }
    page.eval(&format!(
        "document.querySelector('#token-form input[name=token]').value = {}; \
         document.querySelector('#token-form').requestSubmit(); true",
        js(token)
    ))
    .await;
}

/// An engine running the orders, served on 127.0.0.1:0 with `options`, and its base URL.
async fn serve_orders(options: wf_http::ServeOptions) -> (Engine, wf_http::Server, String) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<OrderFlow>()
        .workflow::<Notify>()
        .activities(Stock)
        .build()
        .await
        .expect("engine");
    let server = wf_http::serve(&engine, "127.0.0.1:0", options)
        .await
        .expect("serve");
    let base = format!("http://{}", server.local_addr());
    (engine, server, base)
}

/// Starts order `id` and returns once it waits for approval.
async fn waiting_order(
    engine: &Engine,
    id: &str,
    item: &str,
    qty: u32,
) -> WorkflowHandle<OrderFlow> {
    let order = Order {
        item: item.into(),
        qty,
    };
    let h = engine
        .client()
        .start::<OrderFlow>(id, order)
        .await
        .expect("start an order");
    let deadline = std::time::Instant::now() + PATIENCE;
    while h.state().await.expect("query").stage != "waiting" {
        assert!(
            std::time::Instant::now() < deadline,
            "{id} never got to waiting"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h
}

/// Runs the `state` query through its button (clearing an earlier answer) and reads the
/// answer the page shows.
async fn state_query(page: &mut Page, what: &str) -> OrderState {
    page.eval(
        "document.querySelector('[data-query-result=state]').replaceChildren(); \
         document.querySelector('form[data-query=state]').requestSubmit(); true",
    )
    .await;
    let answer = page
        .wait_for(
            what,
            "document.querySelector('[data-query-result=state] pre')?.textContent",
            PATIENCE,
        )
        .await;
    serde_json::from_str(answer.as_str().expect("text")).expect("the answer is JSON")
}

/// Answers the confirmation dialog on screen: types `reason` (when given) and goes ahead;
/// returns once the dialog is gone.
async fn confirm(page: &mut Page, reason: Option<&str>) {
    page.wait_for(
        "the confirmation dialog",
        "!!document.querySelector('#confirm[open]')",
        PATIENCE,
    )
    .await;
    if let Some(reason) = reason {
        page.eval(&format!(
            "document.querySelector('#confirm-reason').value = {}; true",
            js(reason)
        ))
        .await;
    }
    page.eval("document.querySelector('#confirm-ok').click(); true")
        .await;
    page.wait_for(
        "the dialog to close",
        "!document.querySelector('#confirm')",
        PATIENCE,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_view_lists_runs_queries_and_signals_in_a_real_browser() {
    let Some(binary) =
        chromium_or_skip("the_web_view_lists_runs_queries_and_signals_in_a_real_browser")
    else {
        return;
    };

    let (engine, server, base) = serve_orders(wf_http::ServeOptions::default().token(TOKEN)).await;

    // One run finished (approved by bob), one waiting for approval.
    let client = engine.client();
    let done = waiting_order(&engine, "order-done", "lamp", 1).await;
    waiting_order(&engine, "order-42", "desk", 2).await;
    // And one that fails: its activity refuses for good.
    let bad = client
        .start::<OrderFlow>(
            "order-bad",
            Order {
                item: "sofa".into(),
                qty: 0,
            },
        )
        .await
        .expect("start order-bad");
    assert!(tokio::time::timeout(PATIENCE, bad.result())
        .await
        .expect("order-bad finishes")
        .is_err());
    done.approve("bob".into())
        .await
        .expect("approve order-done");
    tokio::time::timeout(PATIENCE, done.result())
        .await
        .expect("order-done finishes")
        .expect("order-done completes");

    let chromium = Browser::launch(&binary);
    eprintln!("chromium pid {} at {}", chromium.pid(), chromium.ws_url);
    let mut page = Page::open(&chromium.ws_url).await;

    // The list: the page asks for the token first.
    page.navigate(&format!("{base}/ui/")).await;
    give_token(&mut page, TOKEN, Some("1-token")).await;
    let ids = page
        .wait_for(
            "both runs listed with their start times",
            "(() => { const rows = [...document.querySelectorAll('#runs tbody tr')]; \
              if (rows.length < 2 || rows.some(r => !r.querySelector('time'))) return null; \
              return rows.map(r => r.dataset.workflowId + ':' + r.querySelector('.status').textContent); })()",
            PATIENCE,
        )
        .await;
    let ids = strings(&ids);
    assert!(ids.contains(&"order-42:running"), "{ids:?}");
    assert!(ids.contains(&"order-done:completed"), "{ids:?}");
    assert!(
        ids.iter().any(|i| i.starts_with("order-42-notify:")),
        "children are runs too: {ids:?}"
    );
    page.screenshot("2-runs").await;

    // Filter by status.
    page.eval(
        "{ const s = document.querySelector('#filters select[name=status]'); s.value = 'completed'; \
         s.dispatchEvent(new Event('change')); true }",
    )
    .await;
    let filtered = page
        .wait_for(
            "the completed filter",
            "(document.querySelector('#main').dataset.rendered || '').includes('status=completed') && \
             [...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.workflowId)",
            PATIENCE,
        )
        .await;
    let filtered = strings(&filtered);
    assert!(filtered.contains(&"order-done"), "{filtered:?}");
    assert!(
        !filtered.contains(&"order-42"),
        "a running run under the completed filter: {filtered:?}"
    );

    // The run page, opened from the list.
    page.navigate(&format!("{base}/ui/")).await;
    page.wait_for(
        "the run's link",
        "(() => { const a = document.querySelector('#runs tr[data-workflow-id=\"order-42\"] a'); if (a) a.click(); return !!a; })()",
        PATIENCE,
    )
    .await;
    let status = page
        .wait_for(
            "the run page",
            "document.querySelector('#timeline .event') && document.querySelector('#run-status').textContent",
            PATIENCE,
        )
        .await;
    assert_eq!(status, "running");
    let kinds = page
        .eval("[...document.querySelectorAll('#timeline .event')].map(e => e.dataset.eventType)")
        .await;
    let kinds = strings(&kinds);
    for expected in [
        "WorkflowStarted",
        "ActivityScheduled",
        "ActivityCompleted",
        "ChildWorkflowStarted",
        "TimerStarted",
        "TimerFired",
    ] {
        assert!(
            kinds.contains(&expected),
            "no {expected} in the timeline: {kinds:?}"
        );
    }
    let tasks = page
        .eval("document.querySelectorAll('#timeline .task').length")
        .await;
    assert!(
        tasks.as_u64().unwrap_or(0) >= 3,
        "events grouped by workflow task: {tasks}"
    );
    let retried = page
        .eval("document.querySelector('#activities tr[data-activity-seq]').textContent")
        .await;
    assert!(
        retried
            .as_str()
            .unwrap_or("")
            .contains("succeeded on attempt 2"),
        "the retried activity: {retried}"
    );
    let child = page
        .eval("!!document.querySelector('[data-child=\"order-42-notify\"] a')")
        .await;
    assert_eq!(child, Value::Bool(true), "the child is linked");
    page.screenshot("3-run").await;

    // A query, through its button.
    let state = state_query(&mut page, "the state query's answer").await;
    assert_eq!(state.stage, "waiting");
    assert_eq!(state.approved_by, None);

    // An update, through its form: the page shows the handler's value and the accepted event.
    page.eval(
        "{ const f = document.querySelector('#update-form'); f.querySelector('select').value = 'add_note'; \
         f.querySelector('select').dispatchEvent(new Event('change')); \
         f.querySelector('input[name=text]').value = 'gift wrap'; f.requestSubmit(); true }",
    )
    .await;
    let value = page
        .wait_for(
            "the update's value",
            "document.querySelector('#update-outcome.ok pre')?.textContent",
            PATIENCE,
        )
        .await;
    assert_eq!(
        value.as_str().map(str::trim),
        Some("1"),
        "add_note returns the count of notes"
    );
    page.wait_for(
        "the update's events in the timeline",
        "!!document.querySelector('#timeline .event[data-event-type=UpdateCompleted]')",
        PATIENCE,
    )
    .await;

    // A signal, through the form: its event appears and the run completes.
    page.eval(
        "{ const f = document.querySelector('#signal-form'); f.querySelector('select').value = 'approve'; \
         f.querySelector('select').dispatchEvent(new Event('change')); \
         f.querySelector('input[name=by]').value = 'alice <script>x</script>'; f.requestSubmit(); true }",
    )
    .await;
    let signal = page
        .wait_for(
            "the signal's event in the timeline",
            "document.querySelector('#timeline .event[data-event-type=SignalReceived]')?.textContent",
            PATIENCE,
        )
        .await;
    let signal = signal.as_str().expect("text");
    assert!(
        signal.contains("approve") && signal.contains("alice <script>x</script>"),
        "{signal}"
    );
    let injected = page
        .eval("document.querySelectorAll('#timeline script').length")
        .await;
    assert_eq!(injected, 0, "run data shown as text, not markup");
    page.wait_for(
        "the run to show as completed",
        "document.querySelector('#run-status').textContent === 'completed' && \
         document.querySelector('#result').textContent.includes('approved by alice')",
        PATIENCE,
    )
    .await;
    page.screenshot("4-signalled").await;

    // Queries work on the finished run too.
    let state = state_query(&mut page, "the finished run's query answer").await;
    assert_eq!(state.stage, "approved");
    assert_eq!(
        state.approved_by.as_deref(),
        Some("alice <script>x</script>")
    );
    page.screenshot("5-finished-query").await;

    // A failed run: its failure, and the activity that failed for good.
    page.navigate(&format!("{base}/ui/#/run/order/order-bad"))
        .await;
    let failure = page
        .wait_for(
            "the failed run's page",
            "document.querySelector('#run-status')?.textContent === 'failed' && \
             document.querySelector('#failure')?.textContent",
            PATIENCE,
        )
        .await;
    assert!(
        failure
            .as_str()
            .unwrap_or("")
            .contains("no sofa to reserve"),
        "{failure}"
    );
    let failed = page
        .eval("document.querySelector('#timeline .event[data-event-type=ActivityFailed]')?.textContent")
        .await;
    let failed = failed.as_str().unwrap_or("");
    assert!(
        failed.contains("out_of_stock") && failed.contains("non-retryable"),
        "{failed}"
    );
    page.screenshot("6-failed").await;

    finish(page, chromium, server).await;
}

const READ_TOKEN: &str = "ui-read-token";
const WRITE_TOKEN: &str = "ui-write-token";

/// Which of the run page's controls are on the page, once it has rendered `order-7`.
const CONTROLS: &str = "(() => { if (!document.querySelector('#timeline .event')) return null; \
    return ['#signal-form', '#update-form', '#cancel-run', '#pause-run', '#unpause-run', \
            '#terminate-run', '#resume-run', '[data-reset-here]', '#role-note'] \
      .filter(s => { const e = document.querySelector(s); return e && !e.closest('[hidden]'); }); })()";

/// Forgets the page's token, gives it `token`, and returns the controls the run page shows.
async fn controls_with(page: &mut Page, token: &str) -> Vec<String> {
    page.eval("document.querySelector('#forget-token').click(); true")
        .await;
    give_token(page, token, None).await;
    let shown = page.wait_for("the run page", CONTROLS, PATIENCE).await;
    strings(&shown).into_iter().map(String::from).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_view_shows_each_token_only_what_its_role_may_do() {
    let Some(binary) = chromium_or_skip("the_web_view_shows_each_token_only_what_its_role_may_do")
    else {
        return;
    };
    let options = wf_http::ServeOptions::default()
        .token_with_role(wf_http::Role::Read, READ_TOKEN)
        .token_with_role(wf_http::Role::Write, WRITE_TOKEN)
        .token(TOKEN);
    let (engine, server, base) = serve_orders(options).await;
    waiting_order(&engine, "order-7", "chair", 1).await;

    let chromium = Browser::launch(&binary);
    let mut page = Page::open(&chromium.ws_url).await;
    let run_page = format!("{base}/ui/#/run/order/order-7");

    // No token: the page asks for one.
    page.navigate(&run_page).await;
    give_token(&mut page, READ_TOKEN, None).await;
    let shown = page
        .wait_for("the run page for a read token", CONTROLS, PATIENCE)
        .await;
    assert_eq!(
        strings(&shown),
        ["#role-note"],
        "a read token gets no control: no repair, no pause"
    );
    let note = page
        .eval("document.querySelector('#role-note').textContent")
        .await;
    assert!(
        note.as_str().unwrap_or("").contains("need a write token"),
        "{note}"
    );
    let badge = page
        .eval("document.querySelector('#token-role').textContent")
        .await;
    assert_eq!(badge, "read");
    page.screenshot("7-read-token").await;
    // Queries are reads.
    let state = state_query(&mut page, "the state query's answer for a read token").await;
    assert_eq!(state.stage, "waiting");
    // The batches and schedules pages list, and offer a read token nothing to do.
    let schedule = ScheduleAction::start::<OrderFlow>(
        "nightly-order",
        &Order {
            item: "lamp".into(),
            qty: 1,
        },
    )
    .expect("a schedule action");
    engine
        .client()
        .schedules()
        .create(
            "nightly",
            ScheduleSpec::every(Duration::from_secs(86_400)),
            schedule,
            SchedulePolicies::default(),
        )
        .await
        .expect("create a schedule");
    page.navigate(&format!("{base}/ui/#/schedules")).await;
    page.wait_for(
        "the schedule listed for a read token",
        "document.querySelector('#schedules tr[data-schedule-id=nightly]') && \
         document.querySelector('#role-note')",
        PATIENCE,
    )
    .await;
    let buttons = page
        .eval("document.querySelectorAll('[data-schedule-action]').length")
        .await;
    assert_eq!(buttons, 0, "a read token gets no schedule button");
    // The limits page: each flow limit with what it binds, and each queue of workflow starts.
    let limit = wf_sdk::flow::FlowLimit::concurrency(wf_sdk::flow::FlowScope::key("openai"), 4);
    engine
        .client()
        .flow_limits()
        .set(limit)
        .await
        .expect("set a flow limit");
    let emails = wf_sdk::flow::WorkflowQueue::new("emails")
        .concurrency(2)
        .rate(10, Duration::from_secs(3600));
    engine
        .client()
        .workflow_queues()
        .set(emails)
        .await
        .expect("set a workflow queue");
    page.navigate(&format!("{base}/ui/#/limits")).await;
    let row = page
        .wait_for(
            "the flow limit listed",
            "document.querySelector('#limits tr[data-limit=\"key:openai/concurrency\"]')?.textContent",
            PATIENCE,
        )
        .await;
    let row = row.as_str().unwrap_or_default();
    assert!(row.contains("at most 4 at once"), "{row}");
    // ... and each queue of workflow starts with its settings, runs and tokens.
    let cells = page
        .wait_for(
            "the workflow queue listed",
            "document.querySelector('#queues tr[data-queue=\"emails\"]') && \
             Array.from(document.querySelectorAll('#queues tr[data-queue=\"emails\"] td'), (td) => td.textContent)",
            PATIENCE,
        )
        .await;
    let cells: Vec<&str> = cells
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        cells,
        [
            "queue:emails",
            "at most 2 at once, at most 10 per 1 h 0 min",
            "0",
            "0",
            "10",
            "has room"
        ]
    );
    page.navigate(&format!("{base}/ui/#/batches")).await;
    page.wait_for(
        "the batches page for a read token",
        "document.querySelector('#batches-empty') && document.querySelector('#role-note')",
        PATIENCE,
    )
    .await;
    let form = page.eval("!!document.querySelector('#batch-form')").await;
    assert_eq!(form, Value::Bool(false), "a read token gets no batch form");
    page.navigate(&run_page).await;

    // A write token: the forms and cancel, not terminate, pause or reset.
    assert_eq!(
        controls_with(&mut page, WRITE_TOKEN).await,
        ["#signal-form", "#update-form", "#cancel-run", "#role-note"]
    );

    // An admin token: terminate, pause and reset too; terminating asks first.
    assert_eq!(
        controls_with(&mut page, TOKEN).await,
        [
            "#signal-form",
            "#update-form",
            "#cancel-run",
            "#pause-run",
            "#terminate-run",
            "[data-reset-here]"
        ]
    );
    page.eval("document.querySelector('#terminate-run').click(); true")
        .await;
    let title = page
        .wait_for(
            "the terminate confirmation",
            "document.querySelector('#confirm[open] #confirm-title')?.textContent",
            PATIENCE,
        )
        .await;
    assert_eq!(title, "Terminate order-7?");
    let status = || async {
        engine
            .client()
            .describe("order-7")
            .await
            .expect("describe")
            .status
    };
    assert_eq!(
        status().await,
        RunStatus::Running,
        "one click terminates nothing"
    );
    confirm(&mut page, Some("INC-3: stop it")).await;
    page.wait_for(
        "the run to show as terminated",
        "document.querySelector('#run-status')?.textContent === 'terminated'",
        PATIENCE,
    )
    .await;
    assert_eq!(status().await, RunStatus::Terminated);
    let ended = engine
        .client()
        .history("order-7")
        .await
        .expect("history")
        .into_iter()
        .last()
        .map(|e| e.kind);
    assert!(
        matches!(&ended, Some(EventKind::WorkflowTerminated { reason }) if reason == "INC-3: stop it"),
        "the dialog's reason is the termination's: {ended:?}"
    );
    let hidden = page.eval(CONTROLS).await;
    assert_eq!(
        strings(&hidden),
        ["#resume-run", "[data-reset-here]"],
        "a terminated run offers a resume and resets only"
    );
    page.screenshot("8-terminated").await;

    // Resume: a new run goes on from the last good task, and the page follows it.
    let terminated_run = engine
        .client()
        .describe("order-7")
        .await
        .expect("describe")
        .run_id;
    page.eval("document.querySelector('#resume-run').click(); true")
        .await;
    confirm(&mut page, Some("INC-3: that was a mistake")).await;
    let resumed = page
        .wait_for(
            "the resumed run on the page",
            "document.querySelector('#run-status')?.textContent === 'running' && \
             document.querySelector('#action-outcome.ok #resumed-run')?.textContent",
            PATIENCE,
        )
        .await;
    let d = engine.client().describe("order-7").await.expect("describe");
    assert_eq!(Some(d.run_id.as_str()), resumed.as_str());
    assert_eq!(d.status, RunStatus::Running);
    let origin = d.repaired_from.expect("describe shows the resume");
    assert_eq!(
        (origin.kind, origin.run_id, origin.reason.as_str()),
        (
            RepairKind::Resume,
            terminated_run,
            "INC-3: that was a mistake"
        )
    );
    let offered = page.eval(CONTROLS).await;
    assert_eq!(
        strings(&offered),
        [
            "#signal-form",
            "#update-form",
            "#cancel-run",
            "#pause-run",
            "#terminate-run",
            "[data-reset-here]"
        ],
        "the resumed run runs, with nothing to resume"
    );

    finish(page, chromium, server).await;
}

/// The remote client of the page's server, with the admin token: what the page did, seen
/// over HTTP.
async fn remote(base: &str) -> Client {
    Client::connect(base)
        .token(TOKEN)
        .await
        .expect("connect to the page's server")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_page_pauses_unpauses_and_resets_to_a_task() {
    let Some(binary) = chromium_or_skip("the_run_page_pauses_unpauses_and_resets_to_a_task") else {
        return;
    };
    let (engine, server, base) = serve_orders(wf_http::ServeOptions::default().token(TOKEN)).await;
    let h = waiting_order(&engine, "order-ops", "lamp", 1).await;
    let over_http = remote(&base).await;
    let old_run = h.describe().await.expect("describe").run_id;

    let chromium = Browser::launch(&binary);
    let mut page = Page::open(&chromium.ws_url).await;
    page.navigate(&format!("{base}/ui/#/run/order/order-ops"))
        .await;
    give_token(&mut page, TOKEN, None).await;
    page.wait_for(
        "the run page with its pause button",
        "document.querySelector('#timeline .event') && !document.querySelector('#pause-run').closest('[hidden]')",
        PATIENCE,
    )
    .await;

    // Pause: the dialog asks why; describe over HTTP shows who and why, and so does the page.
    page.eval("document.querySelector('#pause-run').click(); true")
        .await;
    confirm(&mut page, Some("INC-7: hold while we look")).await;
    let banner = page
        .wait_for(
            "the paused banner",
            "document.querySelector('#action-outcome.ok')?.textContent === 'Paused.' && \
             document.querySelector('#paused-banner')?.textContent",
            PATIENCE,
        )
        .await;
    let banner = banner.as_str().unwrap_or("");
    assert!(
        banner.contains("Paused by admin") && banner.contains("INC-7: hold while we look"),
        "{banner}"
    );
    let paused = over_http
        .describe("order-ops")
        .await
        .expect("describe over HTTP")
        .paused
        .expect("describe shows the pause");
    assert_eq!(
        (paused.by.as_str(), paused.reason.as_str()),
        ("admin", "INC-7: hold while we look")
    );
    let shown = page
        .eval(
            "[document.querySelector('#pause-run').hidden, document.querySelector('#unpause-run').hidden, \
              document.querySelector('#run-paused')?.textContent]",
        )
        .await;
    assert_eq!(shown, serde_json::json!([true, false, "paused"]));
    page.screenshot("9-paused").await;
    // The runs list says so too.
    page.navigate(&format!("{base}/ui/#/")).await;
    page.wait_for(
        "the paused badge in the runs list",
        "!!document.querySelector('#runs tr[data-workflow-id=\"order-ops\"] .s-paused')",
        PATIENCE,
    )
    .await;
    page.navigate(&format!("{base}/ui/#/run/order/order-ops"))
        .await;
    page.wait_for(
        "the paused run's page again",
        "document.querySelector('#timeline .event') && !!document.querySelector('#paused-banner')",
        PATIENCE,
    )
    .await;

    // Unpause: asks first, then the pause is gone from describe and from the page.
    page.eval("document.querySelector('#unpause-run').click(); true")
        .await;
    let has_reason = page
        .wait_for(
            "the unpause confirmation",
            "document.querySelector('#confirm[open]') && \
             (document.querySelector('#confirm-reason') ? 'reason' : 'none')",
            PATIENCE,
        )
        .await;
    assert_eq!(has_reason, "none", "an unpause takes no reason");
    confirm(&mut page, None).await;
    page.wait_for(
        "the pause to be gone from the page",
        "document.querySelector('#action-outcome.ok')?.textContent === 'Unpaused.' && \
         !document.querySelector('#paused-banner') && \
         !document.querySelector('#pause-run').closest('[hidden]')",
        PATIENCE,
    )
    .await;
    let d = over_http.describe("order-ops").await.expect("describe");
    assert!(d.paused.is_none(), "{:?}", d.paused);
    assert_eq!(d.status, RunStatus::Running);

    // Reset to the last workflow task: the page names the new run and shows where it came from.
    let before = h.history().await.expect("history");
    let point = page
        .eval(
            "(() => { const b = [...document.querySelectorAll('[data-reset-here]')]; \
              return Number(b[b.length - 1].dataset.resetHere); })()",
        )
        .await
        .as_u64()
        .expect("an event id");
    assert!(
        matches!(
            before.iter().find(|e| e.event_id == point).map(|e| &e.kind),
            Some(EventKind::WorkflowTaskCompleted { .. })
        ),
        "reset to here sits on workflow tasks: event {point}"
    );
    page.eval(&format!(
        "document.querySelector('[data-reset-here=\"{point}\"]').click(); true"
    ))
    .await;
    let drop_box = page
        .wait_for(
            "the reset confirmation",
            "document.querySelector('#confirm[open]') && \
             !!document.querySelector('#confirm input[name=drop_messages]')",
            PATIENCE,
        )
        .await;
    assert_eq!(
        drop_box,
        Value::Bool(true),
        "a reset may drop later messages"
    );
    page.screenshot("10-reset-dialog").await;
    confirm(&mut page, Some("INC-7: replay on the fix")).await;
    let new_run = page
        .wait_for(
            "the reset's new run",
            "document.querySelector('#action-outcome.ok #reset-new-run')?.textContent",
            PATIENCE,
        )
        .await;
    let new_run = new_run.as_str().expect("text").to_string();
    assert_ne!(new_run, old_run);
    let d = over_http.describe("order-ops").await.expect("describe");
    assert_eq!(
        d.run_id, new_run,
        "the workflow id's latest run is the new one"
    );
    let origin = d.repaired_from.expect("describe shows the reset");
    assert_eq!(
        (
            origin.kind,
            origin.run_id.as_str(),
            origin.at_event,
            origin.reason.as_str(),
            origin.identity.as_str()
        ),
        (
            RepairKind::Reset,
            old_run.as_str(),
            point,
            "INC-7: replay on the fix",
            "http:admin"
        )
    );
    let runs = over_http
        .list(ListFilter {
            workflow_type: Some("order".into()),
            ..ListFilter::default()
        })
        .await
        .expect("list over HTTP");
    let old = runs
        .iter()
        .find(|r| r.run_id == old_run)
        .expect("the old run is listed");
    assert_eq!(old.status, RunStatus::Reset);
    // The new run goes on from the prefix: the same events up to the point, no activity or
    // child started again, and the same state.
    let after = h.history().await.expect("the new run's history");
    let names = |events: &[wf_sdk::history::HistoryEvent]| -> Vec<&'static str> {
        events
            .iter()
            .take_while(|e| e.event_id <= point)
            .map(|e| e.kind.name())
            .collect()
    };
    assert_eq!(
        names(&after),
        names(&before),
        "the new run keeps the prefix"
    );
    assert!(
        after
            .iter()
            .filter(|e| e.event_id > point)
            .all(|e| !matches!(
                e.kind,
                EventKind::ActivityScheduled { .. } | EventKind::ChildWorkflowStarted { .. }
            )),
        "nothing of the prefix runs again: {:?}",
        after.iter().map(|e| e.kind.name()).collect::<Vec<_>>()
    );
    assert_eq!(h.state().await.expect("query").stage, "waiting");
    let repaired = page
        .wait_for(
            "the new run on the page, with its origin",
            &format!(
                "document.querySelector('#run-head .mono')?.textContent === {} && \
                 document.querySelector('#repaired-from')?.textContent",
                js(&new_run)
            ),
            PATIENCE,
        )
        .await;
    let repaired = repaired.as_str().unwrap_or("");
    assert!(
        repaired.starts_with("reset of run") && repaired.contains("INC-7: replay on the fix"),
        "{repaired}"
    );
    page.screenshot("10-reset-done").await;

    // The new run completes on a signal; the old one shows it was reset, and to which run.
    h.approve("carol".into()).await.expect("approve");
    page.wait_for(
        "the new run to complete",
        "document.querySelector('#run-status')?.textContent === 'completed'",
        PATIENCE,
    )
    .await;
    page.eval(
        "document.querySelector('#action-outcome a[href*=\"?run=\"]:not(#reset-new-run a)').click(); true",
    )
    .await;
    let old_page = page
        .wait_for(
            "the reset run's page",
            "document.querySelector('#run-status')?.textContent === 'reset' && \
             document.querySelector('#reset-to')?.textContent",
            PATIENCE,
        )
        .await;
    assert!(
        old_page.as_str().unwrap_or("").contains(&new_run),
        "{old_page}"
    );
    page.screenshot("11-reset-run").await;

    finish(page, chromium, server).await;
}

/// Fills the batches page's form for `action` on the running orders (with search
/// attributes `search`) and submits it; returns the count the confirmation shows.
async fn start_batch_form(page: &mut Page, action: &str, search: &str) -> Value {
    page.eval(&format!(
        "{{ const f = document.querySelector('#batch-form'); \
           f.querySelector('select[name=action]').value = {}; \
           f.querySelector('select[name=action]').dispatchEvent(new Event('change')); \
           f.querySelector('select[name=type]').value = 'order'; \
           f.querySelector('select[name=status]').value = 'running'; \
           f.querySelector('input[name=search]').value = {}; \
           f.querySelector('input[name=rate]').value = '20'; \
           f.requestSubmit(); true }}",
        js(action),
        js(search)
    ))
    .await;
    page.wait_for(
        "the batch confirmation with its count",
        "document.querySelector('#confirm[open] #confirm-count')?.dataset.count",
        PATIENCE,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batches_page_starts_a_batch_and_follows_it_to_the_end() {
    let Some(binary) =
        chromium_or_skip("the_batches_page_starts_a_batch_and_follows_it_to_the_end")
    else {
        return;
    };
    let (engine, server, base) = serve_orders(wf_http::ServeOptions::default().token(TOKEN)).await;
    for i in 1..=3 {
        waiting_order(&engine, &format!("bulk-{i}"), "cup", i).await;
    }
    let over_http = remote(&base).await;

    let chromium = Browser::launch(&binary);
    let mut page = Page::open(&chromium.ws_url).await;
    page.navigate(&format!("{base}/ui/#/batches")).await;
    give_token(&mut page, TOKEN, None).await;
    page.wait_for(
        "the empty batches page with its form",
        "document.querySelector('#batches-empty') && document.querySelector('#batch-form')",
        PATIENCE,
    )
    .await;
    // Marks this view: the progress must come by polling, not by a new rendering.
    page.eval("document.querySelector('#main > div').dataset.marker = 'same-view'; true")
        .await;

    // Terminate the running orders (the notify children are completed, of another type).
    let count = start_batch_form(&mut page, "terminate", "").await;
    assert_eq!(count, "3", "the dialog counts what the filter selects");
    for i in 1..=3 {
        let status = over_http
            .describe(&format!("bulk-{i}"))
            .await
            .expect("describe")
            .status;
        assert_eq!(
            status,
            RunStatus::Running,
            "nothing happens before the go-ahead"
        );
    }
    confirm(&mut page, Some("INC-9: stop the cups")).await;
    let batch_id = page
        .wait_for(
            "the started batch",
            "document.querySelector('#batch-outcome.ok #started-batch')?.textContent",
            PATIENCE,
        )
        .await;
    let batch_id = batch_id.as_str().expect("text").to_string();
    let row = page
        .wait_for(
            "the batch to reach 3 done",
            &format!(
                "(() => {{ const r = document.querySelector('#batches tr[data-batch-id=' + CSS.escape({}) + ']'); \
                   return r && r.dataset.status === 'completed' && r.dataset.done === '3' && r.textContent; }})()",
                js(&batch_id)
            ),
            PATIENCE,
        )
        .await;
    let row = row.as_str().unwrap_or("");
    assert!(
        row.contains("terminate")
            && row.contains("type order · status running")
            && row.contains("3 / 3 done")
            && row.contains("INC-9: stop the cups"),
        "{row}"
    );
    let marker = page
        .eval("document.querySelector('#main > div').dataset.marker")
        .await;
    assert_eq!(
        marker, "same-view",
        "the page followed the batch by polling"
    );
    page.screenshot("12-batch-done").await;

    let d = over_http
        .batches()
        .describe(&batch_id)
        .await
        .expect("describe the batch over HTTP");
    assert_eq!(
        (d.status, d.selected, d.done, d.failed, d.reason.as_str()),
        (BatchStatus::Completed, 3, 3, 0, "INC-9: stop the cups")
    );
    for i in 1..=3 {
        let status = over_http
            .describe(&format!("bulk-{i}"))
            .await
            .expect("describe")
            .status;
        assert_eq!(status, RunStatus::Terminated, "bulk-{i}");
    }
    let cancel = page
        .eval("document.querySelectorAll('[data-cancel-batch]').length")
        .await;
    assert_eq!(cancel, 0, "a finished batch has nothing to cancel");

    // A signal batch filtered on search attributes: the page sends the signal's name and
    // arguments and the typed values as the server reads them (no run has them: 0 selected).
    page.eval(
        "{ const f = document.querySelector('#batch-form'); \
           f.querySelector('select[name=action]').value = 'signal'; \
           f.querySelector('select[name=action]').dispatchEvent(new Event('change')); \
           f.querySelector('input[name=signal]').value = 'approve'; \
           f.querySelector('input[name=args]').value = '[\"dave\"]'; \
           f.querySelector('select[name=status]').value = ''; \
           f.querySelector('input[name=search]').value = 'region=eu, tier=int:2, vip=true'; \
           f.querySelector('input[name=rate]').value = ''; \
           f.requestSubmit(); true }",
    )
    .await;
    let count = page
        .wait_for(
            "the signal batch's confirmation",
            "document.querySelector('#confirm[open] #confirm-count')?.dataset.count",
            PATIENCE,
        )
        .await;
    assert_eq!(count, "0");
    confirm(&mut page, None).await;
    let signal_batch = page
        .wait_for(
            "the signal batch",
            &format!(
                "(() => {{ const id = document.querySelector('#batch-outcome.ok #started-batch')?.textContent; \
                   return id && id !== {} && id; }})()",
                js(&batch_id)
            ),
            PATIENCE,
        )
        .await;
    let d = over_http
        .batches()
        .describe(signal_batch.as_str().expect("text"))
        .await
        .expect("describe the signal batch");
    assert!(
        matches!(&d.action, BatchAction::Signal { name, args }
            if name == "approve" && args.decode::<(String,)>().ok() == Some(("dave".into(),))),
        "{:?}",
        d.action
    );
    assert_eq!(
        d.filter.search,
        [
            ("region".to_string(), SearchValue::from("eu")),
            ("tier".to_string(), SearchValue::Int(2)),
            ("vip".to_string(), SearchValue::Bool(true)),
        ]
    );
    assert_eq!(
        (
            d.filter.workflow_type.as_deref(),
            d.selected,
            d.reason.as_str()
        ),
        (Some("order"), 0, "signal approve from the web view")
    );

    // A reset batch brings the terminated orders back from their first task, without the
    // messages they got after it.
    page.eval(
        "{ const f = document.querySelector('#batch-form'); \
           f.querySelector('select[name=action]').value = 'reset'; \
           f.querySelector('select[name=action]').dispatchEvent(new Event('change')); \
           f.querySelector('select[name=to]').value = 'first-task'; \
           f.querySelector('input[name=drop_messages]').checked = true; \
           f.querySelector('select[name=type]').value = 'order'; \
           f.querySelector('select[name=status]').value = 'terminated'; \
           f.querySelector('input[name=search]').value = ''; \
           f.requestSubmit(); true }",
    )
    .await;
    let count = page
        .wait_for(
            "the reset batch's confirmation",
            "document.querySelector('#confirm[open] #confirm-count')?.dataset.count",
            PATIENCE,
        )
        .await;
    assert_eq!(count, "3", "the three terminated orders");
    confirm(&mut page, Some("INC-9: cups are back")).await;
    let reset_row = page
        .wait_for(
            "the reset batch to reach 3 done",
            &format!(
                "(() => {{ const r = [...document.querySelectorAll('#batches tr[data-batch-id]')] \
                     .find((r) => r.dataset.batchId !== {} && r.dataset.batchId !== {}); \
                   return r && r.dataset.status === 'completed' && r.dataset.done === '3' && r.dataset.batchId; }})()",
                js(&batch_id),
                js(signal_batch.as_str().expect("text"))
            ),
            PATIENCE,
        )
        .await;
    let d = over_http
        .batches()
        .describe(reset_row.as_str().expect("text"))
        .await
        .expect("describe the reset batch");
    assert!(
        matches!(
            d.action,
            BatchAction::Reset {
                to: wf_sdk::client::ResetPoint::FirstTask,
                drop_messages: true
            }
        ),
        "{:?}",
        d.action
    );
    assert_eq!(
        (d.filter.status, d.done, d.failed, d.reason.as_str()),
        (Some(RunStatus::Terminated), 3, 0, "INC-9: cups are back")
    );
    for i in 1..=3 {
        let run = over_http
            .describe(&format!("bulk-{i}"))
            .await
            .expect("describe");
        let origin = run.repaired_from.expect("the new run names the reset");
        assert_eq!(
            (run.status, origin.kind, origin.at_event),
            (RunStatus::Running, RepairKind::Reset, 1),
            "bulk-{i}"
        );
    }

    finish(page, chromium, server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batches_page_cancels_a_batch_and_the_schedules_page_pauses_a_schedule() {
    let Some(binary) = chromium_or_skip(
        "the_batches_page_cancels_a_batch_and_the_schedules_page_pauses_a_schedule",
    ) else {
        return;
    };
    // An engine that runs no workers: nothing carries the batch out, so it is still running
    // when the page cancels it, and the schedule never fires.
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<OrderFlow>()
        .workflow::<Notify>()
        .client_only()
        .build()
        .await
        .expect("engine");
    let server = wf_http::serve(
        &engine,
        "127.0.0.1:0",
        wf_http::ServeOptions::default().token(TOKEN),
    )
    .await
    .expect("serve");
    let base = format!("http://{}", server.local_addr());
    let client = engine.client();
    for i in 1..=2 {
        let order = Order {
            item: "mug".into(),
            qty: i,
        };
        client
            .start::<OrderFlow>(&format!("held-{i}"), order)
            .await
            .expect("start");
    }
    let action = ScheduleAction::start::<OrderFlow>(
        "weekly-order",
        &Order {
            item: "tea".into(),
            qty: 3,
        },
    )
    .expect("a schedule action");
    client
        .schedules()
        .create(
            "weekly",
            ScheduleSpec::every(Duration::from_secs(7 * 86_400)),
            action,
            SchedulePolicies::default(),
        )
        .await
        .expect("create a schedule");
    let over_http = remote(&base).await;

    let chromium = Browser::launch(&binary);
    let mut page = Page::open(&chromium.ws_url).await;
    page.navigate(&format!("{base}/ui/#/batches")).await;
    give_token(&mut page, TOKEN, None).await;
    page.wait_for(
        "the batches page",
        "!!document.querySelector('#batch-form')",
        PATIENCE,
    )
    .await;
    // A filter on a search attribute no run has selects none; dismissing the dialog starts
    // nothing.
    let count = start_batch_form(&mut page, "cancel", "region=eu, tier=int:2").await;
    assert_eq!(count, "0");
    let filter = page
        .eval("document.querySelector('#confirm .confirm-text').textContent")
        .await;
    assert!(
        filter
            .as_str()
            .unwrap_or("")
            .contains("status running · region = \"eu\" · tier = 2"),
        "{filter}"
    );
    page.eval("document.querySelector('#confirm-cancel').click(); true")
        .await;
    page.wait_for(
        "the dialog to close",
        "!document.querySelector('#confirm')",
        PATIENCE,
    )
    .await;
    assert!(
        over_http.batches().list().await.expect("list").is_empty(),
        "a dismissed dialog starts no batch"
    );
    let count = start_batch_form(&mut page, "cancel", "").await;
    assert_eq!(count, "2");
    confirm(&mut page, None).await;
    let batch_id = page
        .wait_for(
            "the batch, running, with its cancel button",
            "(() => { const r = document.querySelector('#batches tr[data-status=running]'); \
               return r && r.querySelector('[data-cancel-batch]') && r.dataset.batchId; })()",
            PATIENCE,
        )
        .await;
    let batch_id = batch_id.as_str().expect("text").to_string();
    page.eval("document.querySelector('[data-cancel-batch]').click(); true")
        .await;
    confirm(&mut page, None).await;
    let outcome = page
        .wait_for(
            "the batch to show as cancelled",
            "document.querySelector('#batches tr[data-status=cancelled]') && \
             document.querySelector('#batch-outcome.ok')?.textContent",
            PATIENCE,
        )
        .await;
    assert!(
        outcome
            .as_str()
            .unwrap_or("")
            .contains("cancelled after 0 of 2"),
        "{outcome}"
    );
    let d = over_http
        .batches()
        .describe(&batch_id)
        .await
        .expect("describe the batch");
    assert_eq!((d.status, d.done), (BatchStatus::Cancelled, 0));
    page.screenshot("13-batch-cancelled").await;

    // The schedules page, from the navigation: the schedule listed, then paused with a note.
    page.eval("document.querySelector('#nav-schedules').click(); true")
        .await;
    let row = page
        .wait_for(
            "the schedule listed",
            "document.querySelector('#schedules tr[data-schedule-id=weekly]')?.textContent",
            PATIENCE,
        )
        .await;
    let row = row.as_str().unwrap_or("");
    assert!(
        row.contains("every 7 d") && row.contains("order") && row.contains("weekly-order-…"),
        "{row}"
    );
    page.eval("document.querySelector('tr[data-schedule-id=weekly] [data-schedule-action=pause]').click(); true")
        .await;
    confirm(&mut page, Some("INC-11: supplier closed")).await;
    page.wait_for(
        "the schedule to show as paused",
        "document.querySelector('tr[data-schedule-id=weekly][data-paused=true] .note')?.textContent === 'INC-11: supplier closed'",
        PATIENCE,
    )
    .await;
    let s = over_http
        .schedules()
        .handle("weekly")
        .describe()
        .await
        .expect("describe the schedule");
    assert!(
        s.paused && s.note == "INC-11: supplier closed",
        "{:?}",
        (s.paused, &s.note)
    );
    page.screenshot("14-schedule-paused").await;

    finish(page, chromium, server).await;
    engine.shutdown().await;
}
