//! Schedules: the engine's scheduler keeps its state here, changed by optimistic versioned
//! updates.

use super::tx::Tx;
use crate::data::payload::Payload;
use crate::error::StoreError;
use crate::store::records::ScheduleRow;

/// [`StoreAdmin::create_schedule`](crate::store::StoreAdmin::create_schedule).
pub(crate) async fn create_schedule<X: Tx>(tx: &mut X, row: ScheduleRow) -> Result<(), StoreError> {
    if !tx.insert_schedule(&row).await? {
        return Err(StoreError::ScheduleExists(row.schedule_id));
    }
    Ok(())
}

/// [`StoreAdmin::update_schedule`](crate::store::StoreAdmin::update_schedule).
pub(crate) async fn update_schedule<X: Tx>(
    tx: &mut X,
    schedule_id: String,
    expected_version: u64,
    data: Payload,
    next_check_ms: Option<i64>,
) -> Result<bool, StoreError> {
    let row = ScheduleRow {
        schedule_id,
        data,
        version: expected_version,
        next_check_ms,
    };
    tx.update_schedule(&row).await
}
