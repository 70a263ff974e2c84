//! Engines and their liveness leases: registration when an engine starts, renewal in the
//! background, removal on a clean shutdown. The leases themselves are checked by the
//! primitives that hand out work (see [`Tx`](super::tx::Tx)).

use super::tx::EngineTable;
use crate::error::StoreError;
use crate::store::records::EngineRecord;

/// [`StoreAdmin::live_engines`](crate::store::StoreAdmin::live_engines): the engines whose liveness lease
/// has not expired at `now_ms`.
pub(crate) async fn live_engines<X: EngineTable>(
    tx: &mut X,
    now_ms: i64,
) -> Result<Vec<EngineRecord>, StoreError> {
    let mut engines = tx.engines().await?;
    engines.retain(|e| e.lease_until_ms > now_ms);
    Ok(engines)
}
