//! Reading the feed of what runs do from the store, waiting for new events: every commit that
//! adds to the feed wakes its readers (`Wakeups::feed_changed`), here and, through pokes or
//! PostgreSQL's `NOTIFY`, in other processes; the poll interval is the safety net.

use super::reads::until_changed;
use super::Core;
use crate::data::feed::{FeedPage, FeedRead};
use crate::error::WfError;
use crate::runtime::wakeups::FEED_WAITERS;
use std::time::Duration;

/// How soon a read that found rows held back (see [`FeedPage::held_back`]) looks again, at
/// first and at most.
const HELD_BACK_FIRST: Duration = Duration::from_millis(5);
const HELD_BACK_MAX: Duration = Duration::from_millis(500);

/// [`Transport::read_feed`](crate::client::Transport::read_feed) in process: reads on past
/// rows the filter skips, and with `wait`, when nothing is new, once more after a change.
pub(super) async fn read_feed(core: &Core, read: FeedRead) -> Result<FeedPage, WfError> {
    let FeedRead {
        filter,
        mut after,
        max,
        wait,
    } = read;
    let mut waited = false;
    let mut held = HELD_BACK_FIRST;
    loop {
        let notify = core.wake.waiters.subscribe(FEED_WAITERS);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let page = core.store.read_feed(&filter, after, max).await?;
        if !page.events.is_empty() || !wait || waited {
            return Ok(page);
        }
        if page.next != after {
            // Rows the filter skipped (or `now` resolved): read on at once.
            after = page.next;
            continue;
        }
        if page.held_back {
            // Committed rows wait for an older transaction, which may wake no one when it
            // ends: look again soon, less often the longer it lasts.
            let pause = held.min(core.config.poll_interval);
            let _ = tokio::time::timeout(pause, until_changed(core, notified)).await;
            held = (held * 2).min(HELD_BACK_MAX);
            continue;
        }
        until_changed(core, notified).await?;
        waited = true;
    }
}
