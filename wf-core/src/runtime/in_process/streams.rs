//! Reading a run's stream from the store, waiting for its next entries, and a workflow id's
//! published events, waiting for one to be set: a commit that writes
//! stream entries (or closes the run) wakes the workflow id's waiters, here and, through
//! pokes or PostgreSQL's `NOTIFY`, in other processes; the poll interval is the safety net.

use super::reads::until_changed;
use super::Core;
use crate::client::{StreamRead, STREAM_PAGE};
use crate::data::limits::Ident;
use crate::data::payload::Payload;
use crate::data::stream::{StreamList, StreamPage};
use crate::error::WfError;
use std::time::Duration;

/// Most entries one read answers, whatever it asks.
const MAX_READ: usize = 4 * STREAM_PAGE;

async fn read_once(core: &Core, read: &StreamRead) -> Result<StreamPage, WfError> {
    let max = read.max.clamp(1, MAX_READ);
    core.store
        .read_stream(
            &read.workflow_id,
            read.run_id.as_deref(),
            &read.stream,
            read.from,
            max,
        )
        .await?
        .ok_or_else(|| WfError::NotFound {
            workflow_id: read.workflow_id.clone(),
            update_id: None,
        })
}

/// [`Transport::read_stream`](crate::client::Transport::read_stream) in process: one read,
/// and with `wait`, when it found nothing new on a running run, one more after a change.
pub(super) async fn read_stream(core: &Core, read: StreamRead) -> Result<StreamPage, WfError> {
    Ident::StreamName.check(&read.stream)?;
    if let Some(run_id) = &read.run_id {
        Ident::RunId.check(run_id)?;
    }
    let notify = core.wake.waiters.subscribe(&read.workflow_id);
    let notified = notify.notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    let page = read_once(core, &read).await?;
    if !read.wait || !page.entries.is_empty() || page.run_closed {
        return Ok(page);
    }
    until_changed(core, notified).await?;
    // The run read first stays the one read.
    let read = StreamRead {
        run_id: Some(page.run_id),
        ..read
    };
    read_once(core, &read).await
}

/// [`Transport::list_streams`](crate::client::Transport::list_streams) in process: one read.
pub(super) async fn list_streams(
    core: &Core,
    workflow_id: &str,
    run_id: Option<&str>,
) -> Result<StreamList, WfError> {
    if let Some(run_id) = run_id {
        Ident::RunId.check(run_id)?;
    }
    core.store
        .list_streams(workflow_id, run_id)
        .await?
        .ok_or_else(|| WfError::NotFound {
            workflow_id: workflow_id.to_string(),
            update_id: None,
        })
}

/// [`Transport::get_event`](crate::client::Transport::get_event) in process: reads until a
/// value is there or `timeout` passed, looking again at each change of the workflow id.
pub(super) async fn get_event(
    core: &Core,
    workflow_id: &str,
    key: &str,
    timeout: Duration,
) -> Result<Option<Payload>, WfError> {
    Ident::EventKey.check(key)?;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let notify = core.wake.waiters.subscribe(workflow_id);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(value) = core.store.read_event(workflow_id, key).await? {
            return Ok(Some(value));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        match tokio::time::timeout_at(deadline, until_changed(core, notified)).await {
            Ok(changed) => changed?,
            // One last look: a value set as the time ran out still counts.
            Err(_) => return Ok(core.store.read_event(workflow_id, key).await?),
        }
    }
}
