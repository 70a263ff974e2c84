//! What callers read: runs, histories (decoded here, once, from the stored rows), updates.

use super::deliver::find_run;
use super::tx::Tx;
use crate::data::codec::{count_events, decode_events_into};
use crate::data::history::HistoryEvent;
use crate::data::update::UpdateRecord;
use crate::error::StoreError;
use crate::store::records::{PendingMessages, RunRecord};

/// [`Store::get_run`](crate::store::Store::get_run).
pub(crate) async fn get_run<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    run_id: Option<String>,
) -> Result<Option<RunRecord>, StoreError> {
    let run = find_run(tx, &workflow_id, run_id.as_deref()).await?;
    Ok(run.map(|r| r.record))
}

/// [`Store::read_history`](crate::store::Store::read_history): a row may hold several events,
/// so the first row read may start before `from_event_id`.
pub(crate) async fn read_history<X: Tx>(
    tx: &mut X,
    run_id: String,
    from_event_id: u64,
) -> Result<Vec<HistoryEvent>, StoreError> {
    let rows = tx.event_rows(&run_id, from_event_id).await?;
    let mut events = Vec::with_capacity(capacity_for(&rows));
    for (first_event_id, data) in rows {
        let start = events.len();
        decode_events_into(first_event_id, &data, &mut events)
            .map_err(|e| StoreError::corrupt(format!("run {run_id}: {e}")))?;
        // A row's ids ascend from its first: those before `from_event_id` lead it.
        let before = events[start..]
            .iter()
            .take_while(|e| e.event_id < from_event_id)
            .count();
        events.drain(start..start + before);
    }
    Ok(events)
}

/// The events `rows` should hold, to size the list once: the span of their first ids, plus the
/// events of the last row beyond its first (a list one event short doubles, which for a long
/// history is a fresh mapping of twice its size and a copy), but no more than one per 16 stored
/// bytes, so that damaged ids cannot ask for more memory than the events could take.
fn capacity_for(rows: &[(u64, Vec<u8>)]) -> usize {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return 0;
    };
    let bytes: usize = rows.iter().map(|(_, data)| data.len()).sum();
    let in_last = count_events(&last.1).unwrap_or(1);
    let span = last.0.saturating_sub(first.0);
    usize::try_from(span)
        .unwrap_or(usize::MAX)
        .saturating_add(in_last)
        .min(bytes / 16)
        .max(rows.len())
}

/// [`Store::pending_messages`](crate::store::Store::pending_messages): the inbox, then the
/// history if asked for, and the run's position, in the caller's one read transaction.
pub(crate) async fn pending_messages<X: Tx>(
    tx: &mut X,
    run_id: String,
    history_from: Option<u64>,
) -> Result<PendingMessages, StoreError> {
    let next_event_id = tx.load_run(&run_id).await?.map(|r| r.record.next_event_id);
    let inbox = tx.inbox(&run_id).await?;
    let history = match history_from {
        Some(from) => read_history(tx, run_id, from).await?,
        None => Vec::new(),
    };
    Ok(PendingMessages {
        inbox,
        history,
        next_event_id,
    })
}

/// [`Store::get_update`](crate::store::Store::get_update): updates are kept per chain, found
/// through the latest run.
pub(crate) async fn get_update<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    update_id: String,
) -> Result<Option<UpdateRecord>, StoreError> {
    match tx.latest_run(&workflow_id).await? {
        Some(run) => tx.get_update(&run.record.chain_id, &update_id).await,
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::codec::encode_event_into;
    use crate::data::history::EventKind;

    /// A record of `n` consecutive timer events, as a store keeps one commit.
    fn record(n: u32) -> Vec<u8> {
        let mut out = Vec::new();
        for seq in 0..n {
            encode_event_into(&mut out, 7, &EventKind::TimerFired { seq }).unwrap();
        }
        out
    }

    #[test]
    fn the_list_is_sized_for_every_event_of_the_last_row() {
        // Rows of 2, 1 and 5 events: ids 1-2, 3, 4-8.
        let rows = vec![(1, record(2)), (3, record(1)), (4, record(5))];
        assert_eq!(capacity_for(&rows), 8);
        assert_eq!(capacity_for(&rows[..1]), 2);
        assert_eq!(capacity_for(&[]), 0);
    }

    #[test]
    fn damaged_rows_cannot_ask_for_more_than_their_bytes() {
        let data = record(1);
        let most = data.len() * 2 / 16;
        assert_eq!(capacity_for(&[(1, data.clone()), (u64::MAX, data)]), most);
        // A last row whose events cannot be counted counts as one.
        let rows = vec![(1, record(3)), (4, vec![9; 40])];
        assert_eq!(capacity_for(&rows), 4);
    }
}
