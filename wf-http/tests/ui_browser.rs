//! The web view in a real browser: headless Chromium driven over the DevTools protocol opens
//! the runs list (giving the token the page asks for), opens a run, runs a query, sends a
//! signal through the form and sees its event in the timeline, and queries the finished run.
//! A second test gives the page tokens of each role in turn: a read token sees no signal,
//! update, cancel or terminate control but runs queries; a write token gets the forms and
//! cancel; an admin token terminates the run. Screenshots go to `target/ui-screenshots/`.
//! Without Chromium the tests skip loudly, unless `WF_REQUIRE_CHROMIUM=1`.

mod browser;

use browser::{chromium_or_skip, Browser, Page};
use serde_json::Value;
use std::time::Duration;
use wf_sdk::prelude::*;

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

/// Checks that the page reported no script error or CSP violation, and stops everything.
async fn finish(page: Page, chromium: Browser, server: wf_http::Server) {
    let problems = page.problems();
    assert!(problems.is_empty(), "the page reported: {problems:#?}");
    drop(page);
    drop(chromium);
    server.shutdown().await.expect("shutdown");
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
    return ['#signal-form', '#update-form', '#cancel-run', '#terminate-run', '#role-note'] \
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
        "a read token gets no control"
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

    // A write token: the forms and cancel, not terminate.
    assert_eq!(
        controls_with(&mut page, WRITE_TOKEN).await,
        ["#signal-form", "#update-form", "#cancel-run", "#role-note"]
    );

    // An admin token: terminate too, which takes a second click.
    assert_eq!(
        controls_with(&mut page, TOKEN).await,
        [
            "#signal-form",
            "#update-form",
            "#cancel-run",
            "#terminate-run"
        ]
    );
    page.eval("document.querySelector('#terminate-run').click(); true")
        .await;
    let armed = page
        .eval("document.querySelector('#terminate-run').textContent")
        .await;
    assert_eq!(armed, "Click again to terminate");
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
    page.eval("document.querySelector('#terminate-run').click(); true")
        .await;
    page.wait_for(
        "the run to show as terminated",
        "document.querySelector('#run-status')?.textContent === 'terminated'",
        PATIENCE,
    )
    .await;
    assert_eq!(status().await, RunStatus::Terminated);
    let hidden = page.eval(CONTROLS).await;
    assert_eq!(
        strings(&hidden),
        Vec::<&str>::new(),
        "a closed run offers no control"
    );
    page.screenshot("8-terminated").await;

    finish(page, chromium, server).await;
}
