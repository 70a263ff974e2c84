//! The web view follows a run's stream live, in a real browser (headless Chromium over the
//! DevTools protocol): the run page shows the entries written so far, then, still open and
//! never reloaded, the entries the run writes as signals arrive, and marks the stream closed;
//! a stream only an activity writes (not in history: the page finds it in the stream list)
//! shows too, and ends with the run.
//! Once with no token (the page reads the route with an EventSource) and once behind a token
//! (an EventSource cannot send one: the page reads the same route with a fetch). Entries are
//! shown as text: one that looks like markup stays text. Without Chromium the test skips
//! loudly, unless `WF_REQUIRE_CHROMIUM=1`.

mod browser;

use browser::{chromium_or_skip, finish, Browser, Page};
use serde_json::Value;
use std::time::Duration;
use wf_sdk::prelude::*;

/// How long the page may take to show something: a failure detector on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);
const TOKEN: &str = "ui-streams-token";

/// One entry of the `lines` stream.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Line {
    pub n: u32,
    pub text: String,
}

/// Writes its argument to the stream `notes` (left open: it ends with the run).
pub struct Noter;

#[activities]
impl Noter {
    #[activity]
    pub async fn note(&self, ctx: ActivityContext, text: String) -> Result<(), ActivityError> {
        ctx.stream("notes").write(&text).await?;
        Ok(())
    }
}

/// Has an activity note something, writes two lines, then one per `say` signal until a `say`
/// of "bye", then closes the stream.
#[derive(Default)]
pub struct Narrator;

#[workflow(name = "narrator")]
impl Narrator {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.activity(Noter::note, "from an activity".to_string())
            .await?;
        let lines = ctx.stream("lines");
        lines.write(&Line {
            n: 0,
            text: "<b>not bold</b>".into(),
        })?;
        lines.write(&Line {
            n: 1,
            text: "waiting".into(),
        })?;
        let mut n = 2;
        loop {
            let text = ctx.wait_for_signal::<String>("say").await?;
            let bye = text == "bye";
            ctx.stream("lines").write(&Line { n, text })?;
            n += 1;
            if bye {
                break;
            }
        }
        ctx.stream("lines").close()?;
        Ok(n)
    }
}

/// The offsets and texts the page shows for stream `lines`, as a JSON array of `[offset, text]`.
const SHOWN: &str =
    "JSON.stringify([...document.querySelectorAll('#streams [data-stream=lines] .stream-entry')]\
    .map((e) => [Number(e.dataset.offset), JSON.parse(e.querySelector('pre').textContent).text]))";

fn shown(v: &Value) -> Vec<(u64, String)> {
    serde_json::from_str(v.as_str().expect("a JSON string")).expect("the page's entries")
}

/// Waits until the page shows at least `n` entries of `lines`, and returns them.
async fn at_least(page: &mut Page, what: &str, n: usize) -> Vec<(u64, String)> {
    let expression = format!(
        "document.querySelectorAll('#streams [data-stream=lines] .stream-entry').length >= {n} && {SHOWN}"
    );
    shown(&page.wait_for(what, &expression, PATIENCE).await)
}

/// Waits until stream `stream`'s state on the page is `want` (failing early on `failed`).
async fn state_is(page: &mut Page, stream: &str, want: &str, what: &str) {
    let expression = format!(
        "((s) => (s === '{want}' || s === 'failed' ? s : null))(\
         document.querySelector('#streams [data-stream={stream}] .stream-state')?.dataset.streamState)"
    );
    let state = page.wait_for(what, &expression, PATIENCE).await;
    assert_eq!(state, Value::from(want), "{what}");
}

async fn watch_the_stream_grow(name: &str, token: Option<&str>) {
    let Some(binary) = chromium_or_skip(name) else {
        return;
    };
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Narrator>()
        .activities(Noter)
        .build()
        .await
        .expect("engine");
    let mut options = wf_http::ServeOptions::default();
    if let Some(t) = token {
        options = options.token(t);
    }
    let server = wf_http::serve(&engine, "127.0.0.1:0", options)
        .await
        .expect("serve");
    let base = format!("http://{}", server.local_addr());
    let h = engine.client().start::<Narrator>("n-ui", ()).await.unwrap();

    let chromium = Browser::launch(&binary);
    let mut page = Page::open(&chromium.ws_url).await;
    if let Some(t) = token {
        // The page keeps its token in sessionStorage: set it as the token form would.
        page.navigate(&format!("{base}/ui/")).await;
        page.wait_for("the page", "document.readyState === 'complete'", PATIENCE)
            .await;
        page.eval(&format!("sessionStorage.setItem('wf-token', {t:?}); true"))
            .await;
    }
    page.navigate(&format!("{base}/ui/#/run/narrator/n-ui"))
        .await;
    let first = at_least(&mut page, "the first two entries", 2).await;
    assert_eq!(
        first,
        vec![
            (0, "<b>not bold</b>".to_string()),
            (1, "waiting".to_string())
        ]
    );
    let no_markup = page
        .eval("document.querySelector('#streams b') === null")
        .await;
    assert_eq!(no_markup, Value::Bool(true), "an entry became markup");
    state_is(&mut page, "lines", "live", "the stream followed live").await;
    let notes = page
        .wait_for(
            "the activity's stream",
            "document.querySelector('#streams [data-stream=notes] .stream-entry pre')?.textContent",
            PATIENCE,
        )
        .await;
    assert_eq!(notes, Value::from("\"from an activity\""));
    // A mark on this document: gone if the page were reloaded.
    page.eval("window.wfStreamsMark = 'kept'; true").await;
    page.screenshot(&format!("{name}-first")).await;

    h.signal("say", &"one".to_string()).await.unwrap();
    h.signal("say", &"two".to_string()).await.unwrap();
    let more = at_least(&mut page, "the two entries the signals wrote", 4).await;
    assert_eq!(more[2..], [(2, "one".to_string()), (3, "two".to_string())]);

    h.signal("say", &"bye".to_string()).await.unwrap();
    state_is(&mut page, "lines", "closed", "the stream marked closed").await;
    state_is(
        &mut page,
        "notes",
        "ended",
        "the activity's stream ended with its run",
    )
    .await;
    assert_eq!(h.result().await.unwrap(), 5);
    let last = shown(&page.eval(SHOWN).await);
    let expected: Vec<(u64, String)> = ["<b>not bold</b>", "waiting", "one", "two", "bye"]
        .iter()
        .enumerate()
        .map(|(i, t)| (i as u64, t.to_string()))
        .collect();
    assert_eq!(last, expected, "every entry once, in order");
    assert_eq!(
        page.eval("window.wfStreamsMark").await,
        Value::from("kept"),
        "the page was reloaded"
    );
    page.screenshot(&format!("{name}-closed")).await;

    finish(page, chromium, server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_page_watches_a_stream_grow() {
    watch_the_stream_grow("the_run_page_watches_a_stream_grow", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_page_watches_a_stream_grow_behind_a_token() {
    watch_the_stream_grow(
        "the_run_page_watches_a_stream_grow_behind_a_token",
        Some(TOKEN),
    )
    .await;
}
