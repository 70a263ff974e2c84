//! The `updates` and `signal_ids` tables of the SQLite store.

use super::rows::{db, from_blob, to_blob};
use super::tx::{Result, SqliteTx};
use crate::data::update::{UpdateRecord, UpdateState};
use crate::store::rules::tx::{UpdateRow, UpdateTable};
use rusqlite::{params, OptionalExtension};

impl UpdateTable for SqliteTx {
    async fn insert_signal_id(&mut self, chain_id: &str, signal_id: &str) -> Result<bool> {
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT OR IGNORE INTO signal_ids (chain_id, signal_id) VALUES (?1, ?2)",
            )
            .and_then(|mut s| s.execute([chain_id, signal_id]))
            .map_err(db("record a signal id"))?;
        Ok(inserted > 0)
    }

    async fn has_signal_id(&mut self, chain_id: &str, signal_id: &str) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM signal_ids WHERE chain_id = ?1 AND signal_id = ?2")
            .and_then(|mut s| s.exists([chain_id, signal_id]))
            .map_err(db("read a signal id"))
    }

    async fn get_update(&mut self, chain_id: &str, id: &str) -> Result<Option<UpdateRecord>> {
        let row: Option<(String, String, Vec<u8>)> = self
            .conn
            .prepare_cached(
                "SELECT run_id, name, state FROM updates WHERE chain_id = ?1 AND update_id = ?2",
            )
            .and_then(|mut s| {
                s.query_row([chain_id, id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()
            })
            .map_err(db("read an update"))?;
        let decode = |(run_id, name, state): (String, String, Vec<u8>)| {
            let state = from_blob("update state", &state)?;
            let update_id = id.to_string();
            Ok(UpdateRecord {
                update_id,
                run_id,
                name,
                state,
            })
        };
        row.map(decode).transpose()
    }

    async fn put_update(&mut self, row: &UpdateRow<'_>) -> Result<()> {
        let blob = to_blob("update state", row.state)?;
        self.conn
            .prepare_cached(
                "INSERT INTO updates (chain_id, update_id, run_id, name, state, final) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (chain_id, update_id) \
                 DO UPDATE SET name = excluded.name, state = excluded.state, final = excluded.final",
            )
            .and_then(|mut s| {
                let is_final = row.state.is_final();
                s.execute(params![
                    row.chain_id,
                    row.update_id,
                    row.run_id,
                    row.name,
                    blob,
                    is_final
                ])
            })
            .map_err(db("record an update state"))?;
        Ok(())
    }

    async fn abandon_updates(&mut self, run_id: &str) -> Result<()> {
        let abandoned = to_blob("update state", &UpdateState::Abandoned)?;
        self.conn
            .prepare_cached(
                "UPDATE updates SET state = ?2, final = 1 WHERE run_id = ?1 AND final = 0",
            )
            .and_then(|mut s| s.execute(params![run_id, abandoned]))
            .map_err(db("abandon the updates of a closed run"))?;
        Ok(())
    }

    async fn pending_updates(&mut self, run_id: &str) -> Result<Vec<UpdateRecord>> {
        let rows: Vec<(String, String, Vec<u8>)> = self
            .conn
            .prepare_cached(
                "SELECT update_id, name, state FROM updates WHERE run_id = ?1 AND final = 0 \
                 ORDER BY rowid",
            )
            .and_then(|mut s| {
                s.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(db("read pending updates"))?;
        let decode = |(update_id, name, state): (String, String, Vec<u8>)| {
            let state = from_blob("update state", &state)?;
            let run_id = run_id.to_string();
            Ok(UpdateRecord {
                update_id,
                run_id,
                name,
                state,
            })
        };
        rows.into_iter().map(decode).collect()
    }
}
