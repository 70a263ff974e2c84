//! Debounced starts (`StartOptions::debounce`): the run of a workflow type and debounce key
//! that waits for its first workflow task takes a later start with the key, which replaces its
//! input and pushes its start; a run that has begun takes none, and the next start makes a new
//! one. Decided in the start's transaction (PostgreSQL first locks the type and key), so that
//! two engines starting at once make one run.

use super::encode_failed;
use super::tx::{RunRow, Tx};
use crate::data::codec::{decode_event, encode_event};
use crate::data::history::EventKind;
use crate::data::payload::Payload;
use crate::data::run::RunStatus;
use crate::error::StoreError;
use crate::store::records::{RunRecord, StartDebounce};

/// The run of `workflow_type` with debounce key `key` that has not begun, if one waits.
pub(crate) async fn waiting_run<X: Tx>(
    tx: &mut X,
    workflow_type: &str,
    key: &str,
) -> Result<Option<RunRecord>, StoreError> {
    let Some(run_id) = tx.debounced_run(workflow_type, key).await? else {
        return Ok(None);
    };
    let Some(row) = tx.load_run(&run_id).await? else {
        return Ok(None);
    };
    Ok(not_begun(&row).then_some(row.record))
}

/// Whether a run has not begun: running, no engine holds (or held and lost) its workflow task,
/// and none committed one (the summary is the first commit's).
fn not_begun(row: &RunRow) -> bool {
    row.record.status == RunStatus::Running
        && row.lease_owner.is_none()
        && row.record.summary.is_empty()
        && row.record.next_event_id == 2
}

/// A later start joins the waiting `run`: its input replaces the run's, and the run starts
/// `window` from now, no later than `max_wait` after its first start. Updates `run` to match.
pub(crate) async fn push<X: Tx>(
    tx: &mut X,
    run: &mut RunRecord,
    input: &Payload,
    debounce: &StartDebounce,
    now_ms: i64,
) -> Result<(), StoreError> {
    let corrupt = |why: String| StoreError::corrupt(format!("run {}: {why}", run.run_id));
    let old = tx
        .event_row(&run.run_id, 1)
        .await?
        .ok_or_else(|| corrupt("its first event is missing".into()))?;
    let mut first = decode_event(1, &old).map_err(|e| corrupt(e.to_string()))?;
    match &mut first.kind {
        EventKind::WorkflowStarted { input: kept, .. } => *kept = input.clone(),
        other => {
            return Err(corrupt(format!(
                "its history starts with {} instead of WorkflowStarted",
                other.name()
            )))
        }
    }
    let data = encode_event(first.time_ms, &first.kind).map_err(encode_failed)?;
    let history_bytes = (run.history_bytes + data.len() as u64).saturating_sub(old.len() as u64);
    tx.replace_started(&run.run_id, &data, history_bytes)
        .await?;
    let mut at = now_ms.saturating_add(debounce.window_ms);
    if let Some(max) = debounce.max_wait_ms {
        at = at.min(run.created_ms.saturating_add(max)).max(now_ms);
    }
    tx.delay_start(&run.run_id, at).await?;
    run.history_bytes = history_bytes;
    run.start_at_ms = Some(at);
    Ok(())
}
