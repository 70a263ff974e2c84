//! The web view's blocked-on panel and "state here", in a real browser (headless Chromium over
//! the DevTools protocol): the run page names the `wait_condition` line a run is blocked on,
//! and "state here" on the second `bump` signal's event answers the `count` query as of it.
//! Without Chromium the test skips loudly, unless `WF_REQUIRE_CHROMIUM=1`.

mod browser;

use browser::{chromium_or_skip, finish, Browser, Page};
use std::time::Duration;
use wf_sdk::history::EventKind;
use wf_sdk::prelude::*;
use wf_testkit::gate::{Gate, GateClient};

/// How long the page may take to show something: a failure detector on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_page_shows_what_blocks_it_and_the_state_at_an_event() {
    let Some(binary) =
        chromium_or_skip("the_run_page_shows_what_blocks_it_and_the_state_at_an_event")
    else {
        return;
    };
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Gate>()
        .build()
        .await
        .expect("engine");
    let server = wf_http::serve(&engine, "127.0.0.1:0", wf_http::ServeOptions::default())
        .await
        .expect("serve");
    let base = format!("http://{}", server.local_addr());
    let h = engine.client().start::<Gate>("g-ui", ()).await.unwrap();
    for _ in 0..3 {
        h.bump().await.unwrap();
    }
    let (file, line) = h.wait_at().await.unwrap();
    let second = h
        .history()
        .await
        .unwrap()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::SignalReceived { name, .. } if name == "bump"))
        .nth(1)
        .map(|e| e.event_id)
        .expect("a second bump");

    let chromium = Browser::launch(&binary);
    let mut page = Page::open(&chromium.ws_url).await;
    page.navigate(&format!("{base}/ui/#/run/gate/g-ui")).await;
    let shown = page
        .wait_for(
            "the blocked-on panel",
            "document.querySelector('#blocked [data-part=run] [data-wait-kind=condition] code.location')?.textContent",
            PATIENCE,
        )
        .await;
    let shown = shown.as_str().expect("text").to_string();
    assert!(shown.starts_with(&format!("{file}:{line}:")), "{shown}");
    page.screenshot("blocked-on").await;

    page.eval(&format!(
        "document.querySelector('[data-state-here=\"{second}\"]').click(); true"
    ))
    .await;
    let answer = page
        .wait_for(
            "the count as of the second bump",
            "document.querySelector('#at-event').value !== '' && \
             document.querySelector('[data-query-result=count] pre')?.textContent",
            PATIENCE,
        )
        .await;
    assert_eq!(answer.as_str(), Some("2"), "{answer}");
    assert_eq!(h.count().await.unwrap(), 3, "the run itself is unchanged");
    page.screenshot("state-here").await;

    finish(page, chromium, server).await;
}
