//! Durable timers: firing the due ones into their runs' inboxes; a run's limit timer closes
//! the run as timed out instead (`run_limits.rs`).

use super::run_limits::LIMIT_TIMER_SEQ;
use super::tx::Tx;
use crate::data::message::Message;
use crate::error::StoreError;
use crate::store::records::FiredTimer;

/// [`Store::fire_due_timers`](crate::store::Store::fire_due_timers).
pub(crate) async fn fire_due_timers<X: Tx>(
    tx: &mut X,
    now_ms: i64,
    max: usize,
) -> Result<Vec<FiredTimer>, StoreError> {
    let due = tx.due_timers(now_ms, max).await?;
    for (run_id, seq) in &due {
        tx.delete_timer(run_id, *seq).await?;
        if *seq == LIMIT_TIMER_SEQ {
            super::run_limits::time_out(tx, run_id, now_ms).await?;
            continue;
        }
        tx.push_inbox(run_id, Message::TimerFired { seq: *seq })
            .await?;
        tx.set_ready(run_id, now_ms).await?;
    }
    Ok(due
        .into_iter()
        .map(|(run_id, seq)| FiredTimer { run_id, seq })
        .collect())
}
