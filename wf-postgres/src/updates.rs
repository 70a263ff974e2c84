//! The `updates` and `signal_ids` tables of the PostgreSQL store.

use crate::rows::{from_blob, get, to_blob};
use crate::tx::{owned, PostgresTx, Result};
use wf_core::store::{UpdateRecord, UpdateRow, UpdateState, UpdateTable};

impl UpdateTable for PostgresTx {
    async fn insert_signal_id(&mut self, chain_id: &str, signal_id: &str) -> Result<bool> {
        let inserted = self
            .execute(
                "INSERT INTO signal_ids (chain_id, signal_id) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING",
                &[&chain_id, &signal_id],
                "record a signal id",
            )
            .await?;
        Ok(inserted > 0)
    }

    async fn has_signal_id(&mut self, chain_id: &str, signal_id: &str) -> Result<bool> {
        let row = self
            .query_opt(
                "SELECT 1 FROM signal_ids WHERE chain_id = $1 AND signal_id = $2",
                &[&chain_id, &signal_id],
                "read a signal id",
            )
            .await?;
        Ok(row.is_some())
    }

    async fn get_update(&mut self, chain_id: &str, id: &str) -> Result<Option<UpdateRecord>> {
        let row = self
            .query_opt(
                "SELECT run_id, name, state FROM updates WHERE chain_id = $1 AND update_id = $2",
                &[&chain_id, &id],
                "read an update",
            )
            .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(UpdateRecord {
            update_id: id.to_string(),
            run_id: get(&r, 0)?,
            name: get(&r, 1)?,
            state: from_blob("update state", get::<&[u8]>(&r, 2)?)?,
        }))
    }

    async fn put_update(&mut self, row: &UpdateRow<'_>) -> Result<()> {
        let blob = to_blob("update state", row.state)?;
        self.later(
            "INSERT INTO updates (chain_id, update_id, run_id, name, state, final) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (chain_id, update_id) \
             DO UPDATE SET name = excluded.name, state = excluded.state, final = excluded.final",
            owned![
                row.chain_id.to_string(),
                row.update_id.to_string(),
                row.run_id.to_string(),
                row.name.to_string(),
                blob,
                row.state.is_final(),
            ],
            "record an update state",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn abandon_updates(&mut self, run_id: &str) -> Result<()> {
        let abandoned = to_blob("update state", &UpdateState::Abandoned)?;
        self.later(
            "UPDATE updates SET state = $2, final = TRUE WHERE run_id = $1 AND NOT final",
            owned![run_id.to_string(), abandoned],
            "abandon the updates of a closed run",
        )
        .await?;
        Ok(())
    }

    async fn pending_updates(&mut self, run_id: &str) -> Result<Vec<UpdateRecord>> {
        let rows = self
            .query(
                "SELECT update_id, name, state FROM updates WHERE run_id = $1 AND NOT final \
                 ORDER BY seq",
                &[&run_id],
                "read pending updates",
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(UpdateRecord {
                    update_id: get(r, 0)?,
                    run_id: run_id.to_string(),
                    name: get(r, 1)?,
                    state: from_blob("update state", get::<&[u8]>(r, 2)?)?,
                })
            })
            .collect()
    }
}
