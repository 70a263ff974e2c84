//! The `search_attributes` and `memos` tables of the SQLite store.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::data::payload::Payload;
use crate::data::search::{SearchAttributes, SearchValue};
use crate::store::rules::tx::SearchTable;
use rusqlite::{params, OptionalExtension};

/// The search part of a list filter: a JSON array of `[key, kind, canonical value]`, or
/// `None` when it has none.
pub(super) fn search_filter(search: &[(String, SearchValue)]) -> Option<String> {
    if search.is_empty() {
        return None;
    }
    let rows: Vec<serde_json::Value> = search
        .iter()
        .map(|(key, value)| serde_json::json!([key, value.kind(), value.canonical()]))
        .collect();
    Some(serde_json::Value::Array(rows).to_string())
}

impl SearchTable for SqliteTx {
    async fn put_search_attributes(
        &mut self,
        run_id: &str,
        attributes: &SearchAttributes,
    ) -> Result<()> {
        let what = "record search attributes";
        let mut statement = self
            .conn
            .prepare_cached(
                "INSERT OR REPLACE INTO search_attributes (run_id, key, kind, value) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(db(what))?;
        for (key, value) in attributes {
            statement
                .execute(params![run_id, key, value.kind(), value.canonical()])
                .map_err(db(what))?;
        }
        Ok(())
    }

    async fn search_attributes(&mut self, run_id: &str) -> Result<SearchAttributes> {
        let rows: Vec<(String, String, String)> = self
            .conn
            .prepare_cached(
                "SELECT key, kind, value FROM search_attributes WHERE run_id = ?1 ORDER BY key",
            )
            .and_then(|mut s| {
                s.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(db("read search attributes"))?;
        Ok(rows
            .into_iter()
            .filter_map(|(key, kind, text)| Some((key, SearchValue::from_stored(&kind, &text)?)))
            .collect())
    }

    async fn put_memo(&mut self, run_id: &str, memo: &Payload) -> Result<()> {
        self.conn
            .prepare_cached("INSERT OR REPLACE INTO memos (run_id, data) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![run_id, memo.as_bytes()]))
            .map_err(db("record a memo"))?;
        Ok(())
    }

    async fn memo(&mut self, run_id: &str) -> Result<Option<Payload>> {
        let data: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT data FROM memos WHERE run_id = ?1")
            .and_then(|mut s| s.query_row([run_id], |r| r.get(0)).optional())
            .map_err(db("read a memo"))?;
        Ok(data.map(Payload::unchecked))
    }

    async fn delete_runs_search(&mut self, run_ids: &[String]) -> Result<()> {
        let what = "delete purged runs' search attributes and memos";
        self.for_each_id(
            "DELETE FROM search_attributes WHERE run_id = ?1",
            run_ids,
            what,
        )?;
        self.for_each_id("DELETE FROM memos WHERE run_id = ?1", run_ids, what)
    }
}
