//! Search attributes and memos: a commit indexes the values its `SearchAttributesUpserted`
//! events set, a start records the memo, a continue-as-new carries both to the new run, and
//! lists and describe read them back.

use super::tx::Tx;
use crate::data::history::EventKind;
use crate::data::search::{decode_memo, encode_memo, Memo};
use crate::error::StoreError;
use crate::store::records::RunSearch;

/// Indexes the search attributes a commit's events set, in event order.
pub(crate) async fn index_upserts<'a, X: Tx>(
    tx: &mut X,
    run_id: &str,
    events: impl Iterator<Item = &'a EventKind>,
) -> Result<(), StoreError> {
    for kind in events {
        if let EventKind::SearchAttributesUpserted { attributes } = kind {
            tx.put_search_attributes(run_id, attributes).await?;
        }
    }
    Ok(())
}

/// Records a new run's memo, if it has one.
pub(crate) async fn record_memo<X: Tx>(
    tx: &mut X,
    run_id: &str,
    memo: &Memo,
) -> Result<(), StoreError> {
    if !memo.is_empty() {
        tx.put_memo(run_id, &encode_memo(memo)).await?;
    }
    Ok(())
}

/// A continue-as-new: the new run starts with the previous run's search attributes, and
/// with its memo unless the new run brought its own.
pub(crate) async fn carry_over<X: Tx>(
    tx: &mut X,
    from_run_id: &str,
    to_run_id: &str,
    own_memo: bool,
) -> Result<(), StoreError> {
    let attributes = tx.search_attributes(from_run_id).await?;
    if !attributes.is_empty() {
        tx.put_search_attributes(to_run_id, &attributes).await?;
    }
    if !own_memo {
        if let Some(memo) = tx.memo(from_run_id).await? {
            tx.put_memo(to_run_id, &memo).await?;
        }
    }
    Ok(())
}

/// [`StoreAdmin::run_search`](crate::store::StoreAdmin::run_search).
pub(crate) async fn run_search<X: Tx>(
    tx: &mut X,
    run_ids: Vec<String>,
) -> Result<Vec<RunSearch>, StoreError> {
    let mut out = Vec::with_capacity(run_ids.len());
    for run_id in &run_ids {
        let attributes = tx.search_attributes(run_id).await?;
        let memo = match tx.memo(run_id).await? {
            Some(stored) => decode_memo(&stored)
                .map_err(|e| StoreError::corrupt(format!("run {run_id}: its memo: {e}")))?,
            None => Memo::new(),
        };
        out.push(RunSearch { attributes, memo });
    }
    Ok(out)
}
